"""`onboard locate -- COMMAND`: run it with ``TORCH_SHOW_CPP_STACKTRACES=1``, so the
binary says ``Exception raised from meta at .../LinearAlgebra.cpp:204`` and prints its
C++ frames; or say why there is nothing to locate (it passed, it failed outside
torch, it crashed in native code)."""

from __future__ import annotations

import os
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path

from onboard import proc, torchenv
from onboard.workflows.locate.request import LocateInput
from onboard.workflows.locate.result import (
    COMMAND,
    COMMAND_FAILED,
    NO_ERROR,
    LocateResult,
    Warned,
)
from onboard.workflows.opsource import cpp_trace
from onboard.workflows.opsource.context import TreeContext


@dataclass(frozen=True)
class Ran:
    """What the run printed, read as a trace; ``answered``: the result already says all
    there is (no exception to walk down)."""

    trace: cpp_trace.Trace
    result: LocateResult
    answered: bool = False


def run(ctx: TreeContext, request: LocateInput) -> Ran:
    argv = list(request.argv)
    ctx.reporter.step(f"Running {' '.join(argv)} with TORCH_SHOW_CPP_STACKTRACES=1")
    done = proc.run(
        argv,
        extra_env={"TORCH_SHOW_CPP_STACKTRACES": "1", "PYTHONUNBUFFERED": "1"},
        timeout=request.timeout,
        check=False,
        what=f"`{' '.join(argv)}`",
        # The answer is in what the command printed before it exited: a daemon or a
        # worker it left behind must not hold the run until the timeout.
        until_main_exits=True,
    )
    output = done.stdout + "\n" + done.stderr
    trace = cpp_trace.parse(output)
    result = LocateResult(
        mode=COMMAND, verdict=NO_ERROR, command=argv, command_exit=done.returncode
    )
    if done.left_running:
        result.notes.append(proc.left_note(done.left_running, "The command"))
    here = torchenv.shadowing_tree(Path.cwd())
    if here is not None:
        # The command runs where the user stands, as it would without onboard.
        result.limitations.append(
            f"The command ran in {here.parent}, whose torch/ is a source tree without "
            "compiled libraries: Python started there imports it instead of the installed "
            "torch. Run the command from another folder."
        )
    if done.returncode < 0:
        # A signal ended it: that is the answer, whatever it printed before (a torch
        # warning at import, say, has a "Triggered internally at" line of its own).
        from onboard.workflows.stuck import native_crash

        if native_crash.fatal(done.returncode):  # its C++ frames, mapped like a trace
            native_crash.answer(ctx, argv, done.returncode, output, request.timeout, result)
        else:
            _no_exception(result, argv, done.returncode, done.stderr)
        _printed_before(ctx, trace, result)
        return Ran(trace, result, answered=True)
    raised = trace.raised_exception or any(s.kind != "triggered" for s in trace.sites)
    if not raised and (done.returncode != 0 or not trace.sites):
        # No exception: a warning's line is the answer only for a run that went well.
        _no_exception(result, argv, done.returncode, done.stderr)
        _printed_before(ctx, trace, result)
        return Ran(trace, result, answered=True)
    return Ran(trace, result)


def _printed_before(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    """What the run printed before it died or failed: its torch warnings (listed, each at
    its line) and an exception it printed, neither of which is what ended it."""
    result.warnings = [
        Warned(ctx.source_map.map(s.path, s.line), s.category, s.message)
        for s in trace.sites
        if s.kind == "triggered"
    ]
    said = []
    if result.warnings:
        said.append(f"{len(result.warnings)} torch warning(s) (listed below)")
    if trace.raised_exception and trace.exc_type:
        said.append(f"an exception ({trace.exc_type}: {(trace.message or '').splitlines()[0]})")
    if said and result.explanation:
        result.explanation += (
            " Before that it printed " + " and ".join(said) + ": not what ended the run."
        )


def _no_exception(result: LocateResult, argv: list[str], code: int, stderr: str) -> None:
    """The command printed no exception or torch warning: it passed, or failed outside torch."""
    shown = shlex.join(argv)
    if code == 0:
        result.explanation = (
            f"`{shown}` exited 0 and printed no exception or torch warning, so there is "
            "nothing to locate."
        )
        result.next_step = (
            "Run it with the input that fails, or paste the error: "
            '`onboard locate "MESSAGE"` or `... 2>&1 | onboard locate -`.'
        )
        return
    result.verdict = COMMAND_FAILED
    said = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    if code < 0:
        name = _signal_name(-code)
        result.explanation = (
            f"`{shown}` was killed by {name}: it crashed in native code, which prints no "
            "Python exception to walk down."
        )
        if argv and os.path.basename(argv[0]).startswith("python"):
            again = shlex.join([argv[0], "-X", "faulthandler", *argv[1:]])
            result.next_step = f"See the Python frame it died in: `{again}`."
        return
    result.explanation = (
        f"The command itself failed (exit {code}) without printing a Python exception"
        + (f": {said}" if said else ".")
    )
    result.next_step = (
        "Fix the command so it runs (a missing file, a typo, another interpreter), then run "
        f"`onboard locate -- {shown}` again."
    )


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"
