"""The script a pasted traceback came from, and how to get a certain answer from it."""

from __future__ import annotations

import os
import shlex

from onboard.workflows.locate.result import COMMAND, LocateResult
from onboard.workflows.opsource import cpp_trace
from onboard.workflows.opsource.context import TreeContext


def script_of(trace: cpp_trace.Trace) -> str | None:
    """The script a pasted traceback came from, when it is a file on this machine."""
    first = trace.python_frames[0] if trace.python_frames else None
    if first is None or first.func not in ("<module>", None) or not first.path.endswith(".py"):
        return None
    return first.path if os.path.isfile(first.path) else None


def certain_next_step(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> str:
    """How to get a certain answer: run the code so the binary names the line."""
    if result.mode == COMMAND and result.command:
        return (
            "The command's output names no line; run the code that raises it directly "
            "(`onboard locate -- python repro.py`)."
        )
    script = script_of(trace)
    if script is not None:
        again = shlex.join(["onboard", "locate", "--", ctx.python, script])
        return f"For a certain answer, run the script this traceback came from: `{again}`."
    return (
        "For a certain answer, run the code that raises it through onboard, so the binary "
        "names the line itself: `onboard locate -- python repro.py`."
    )
