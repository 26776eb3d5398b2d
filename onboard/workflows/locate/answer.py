"""The words around an answer: why nothing was found (the traceback never enters
torch, no site has the message, there was no error) and the next step; and what a
reference tree could not show."""

from __future__ import annotations

from onboard.workflows.locate.result import NO_ERROR, NO_MATCH, NOT_TORCH, LocateResult
from onboard.workflows.locate.script import certain_next_step
from onboard.workflows.opsource import checks, cpp_trace
from onboard.workflows.opsource.context import TreeContext


def explain_nothing_found(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    if result.verdict not in (NO_MATCH, NO_ERROR):
        return
    torch_frames = [loc for loc in result.python_frames if loc.in_torch]
    user_frames = [loc for loc in result.python_frames if not loc.in_torch]
    if trace.python_frames and not torch_frames and not trace.cpp_frames and not result.compiled:
        result.verdict = NOT_TORCH
        last = user_frames[-1] if user_frames else None
        where = f" at {last.label}" if last else ""
        searched = (
            "no check in the tree's headers and no string of the installed torch's "
            "compiled libraries has its message"
            if ctx.ws.is_reference
            else "no TORCH_CHECK site has its message"
        )
        result.explanation = (
            f"This traceback never enters torch, so the error is not torch's: "
            f"{trace.exc_type or 'the error'} is raised{where}, in your code or a library's. "
            "No `raise` in torch's Python code raised it (it would be a frame of the "
            f"traceback), and {searched}."
        )
        raisable = {*ctx.checks().python_exceptions.values(), "RuntimeError"}
        if ctx.ws.is_reference and checks.short_type(trace.exc_type) in raisable | {None}:
            result.limitations.append(
                "The .cpp/.cu checks were looked for as strings of the compiled libraries "
                "only, which miss a message made only of short pieces (each under 10 "
                f"characters) around runtime values; a C++ check can raise {trace.exc_type}."
            )
        result.next_step = (
            "Read the last frame of the traceback; if torch is involved further down, run "
            "the failing code with `onboard locate -- python repro.py`."
        )
    elif trace.message:
        families = len(ctx.checks().families)
        result.explanation = (
            f"No check, error or warning macro site ({families} macro families read from "
            "the tree's headers: TORCH_CHECK and kin, internal asserts, TORCH_WARN*, "
            "C10_THROW_ERROR) and no Python `raise` / `warnings.warn` / `torch._check` site "
            f"in {ctx.checkout} has literal text matching this message (it may be built at "
            "runtime, come from a third-party library, or be from another torch version)."
        )
        if result.compiled:
            result.explanation += (
                " Its text is in the installed torch's compiled libraries (below): the "
                "check is in a .cpp/.cu file this tree does not have."
            )
        result.next_step = certain_next_step(ctx, trace, result)
    else:
        result.explanation = "No exception, torch warning or check message was found in the input."
        result.next_step = (
            "Pass the full error output (`... 2>&1 | onboard locate -`) or run the code with "
            "`onboard locate -- python repro.py`."
        )


def reference_limits(ctx: TreeContext, result: LocateResult) -> None:
    """What a reference tree (headers and Python only) could not show."""
    if not ctx.ws.is_reference:
        return
    missing = [
        loc
        for loc in [result.check, *[c.location for c in result.candidates]]
        if loc is not None and loc.in_torch and not loc.in_checkout and not loc.generated
    ]
    if missing:
        limit = ctx.ws.limitation(
            f"The source line at {missing[0].label} (a .cpp/.cu file; its GitHub link is shown)"
        )
        if limit:
            result.limitations.append(limit)
    if result.verdict == NO_MATCH:
        limit = ctx.ws.limitation(
            "Matching messages against checks in .cpp/.cu files (only headers and Python "
            "files were searched)"
        )
        if limit:
            result.limitations.append(limit)
