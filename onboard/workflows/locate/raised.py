"""Where the error was raised, when the input says so: the line the binary named
(``Exception raised from ... at FILE:LINE``), else the last torch frame of a Python
traceback; and the chain of layers from the caller down to it."""

from __future__ import annotations

from onboard.workflows.locate.result import FOUND, LocateResult, Warned
from onboard.workflows.opsource import chain, codegen, cpp_trace
from onboard.workflows.opsource.context import TreeContext


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


def find_raise(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    """The line that raised (a FOUND verdict) when the input names it, and the chain."""
    smap = ctx.source_map
    raised = trace.raised
    # A warning's "Triggered internally at" is the answer only when nothing was raised.
    exception = bool(trace.exc_type) and not (trace.exc_type or "").endswith("Warning")
    if raised is not None and (raised.kind != "triggered" or not exception):
        result.verdict = FOUND
        result.check = smap.map(raised.path, raised.line)
        result.check_function = raised.func or chain.enclosing(ctx, result.check)
    torch_frames = [loc for loc in result.python_frames if loc.in_torch]
    if result.check is None and torch_frames and trace.exc_type:
        # Raised in torch's Python code: the last torch frame is the raise.
        result.verdict = FOUND
        result.check = torch_frames[-1]
        result.check_function = trace.python_frames[
            result.python_frames.index(torch_frames[-1])
        ].func
    result.chain = chain.build(
        ctx, trace, result.python_frames, result.check, result.check_function
    )
