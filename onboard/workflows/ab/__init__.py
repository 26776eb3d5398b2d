"""`onboard ab SCRIPT`: run one script on two torches, A and B, and say what changed.

The loop a change is judged by: the same script before and after, each run a
fresh process, rounds alternating A B / B A after one warm-up run of each (so
a drift of the machine falls on both sides), as many rounds as it takes for
every verdict to be clear or until ``--budget`` is spent. The script's output
other than its ``name=value`` lines is compared first: a faster wrong answer is
not an improvement. Then for the wall time, the peak RSS and each number the
script printed: median A, median B, B/A with a 95% bootstrap interval, and a
verdict (``stats``). How noisy the machine was is measured and said, and so is
anything besides the code in which A and B differ (``startup``: the interpreter,
the environment, bytecode read from a cache on one side and compiled on every
run on the other), first, since such a difference is measured as a change.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard.errors import BadInput
from onboard.jsonable import spec
from onboard.proc import Leftover, left_note
from onboard.report import Reporter
from onboard.workflows.ab import runs, sides, startup, stats
from onboard.workspace import find as find_workspace

if TYPE_CHECKING:
    from onboard.workspace import Workspace

__all__ = ["ABRequest", "ABResult", "ab", "compare"]

DEFAULT_BUDGET = 120.0
MIN_ROUNDS = stats.MIN_RUNS  # each round is one run a side
MAX_ROUNDS = 200
NOISY = 0.05  # a side whose wall times spread more than this (robust CV) was noisy
_TIME_NAMES = re.compile(r"(^|_)(s|sec|secs|seconds|ms|us|ns|time|latency|duration)$")


def time_like(name: str) -> bool:
    """Lower is faster: the wall time and metrics named like a duration (forward_ms)."""
    return name == runs.WALL or bool(_TIME_NAMES.search(name.lower()))


@dataclass
class Metric:
    name: str
    # In JSON after the comparison's numbers (json_extra).
    a: list[float] = field(metadata=spec(omit=True))
    b: list[float] = field(metadata=spec(omit=True))
    result: stats.Comparison = field(metadata=spec(omit=True))

    def json_extra(self) -> dict[str, object]:
        r = self.result
        return {
            "median_a": r.median_a,
            "median_b": r.median_b,
            "ratio": r.ratio,
            "ci_low": r.low,
            "ci_high": r.high,
            "verdict": r.verdict,
            "clear": r.clear,
            "detail": r.detail,
            "a": self.a,
            "b": self.b,
        }


@dataclass
class ABResult:
    """JSON keys: ``ok`` (false when the outputs differ), ``script``, ``args``, ``a`` and
    ``b`` ({label, spec, python, what, overlaid_modules, notes}), ``rounds``,
    ``warmup`` (runs per side, not counted), ``budget_s``, ``outputs`` ({same,
    diff, note}), ``metrics`` [{name, median_a, median_b, ratio, ci_low, ci_high,
    verdict, clear, detail, a, b}], ``script_metrics`` (bool: the script printed
    name=value lines), ``noise`` ({spread_a, spread_b, load_before, load_after,
    cores, noisy, warning}), ``environment`` ({same, differences: [line], compiled_a,
    compiled_b: .py files each run compiled from source}), ``notes``, ``seconds``,
    ``left_running`` ({side: [{pid, command, found}]}: what the script's runs left running at
    exit, stopped)."""

    script: Path
    args: list[str]
    a: sides.Side
    b: sides.Side
    rounds: int = 0
    budget: float = field(default=DEFAULT_BUDGET, metadata=spec(key="budget_s"))
    metrics: list[Metric] = field(default_factory=list)
    # In JSON grouped as "outputs" and "environment" (json_extra).
    same_output: bool | None = field(default=None, metadata=spec(omit=True))
    output_diff: str = field(default="", metadata=spec(omit=True))
    output_note: str = field(default="", metadata=spec(omit=True))
    noise: dict[str, Any] = field(default_factory=dict)
    # besides the code (startup)
    differences: list[str] = field(default_factory=list, metadata=spec(omit=True))
    compiled: dict[str, list[int]] = field(default_factory=dict, metadata=spec(omit=True))
    notes: list[str] = field(default_factory=list)
    seconds: float = field(default=0.0, metadata=spec(digits=2))
    # side -> what the script's runs on it left running when they exited (stopped)
    left_running: dict[str, list[Leftover]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.same_output is not False

    @property
    def exit_code(self) -> int:
        """1 when the outputs differ: a faster wrong answer is no improvement."""
        return 0 if self.ok else 1

    def json_extra(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "warmup": 1,
            "outputs": {
                "same": self.same_output,
                "diff": self.output_diff,
                "note": self.output_note,
            },
            "script_metrics": any(m.name not in _OWN for m in self.metrics),
            "environment": {
                "same": not self.differences,
                "differences": self.differences,
                "compiled_a": self.compiled.get("A", []),
                "compiled_b": self.compiled.get("B", []),
            },
        }


_OWN = (runs.WALL, runs.PEAK_RSS, runs.CUDA_MEMORY)


def _outputs(done: list[runs.Run]) -> tuple[bool | None, str, str]:
    """(same, diff, note): the non-metric output of A's runs against B's."""
    by_side: dict[str, set[tuple[str, ...]]] = {"A": set(), "B": set()}
    for run in done:
        by_side[run.side].add(run.output)
    unstable = [s for s, outs in by_side.items() if len(outs) > 1]
    if unstable:
        return (
            None,
            "",
            f"The script's output changes from run to run on {' and '.join(unstable)} "
            "(timings or random numbers in it?), so A and B were not compared for correctness; "
            "print such numbers as name=value lines.",
        )
    out_a, out_b = next(iter(by_side["A"])), next(iter(by_side["B"]))
    if out_a == out_b:
        return True, "", ""
    diff = "\n".join(
        list(difflib.unified_diff(list(out_a), list(out_b), "A", "B", lineterm=""))[:40]
    )
    return False, diff, ""


def _metrics(
    done: list[runs.Run], resamples: int = stats.RESAMPLES, *, noisy: bool = False
) -> list[Metric]:
    names: list[str] = []
    for run in done:
        names += [n for n in run.metrics if n not in names]
    found = []
    for name in names:
        a = [r.metrics[name] for r in done if r.side == "A" and name in r.metrics]
        b = [r.metrics[name] for r in done if r.side == "B" and name in r.metrics]
        if a and b:
            result = stats.compare(
                a, b, time_like=time_like(name), resamples=resamples, noisy=noisy
            )
            found.append(Metric(name, a, b, result))
    return found


def _noise(done: list[runs.Run], load_before: float, load_after: float) -> dict[str, Any]:
    walls = {s: [r.seconds for r in done if r.side == s] for s in ("A", "B")}
    spread_a, spread_b = stats.spread(walls["A"]), stats.spread(walls["B"])
    cores = os.cpu_count() or 1
    busy = max(load_before, load_after) > cores
    noisy = max(spread_a, spread_b) > NOISY or busy
    warning = ""
    if noisy:
        warning = (
            f"the machine was noisy: runs of the same side spread by {spread_a:.0%} (A) and "
            f"{spread_b:.0%} (B) of their median wall time; load average {load_before:.1f} "
            f"before and {load_after:.1f} after, on {cores} cores. Small differences cannot be "
            "told apart from that; rerun on a quieter machine or with more --rounds."
        )
    return {
        "spread_a": round(spread_a, 4),
        "spread_b": round(spread_b, 4),
        "load_before": load_before,
        "load_after": load_after,
        "cores": cores,
        "noisy": noisy,
        "warning": warning,
    }


def _rounds(
    once: Callable[[str], runs.Run],
    result: ABResult,
    rounds: int | None,
    start: float,
    reporter: Reporter,
    load_before: float = 0.0,
) -> list[runs.Run]:
    """A B / B A rounds: ``rounds`` of them, or until every verdict is clear (at least
    MIN_ROUNDS; judged with the noise so far) or the next round would pass the budget."""
    done: list[runs.Run] = []
    wanted = rounds or MAX_ROUNDS
    with reporter.task("A/B rounds", total=rounds) as task:
        while result.rounds < wanted:
            order = ("A", "B") if result.rounds % 2 == 0 else ("B", "A")
            begun = time.monotonic()
            done += [once(label) for label in order]
            round_seconds = time.monotonic() - begun
            result.rounds += 1
            task.update(completed=result.rounds, detail=f"{round_seconds:.1f} s a round")
            if rounds is not None:
                continue
            if result.rounds >= MIN_ROUNDS:
                noisy = _noise(done, load_before, os.getloadavg()[0])["noisy"]
                if all(m.result.clear for m in _metrics(done, stats.QUICK_RESAMPLES, noisy=noisy)):
                    break
            if time.monotonic() - start + round_seconds > result.budget:
                result.notes.append(
                    f"stopped after {result.rounds} rounds: the --budget of {result.budget:g} s "
                    "was spent before every verdict was clear"
                )
                break
    return done


def _sweep(ws: Workspace | None) -> list[str]:
    """Remove what `onboard ab` runs killed outright left in ``ws``; a note for each."""
    if ws is None:
        return []
    from onboard.workflows.ab import worktrees

    notes = [
        f"removed the worktree {tree}, left by an `onboard ab` that was killed"
        for tree in worktrees.sweep_dead_worktrees(ws.checkout_path)
    ]
    worktrees.sweep_dead_runs(ws.root / worktrees.RUNS)
    return notes


@dataclass(frozen=True, kw_only=True)
class ABRequest:
    """`onboard ab`: ``script`` with ``script_args`` on sides ``a`` and ``b``
    (``sides``), for exactly ``rounds`` rounds or as many as ``budget`` seconds allow,
    each run at most ``timeout`` seconds. ``python``: the interpreter of the sides
    (None: the workspace's, else the one running onboard); ``workspace``: as given with
    --workspace (None: found from the current folder)."""

    script: str
    script_args: Sequence[str] = ()
    a: str = sides.INSTALLED
    b: str = sides.WORKSPACE
    rounds: int | None = None
    budget: float = DEFAULT_BUDGET
    timeout: float = 600.0
    workspace: str | None = None
    python: str | None = None


def ab(request: ABRequest, reporter: Reporter) -> ABResult:
    """The workspace and the interpreter, then ``compare``."""
    ws = find_workspace(request.workspace)
    return compare(
        Path(request.script),
        ws=ws,
        python=request.python or (ws.python if ws is not None else sys.executable),
        a=request.a,
        b=request.b,
        args=list(request.script_args),
        rounds=request.rounds,
        budget=request.budget,
        timeout=request.timeout,
        reporter=reporter,
    )


def compare(
    script: Path,
    *,
    ws: Workspace | None,
    python: str,
    a: str = sides.INSTALLED,
    b: str = sides.WORKSPACE,
    args: list[str] | None = None,
    rounds: int | None = None,
    budget: float = DEFAULT_BUDGET,
    timeout: float = 600.0,
    reporter: Reporter | None = None,
) -> ABResult:
    """Run ``script`` on A and B and compare (see the module docstring)."""
    reporter = reporter or Reporter()
    start = time.monotonic()
    if rounds is not None and rounds < 1:
        raise BadInput("--rounds must be at least 1.", next_step="Pass e.g. --rounds 10.")
    if budget <= 0:
        raise BadInput("--budget must be a positive number of seconds.")
    script = sides.check_script(script)
    specs = {"A": sides.check_spec(a), "B": sides.check_spec(b)}
    cwd = runs.cwd_for(script)
    swept = _sweep(ws)
    load_before = os.getloadavg()[0]
    with sides.prepared(specs, ws, python) as (prepared, _work):
        side_a, side_b = prepared
        result = ABResult(script, list(args or []), side_a, side_b, budget=budget)
        result.notes += swept
        by_label = {"A": side_a, "B": side_b}

        def once(label: str) -> runs.Run:
            run = runs.run_once(
                by_label[label],
                script,
                result.args,
                cwd=cwd,
                timeout=timeout,
            )
            if run.left_running:
                result.left_running.setdefault(label, []).extend(run.left_running)
            return run

        reporter.step(f"warm-up: one run on A ({side_a.spec}) and one on B ({side_b.spec})")
        warm = [once("A"), once("B")]
        done = _rounds(once, result, rounds, time.monotonic(), reporter, load_before)
    result.same_output, result.output_diff, result.output_note = _outputs(warm + done)
    result.noise = _noise(done, load_before, os.getloadavg()[0])
    # On a noisy machine a time's difference must also be beyond its own noise.
    result.metrics = _metrics(done, noisy=result.noise["noisy"])
    if result.rounds < stats.MIN_RUNS:
        result.notes.append(
            f"{result.rounds} round(s) give no verdict: {stats.MIN_RUNS} runs a side are "
            "the fewest a difference is told from (raise --budget or --rounds)"
        )
    result.compiled = {
        s: [r.compiled for r in done if r.side == s and r.compiled is not None] for s in "AB"
    }
    result.differences = startup.differences(
        {"A": side_a.interpreter, "B": side_b.interpreter},
        {"A": side_a.env, "B": side_b.env},
        result.compiled,
    )
    if not any(m.name not in _OWN for m in result.metrics):
        result.notes.append(
            "the script printed no name=value lines, so only the wall time and peak RSS of "
            "each process are compared (print e.g. `forward_ms=12.3` to compare your own "
            "measurements)"
        )
    for label, left in sorted(result.left_running.items()):
        result.notes.append(left_note(left, f"your script's runs on {label}"))
    result.seconds = time.monotonic() - start
    return result
