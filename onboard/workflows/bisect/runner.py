"""Running the user's repro once, N times, and turning the exits into a verdict.

A repro is a Python file; exit 0 means it passes, anything else that it fails,
with three exceptions that must never be read as "fails": a timeout (skip), a
missing GPU (skip, and refused up front), and a death by signal, which counts
as a failure or a skip as the user chooses (``--on-crash``). Because onboard
steps ``git bisect`` itself, no exit code of the repro ever reaches git:
``git bisect run`` would abort the whole bisect on an exit code >= 128, which
is what a segfault through a shell gives (docs/pytorch-facts.md: Bisect facts).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc
from onboard.errors import ProcTimeout
from onboard.jsonable import spec

# outcomes of one run
PASS = "pass"
FAIL = "fail"
CRASH = "crash"
TIMEOUT = "timeout"
NO_GPU = "no-gpu"
UNTESTABLE = "untestable"  # the repro exited 125: git bisect run's "cannot test this commit"

# verdicts of a commit (or a release)
SKIP = "skip"

# What torch says when the repro needs a GPU this machine cannot give it
# (torch/cuda/__init__.py: _lazy_init; the driver check in c10/cuda).
NO_GPU_MESSAGES = (
    "Torch not compiled with CUDA enabled",
    "no CUDA GPUs are available",
    "Found no NVIDIA driver",
    "CUDA driver version is insufficient",
)

# `cuda` as a word, outside comments: torch.cuda, .cuda(), device="cuda:0".
_CUDA_WORD = re.compile(r"\bcuda\b")
# A guard is not a use: `if torch.cuda.is_available(): ...` runs anywhere.
_CUDA_GUARD = re.compile(r"\bcuda\s*\.\s*(is_available|device_count)\s*\(\s*\)")

_TAIL_LINES = 6


@dataclass(frozen=True)
class Run:
    """One execution of the repro."""

    outcome: str  # pass | fail | crash | timeout | no-gpu
    returncode: int | None
    signal: str | None
    seconds: float = field(metadata=spec(digits=3))
    tail: str = ""  # the last lines of its output (empty when it passed)

    def describe(self) -> str:
        if self.outcome == CRASH:
            return f"crashed ({self.signal})"
        if self.outcome == TIMEOUT:
            return f"timed out after {self.seconds:.0f} s"
        if self.outcome == NO_GPU:
            return "needs a GPU"
        if self.outcome == UNTESTABLE:
            return "the repro exited 125 (cannot test this commit)"
        if self.outcome == FAIL:
            return f"failed (exit {self.returncode})"
        return "passed"


@dataclass(frozen=True)
class Verdict:
    """The majority of N runs at one commit: pass, fail or skip."""

    value: str  # pass | fail | skip
    runs: tuple[Run, ...]
    flaky: bool
    reason: str = ""  # why skip, or what was mixed

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.runs)

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for r in self.runs:
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        parts = ", ".join(f"{n} {o}" for o, n in counts.items())
        return f"{parts} in {self.seconds:.1f} s"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def classify(result: proc.Result) -> tuple[str, str | None]:
    """(outcome, signal name) of a finished run."""
    code = result.returncode
    text = result.stdout + result.stderr
    if code != 0 and any(msg in text for msg in NO_GPU_MESSAGES):
        return NO_GPU, None
    if code < 0:
        return CRASH, signal_name(-code)
    # A wrapper (a shell, a pyenv shim) reports a signal death as 128 + N.
    if code > 128 and (code - 128) in {s.value for s in signal.Signals}:
        return CRASH, f"{signal_name(code - 128)} (exit {code})"
    if code == 125:
        return UNTESTABLE, None
    return (PASS, None) if code == 0 else (FAIL, None)


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-_TAIL_LINES:])


@dataclass
class ReproRunner:
    """Runs one repro file with one interpreter, each run in a fresh empty folder.

    Why a fresh temporary folder as cwd rather than the checkout: the repro's
    own writes (outputs, caches, checkpoints) must never land in the tree that
    ``git bisect`` keeps checking out (they would dirty it, block the next
    checkout and survive into the next commit's test), and nothing a previous
    run left behind may influence the next verdict. The checkout comes first on
    the import path through PYTHONPATH instead; ``sys.path[0]`` stays the
    repro's own folder, so helper modules next to it still import.
    """

    repro: Path
    python: str
    timeout: float | None
    on_crash: str = "bad"  # bad | skip
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="onboard-bisect-")))
    executions: int = 0

    def run_once(self, env: Mapping[str, str], pycache: Path | None = None) -> Run:
        cwd = Path(tempfile.mkdtemp(prefix="run-", dir=self.workdir))
        full_env = dict(env)
        if pycache is not None:
            # Per-commit bytecode cache: a .pyc written at one commit is never
            # trusted at another (timestamp pycs compare whole seconds only),
            # and the checkout gets no new __pycache__ folders.
            full_env["PYTHONPYCACHEPREFIX"] = str(pycache)
        self.executions += 1
        try:
            result = proc.run(
                [self.python, str(self.repro)],
                cwd=cwd,
                env=full_env,
                timeout=self.timeout,
                check=False,
                what="The repro",
                # Its verdict is its exit status: a worker or daemon it left behind
                # is stopped, not waited for until the timeout.
                until_main_exits=True,
            )
        except ProcTimeout as exc:
            assert self.timeout is not None
            return Run(TIMEOUT, None, None, self.timeout, _tail(exc.stdout + exc.stderr))
        finally:
            shutil.rmtree(cwd, ignore_errors=True)
        outcome, sig = classify(result)
        tail = "" if outcome == PASS else _tail(result.stdout + "\n" + result.stderr)
        return Run(outcome, result.returncode, sig, result.seconds, tail)

    def verdict(self, env: Mapping[str, str], repeat: int, pycache: Path | None = None) -> Verdict:
        runs = tuple(self.run_once(env, pycache) for _ in range(max(1, repeat)))
        return decide(runs, self.on_crash)

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def decide(runs: tuple[Run, ...], on_crash: str) -> Verdict:
    """Majority of the decisive runs; ties and no decisive run mean skip."""
    passes = sum(1 for r in runs if r.outcome == PASS)
    fails = sum(1 for r in runs if r.outcome == FAIL or (r.outcome == CRASH and on_crash == "bad"))
    undecided = [
        r
        for r in runs
        if r.outcome in (TIMEOUT, NO_GPU, UNTESTABLE) or (r.outcome == CRASH and on_crash == "skip")
    ]
    flaky = passes > 0 and fails > 0
    mixed = f"{passes} passed, {fails} failed of {len(runs)} runs" if flaky else ""
    if passes > fails:
        return Verdict(PASS, runs, flaky, mixed)
    if fails > passes:
        return Verdict(FAIL, runs, flaky, mixed)
    if flaky:
        return Verdict(SKIP, runs, True, f"no majority: {mixed}")
    why = undecided[0].describe() if undecided else "no run decided"
    if len(undecided) > 1 and len({r.outcome for r in undecided}) == 1:
        why = f"{why} ({len(undecided)} of {len(runs)} runs)"
    return Verdict(SKIP, runs, False, why)


# --------------------------------------------------------------------------
# GPU


def uses_cuda(source: str) -> bool:
    """Whether the repro's code (comments and availability guards aside) uses CUDA."""
    code = "\n".join(ln.split("#", 1)[0] for ln in source.splitlines())
    code = _CUDA_GUARD.sub("", code)
    return bool(_CUDA_WORD.search(code))


def gpu_available(python: str, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """(usable GPU?, why not) as ``python`` sees it; the hardware when its torch has no CUDA."""
    workdir = Path(tempfile.mkdtemp(prefix="onboard-gpu-"))
    info: dict[str, Any] = {}
    try:
        info = proc.ask_child(
            python, "_cuda_child.py", cwd=workdir, env=env, timeout=180,
            what=f"Asking {python} for a GPU",
        ).data  # fmt: skip
    except proc.NoAnswer:
        pass  # the machine itself is asked below
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if info.get("torch") and info.get("compiled"):
        if info.get("available"):
            return True, ""
        return False, info.get("error") or f"torch.cuda.is_available() is False in {python}"
    # No torch, or a CPU-only torch: the release/commit under test may still
    # be a CUDA build, so ask the machine itself.
    if proc.which("nvidia-smi"):
        smi = proc.run(["nvidia-smi", "-L"], timeout=60, check=False)
        if smi.returncode == 0 and "GPU" in smi.stdout:
            return True, ""
        return False, "`nvidia-smi -L` lists no GPU"
    if any(Path("/dev").glob("nvidia[0-9]*")):
        return True, ""
    return False, "this machine has no NVIDIA GPU (no nvidia-smi, no /dev/nvidia*)"


def repro_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The user's environment plus ours (not proc.environ: no LC_ALL=C for the repro)."""
    env = dict(os.environ if base is None else base)
    env.update(extra)
    return env
