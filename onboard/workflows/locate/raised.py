"""Where the error was raised, when the input says so: the line the binary named
(``Exception raised from ... at FILE:LINE``), else the last torch frame of a Python
traceback; and the chain of layers from the caller down to it."""

from __future__ import annotations

import re

from onboard.workflows.locate.result import FOUND, LocateResult, Warned
from onboard.workflows.opsource import chain, codegen, cpp_trace, macros
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.paths import SourceLoc


def read_frames(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    """The exception, its Python frames and the warnings torch raised, mapped to the tree."""
    smap = ctx.source_map
    ctx.generated_dir = codegen.existing(ctx.checkout, ctx.tree_id)
    smap.generated_dir = ctx.generated_dir
    result.exc_type = trace.exc_type
    result.message = trace.message
    result.python_frames = [smap.map(f.path, f.line) for f in trace.python_frames]
    result.warnings = [
        Warned(smap.map(s.path, s.line), s.category, s.message)
        for s in trace.sites
        if s.kind == "triggered"
    ]


def find_raise(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> SourceLoc | None:
    """The line that raised (a FOUND verdict) when the input names it, and the chain.
    Returns the last torch frame when that line does not raise itself (it calls into
    compiled code, or the interpreter raised on it): the error came from on or below it."""
    smap = ctx.source_map
    raised = trace.raised
    # A warning's "Triggered internally at" is the answer only when nothing was raised.
    exception = bool(trace.exc_type) and not (trace.exc_type or "").endswith("Warning")
    if raised is not None and (raised.kind != "triggered" or not exception):
        result.verdict = FOUND
        result.check = smap.map(raised.path, raised.line)
        result.check_function = raised.func or chain.enclosing(ctx, result.check)
    below: SourceLoc | None = None
    torch_frames = [i for i, loc in enumerate(result.python_frames) if loc.in_torch]
    if result.check is None and torch_frames and trace.exc_type:
        last = torch_frames[-1]
        # torch._check* raises inside torch/__init__.py: the site is the call of it.
        while (
            len(torch_frames) > 1
            and result.python_frames[last].path == macros.TORCH_INIT
            and (trace.python_frames[last].func or "").startswith("_check")
        ):
            torch_frames.pop()
            last = torch_frames[-1]
        loc, frame = result.python_frames[last], trace.python_frames[last]
        said = (frame.text or loc.text or "").strip()
        if said.startswith("raise") or re.match(r"(?:torch\.)?_check\w*\(", said):
            # Raised in torch's Python code: the last torch frame is the raise.
            result.verdict = FOUND
            result.check = loc
            result.check_function = frame.func
        else:
            below = loc
    result.chain = chain.build(
        ctx, trace, result.python_frames, result.check, result.check_function
    )
    return below
