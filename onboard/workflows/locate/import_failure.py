"""An extension that would not load: no check in torch raised this, the dynamic loader
did; the doctor reads why from the files themselves."""

from __future__ import annotations

import os
import re
import shlex

from onboard.workflows.locate.result import IMPORT_FAILED, LocateResult
from onboard.workflows.locate.script import script_of
from onboard.workflows.opsource import checks, confidence, cpp_trace
from onboard.workflows.opsource.context import TreeContext

# What the dynamic loader says when an extension cannot be loaded.
_LOADER = re.compile(
    r"undefined symbol:|cannot open shared object file|version `[^']+' not found"
    r"|wrong ELF class|invalid ELF header"
)


def loader_refused(trace: cpp_trace.Trace) -> bool:
    kind = checks.short_type(trace.exc_type)
    return kind in ("ImportError", "ModuleNotFoundError", "OSError") and bool(
        _LOADER.search(trace.message or "")
    )


def diagnose(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    """An extension would not load: no check raised this, the loader did. Ask the doctor."""
    from onboard.workflows.doctor import extension, loader_error

    result.verdict = IMPORT_FAILED
    result.confidence = confidence.NONE
    script = script_of(trace)
    result.diagnosis = loader_error.explain_message(
        ctx.python,
        trace.exc_type,
        trace.message or "",
        module=extension.module_of(trace),
        folders=[os.path.dirname(os.path.abspath(script))] if script else [],
        reporter=ctx.reporter,
    )
    result.explanation = (
        "This is the dynamic loader refusing a compiled extension, not a check in torch's "
        "source: no line of PyTorch raised it. What its files say:"
    )
    result.next_step = (
        f"Check it again after the fix: `onboard doctor -- {shlex.join([ctx.python, script])}`."
        if script
        else "After the fix, check the import with `onboard doctor --import MODULE`."
    )
