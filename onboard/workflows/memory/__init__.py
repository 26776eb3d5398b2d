"""`onboard memory -- python train.py`: the program runs as it is, under a child
(``children/_memory_child.py`` after ``onboard_launch``) that takes a census of
the live tensors at each step boundary and records, for two probe steps only, the
line each new tensor was made at; its output and exit status pass through. The
child rewrites its answer in a private file at every census, so a program that
dies (the OOM killer's SIGKILL included) still leaves the last census; the file's
folder is removed afterwards.

The steps: ``analyse`` (what grows, by line, and the known patterns), the answer
a ``MemoryResult`` (``result``)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard import proc
from onboard.children.onboard_answer import FILE_ENV
from onboard.errors import BadInput
from onboard.report import Reporter
from onboard.workflows.memory import analyse, plot
from onboard.workflows.memory.result import (
    Census,
    CudaSummary,
    Growth,
    Holder,
    MemoryResult,
    Pattern,
    Peak,
    PeakGroup,
)
from onboard.workflows.program import ProgramOptions, run_through

__all__ = [
    "Census",
    "CudaSummary",
    "Growth",
    "Holder",
    "MemoryRequest",
    "MemoryResult",
    "Pattern",
    "Peak",
    "PeakGroup",
    "memory_program",
]


@dataclass(frozen=True, kw_only=True)
class MemoryRequest(ProgramOptions):
    """`onboard memory`: run ``command``; ``step``: the boundary (None: the optimizer's
    step(); ``FUNC`` a function's return; ``FILE:LINE`` a line); ``every``: seconds
    between censuses instead; ``lines_everywhere``: record creation lines in every
    step, not only the probe's two; ``snapshot``: where to keep the CUDA allocator's
    snapshot (memory_viz reads it); ``plot``: an SVG or PNG of the censuses;
    ``peak``: torch.profiler's memory profile of steps 2-3, its peak by category;
    ``timeout``: stop it after that many seconds."""

    step: str | None = None
    every: float | None = None
    lines_everywhere: bool = False
    snapshot: str | None = None
    plot: str | None = None
    peak: bool = False
    timeout: float | None = None


def step_kind(request: MemoryRequest) -> tuple[str, dict[str, Any]]:
    """(the kind of boundary, the child's keys for it)."""
    if request.every is not None and request.step is not None:
        raise BadInput(
            "--step and --every were both given.",
            next_step="Use --step for a function or line that ends each step, or --every "
            "SECONDS for a loop without one.",
        )
    if request.every is not None:
        if request.every <= 0:
            raise BadInput(f"--every {request.every:g} is not a positive number of seconds.")
        return "every", {"every": request.every}
    if request.step is None:
        return "optimizer", {}
    step = request.step.strip()
    path, _, line = step.rpartition(":")
    if path and line.isdigit():
        if not Path(path).is_file():
            raise BadInput(
                f"--step {step}: {path} is not a file.",
                next_step="Give FILE:LINE of the program's own code (train.py:42).",
            )
        return "line", {"step": f"{path}:{line}"}
    if not step.replace(".", "").replace("_", "").replace(":", "").isalnum():
        raise BadInput(
            f"--step {step!r} is neither a function name nor FILE:LINE.",
            next_step="Give the function each step returns from (train_step) or FILE:LINE.",
        )
    return "function", {"step": step}


def memory_program(
    request: MemoryRequest, reporter: Reporter | None = None, *, quiet_stdout: bool = False
) -> MemoryResult:
    """Run the program under the census child and read what grows."""
    from onboard.workflows.trace.launch import parse

    reporter = reporter or Reporter()
    kind, keys = step_kind(request)
    if request.plot:
        plot.check(request.plot)
    program = parse(request.command, python=request.python, workspace=request.workspace)
    result = MemoryResult(command=program.shown, step_kind=kind)
    child_request = {
        "kind": program.kind, "target": program.target, "args": list(program.args),
        "preimport": False, "step_kind": kind, "lines": "all" if request.lines_everywhere else "",
        "snapshot": os.path.abspath(request.snapshot) if request.snapshot else None,
        "peak": request.peak, **keys,
    }  # fmt: skip
    argv = proc.child_command(
        program.python,
        "_memory_child.py",
        json.dumps(child_request),
        modules=["onboard_launch"],
        options=program.options,
    )
    with tempfile.TemporaryDirectory(prefix="onboard-memory-") as folder:
        answer_file = Path(folder) / "answer.json"
        env = {FILE_ENV: str(answer_file)}
        reporter.step(f"Running {program.shown} with a census of live tensors at each step")
        result.program_exit = run_through(
            argv, env, request.timeout, quiet_stdout, result.notes, "the censuses"
        )
        answer = _read(answer_file)
    if answer is None:
        result.finished = False
        result.notes.append(
            "The program ended before onboard's child wrote anything (it failed before "
            "torch was imported): there is no census."
        )
        return result
    _fill(answer, result)
    if request.plot and result.censuses:
        try:
            plot.draw(result, request.plot)
            result.plot = os.path.abspath(request.plot)
        except OSError as exc:
            result.notes.append(f"--plot {request.plot} could not be written: {exc}")
    return result


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _fill(answer: dict[str, Any], result: MemoryResult) -> None:
    result.torch_version = str((answer.get("torch") or {}).get("version") or "") or None
    result.steps = int(answer.get("steps") or 0)
    result.census_seconds = float(answer.get("census_seconds") or 0.0)
    result.finished = bool(answer.get("finished"))
    result.censuses = analyse.censuses(answer.get("censuses") or [])
    result.growth, result.patterns = analyse.growth(answer, result.censuses)
    status = answer.get("status") or {}
    for error in status.get("errors") or []:
        result.notes.append(f"onboard's census failed once: {error}")
    if not result.finished:
        last = result.censuses[-1].step if result.censuses else 0
        result.notes.append(
            f"The program died before it ended normally (exit {result.program_exit}); "
            f"this is the last census onboard took, at step {last}."
        )
    if len(analyse.steady(result.censuses)) < 3:
        what = {"optimizer": "optimizer.step() calls", "function": "returns of --step",
                "line": "passes over --step's line", "every": "--every intervals"}  # fmt: skip
        result.notes.append(
            f"Only {result.steps} step(s) ({what[result.step_kind]}) were seen: growth needs "
            "at least 4 to be told from first-step state."
            + (" The program has no torch.optim optimizer? Pass --step FUNC, --step "
               "FILE:LINE or --every SECONDS." if result.step_kind == "optimizer" else "")
        )  # fmt: skip
    result.cuda = _cuda(answer, result)
    raw = answer.get("peak")
    if raw:
        result.peak = Peak(
            bytes=int(raw["bytes"]),
            from_step=int(raw["from_step"]),
            to_step=int(raw["to_step"]),
            groups=[
                PeakGroup(
                    category=str(g["category"]),
                    bytes=int(g["bytes"]),
                    path=g.get("path"),
                    line=g.get("line"),
                    function=g.get("function"),
                )
                for g in raw.get("groups") or []
            ],
        )


def _cuda(answer: dict[str, Any], result: MemoryResult) -> CudaSummary | None:
    raw = answer.get("cuda")
    if not raw:
        result.not_checked.append(
            "CUDA: the program used no CUDA device here, so the caching allocator "
            "(allocated vs reserved vs the driver's view, fragmentation, what "
            "empty_cache() gives back) was not checked."
        )
        return None
    reserved = int(raw.get("reserved") or 0)
    if raw.get("snapshot_error"):
        result.notes.append(f"The CUDA snapshot could not be written: {raw['snapshot_error']}")
    return CudaSummary(
        allocated=int(raw.get("allocated") or 0), reserved=reserved,
        peak_allocated=int(raw.get("peak") or 0),
        fragmentation=int(raw.get("inactive_split") or 0) / reserved if reserved else 0.0,
        empty_cache_gain=int(raw.get("empty_cache_gain") or 0),
        driver_used=raw.get("driver_used"), ooms=int(raw.get("ooms") or 0),
        snapshot=raw.get("snapshot"),
    )  # fmt: skip
