"""`onboard compile -- python train.py`: the program runs as it is (its own
torch.compile calls and backend, or one forced with --backend) with torch's
structured trace on (``TORCH_TRACE`` set to a private folder), its output and exit
status passing through; then the trace is read for what compiling did.

The steps, one module each: ``trace`` (the trace files, record by record),
``breaks`` (each distinct graph break, at the user's line, with its registry entry
and the ``unimplemented(...)`` call in torch/_dynamo that decided it; ``sources``
finds those in the workspace checkout or the wheel), ``recompiles`` (the guards that
failed, per function, and the recompile limit), ``cost`` (the failures, and graphs,
ops and compile time per function); the answer is a ``CompileResult`` (``result``).
"""

from __future__ import annotations

import os
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from onboard.errors import BadInput
from onboard.report import Reporter
from onboard.workflows.compile import breaks, cost, recompiles, trace
from onboard.workflows.compile.result import (
    CompileResult,
    FailedGuard,
    Failure,
    FrameCost,
    GraphBreak,
    Place,
    Recompiled,
    RegistryEntry,
)
from onboard.workflows.compile.sources import TorchSources, torch_dir_of
from onboard.workflows.program import ProgramOptions, run_through

__all__ = [
    "BACKENDS",
    "CompileRequest",
    "CompileResult",
    "FailedGuard",
    "Failure",
    "FrameCost",
    "GraphBreak",
    "Place",
    "Recompiled",
    "RegistryEntry",
    "compile_program",
]

BACKENDS = ("eager", "aot_eager", "inductor")
# Every graph of every frame (torch/_dynamo/config.py debug_backend_override, whose
# filter ">=0" is every compile id; torch/_dynamo/graph_id_filter.py).
_OVERRIDE_ENV = "TORCH_COMPILE_OVERRIDE_BACKENDS"


@dataclass(frozen=True, kw_only=True)
class CompileRequest(ProgramOptions):
    """`onboard compile`: run ``command``; ``backend`` forces one backend for every
    graph (None: the program's own); ``timeout`` stops it after that many seconds."""

    backend: str | None = None
    timeout: float | None = None


def compile_program(
    request: CompileRequest, reporter: Reporter | None = None, *, quiet_stdout: bool = False
) -> CompileResult:
    """Run the program under the structured trace and read what compiling did."""
    reporter = reporter or Reporter()
    argv = _argv(request)
    if request.backend is not None and request.backend not in BACKENDS:
        raise BadInput(
            f"{request.backend!r} is not a backend onboard can force.",
            next_step="Use --backend eager, aot_eager or inductor.",
        )
    shown = shlex.join(argv)
    result = CompileResult(command=shown, backend=request.backend)
    if os.environ.get("TORCH_TRACE"):
        result.notes.append(
            f"TORCH_TRACE={os.environ['TORCH_TRACE']} was set: this run traced into onboard's "
            "own folder instead (nothing was written to yours)."
        )
    with tempfile.TemporaryDirectory(prefix="onboard-compile-") as folder:
        env = {"TORCH_TRACE": folder}
        if request.backend:
            env[_OVERRIDE_ENV] = f">=0:{request.backend}"
        forced = f", every graph on {request.backend}" if request.backend else ""
        reporter.step(f"Running {shown} with TORCH_TRACE in a private folder{forced}")
        result.program_exit = run_through(
            argv, env, request.timeout, quiet_stdout, result.notes, "the trace"
        )
        processes = trace.read_dir(Path(folder))
    _read(processes, request, result)
    return result


def _argv(request: CompileRequest) -> list[str]:
    if not request.command:
        raise BadInput(
            "No program was given after `--`.",
            next_step="Run `onboard compile -- python train.py`.",
        )
    argv = list(request.command)
    if request.python and argv[0] in ("python", "python3"):
        argv[0] = request.python
    return argv


def _read(processes: list[trace.Process], request: CompileRequest, result: CompileResult) -> None:
    from onboard.workspace import find

    compiled = [p for p in processes if p.of_kind("compilation_metrics")]
    result.processes = len(compiled)
    named = [s for p in processes for s in p.strings.values()]
    torch_dir = torch_dir_of(named)
    ws = find(request.workspace)
    checkout = None
    if ws is not None and (ws.checkout_path / "torch" / "_dynamo").is_dir():
        checkout = ws.checkout_path
        result.checkout = str(checkout)
    sources = TorchSources(torch_dir, checkout)
    result.torch_dir = str(torch_dir) if torch_dir else None
    result.torch_version = _version(processes)
    if not compiled:
        result.notes.append(
            "Nothing was compiled: the trace has no compilation (the program calls no "
            "torch.compile, or it ended before the first compiled call)."
        )
    result.breaks = breaks.collect(compiled, sources)
    result.recompiles = recompiles.collect(compiled)
    result.failures = cost.failures(compiled, sources, result.command, request.backend)
    result.frames = cost.frames(compiled)
    result.not_checked = cost.not_checked(compiled)
    skipped = sum(p.skipped for p in processes)
    if skipped:
        result.notes.append(f"{skipped} line(s) of the trace were not records and were skipped.")


def _version(processes: list[trace.Process]) -> str | None:
    import json

    for process in processes:
        for record in process.artifacts("torch_version"):
            try:
                return str(json.loads(record.payload or "{}").get("pytorch_version"))
            except ValueError:
                continue
    return None
