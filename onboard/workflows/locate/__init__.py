"""`onboard locate`: from an error to the line of PyTorch that raised it.

Three inputs: a command (run with ``TORCH_SHOW_CPP_STACKTRACES=1``, so the
binary says ``Exception raised from meta at .../LinearAlgebra.cpp:204`` and
prints the C++ frames), a message, or a pasted traceback/log. With frames the
answer is the chain layer by layer (Python -> binding -> autograd ->
dispatcher -> backend wrapper -> kernel/meta -> the check); with a message
only, the check sites whose literal pieces match it, ranked.

The steps, one module each: ``request`` (what was given), ``program`` (a command
run, or why there is nothing to locate), ``raised`` (the line the input names and
the chain down to it), ``import_failure`` (the loader, not a check, refused an
extension), ``candidates`` (the sites a message matches, and how sure), ``answer``
(why nothing was found, what a reference tree cannot show; ``script``: the run
that would give a certain answer); the answer is a ``LocateResult`` (``result``).
"""

from __future__ import annotations

from onboard.report import Reporter
from onboard.workflows.locate import answer, candidates, import_failure, program, raised
from onboard.workflows.locate.request import RUN_TIMEOUT, LocateInput, LocateRequest
from onboard.workflows.locate.result import (
    COMMAND,
    COMMAND_FAILED,
    FOUND,
    IMPORT_FAILED,
    MATCHED,
    NO_ERROR,
    NO_MATCH,
    NOT_TORCH,
    Candidate,
    LocateResult,
    Warned,
)
from onboard.workflows.opsource import confidence, cpp_trace
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.paths import SourceLoc

__all__ = [
    "COMMAND_FAILED",
    "FOUND",
    "IMPORT_FAILED",
    "MATCHED",
    "NO_ERROR",
    "NO_MATCH",
    "NOT_TORCH",
    "RUN_TIMEOUT",
    "Candidate",
    "LocateRequest",
    "LocateResult",
    "Warned",
    "locate",
]


def locate(request: LocateRequest, reporter: Reporter | None = None) -> LocateResult:
    """`onboard locate`: the line of PyTorch behind what ``request`` gave."""
    given = LocateInput.read(request)
    ctx = TreeContext.open(
        request.workspace, request.python, reporter or Reporter(), refresh=request.refresh
    )
    if given.mode == COMMAND:
        ran = program.run(ctx, given)
        trace, result = ran.trace, ran.result
        if ran.answered:
            result.commit = ctx.ws.commit
            return result
    else:
        trace = cpp_trace.parse(given.text)
        if trace.message is None and not trace.sites and not trace.python_frames:
            # A bare message: the whole text is what the check printed.
            trace.message = given.text.strip()
        result = LocateResult(mode=given.mode, verdict=NO_MATCH)
    result.commit = ctx.ws.commit
    _answer(ctx, trace, result)
    result.warm = dict(ctx.warm)
    return result


def _answer(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    raised.read_frames(ctx, trace, result)
    below = raised.find_raise(ctx, trace, result)
    if trace.message and import_failure.loader_refused(trace):
        # Even when a torch frame made the call (torch/__init__.py loading its libraries),
        # the loader refused a file: what matters is why, which the doctor reads.
        import_failure.diagnose(ctx, trace, result)
        return
    if result.check is None and trace.message:
        candidates.match_message(ctx, trace, result)
        if below is not None:
            _raised_below(below, result)
    elif result.check is not None:
        result.confidence = confidence.CERTAIN
    if result.check is None and not result.candidates and trace.sites:
        # Only warnings were located.
        result.verdict = FOUND if result.warnings else result.verdict
    answer.explain_nothing_found(ctx, trace, result)
    answer.reference_limits(ctx, result)


def _raised_below(below: SourceLoc, result: LocateResult) -> None:
    """The last torch frame's line raises nothing itself: the error came from compiled
    code it calls (or the interpreter, on that line). Said with the answer; with no
    site matched, that line is the answer, at low confidence."""
    said = (
        f"The traceback's last torch frame, {below.label}, does not raise itself: the "
        "error came from compiled code that line calls (a C++ check), or from the line's "
        "own operations"
    )
    if result.candidates:
        result.blind_spots.append(said + "; the sites below are matched by the message.")
        return
    result.verdict = FOUND
    result.check = below
    result.confidence = confidence.LOW
    result.blind_spots.append(said + "; no site's text matched the message.")
