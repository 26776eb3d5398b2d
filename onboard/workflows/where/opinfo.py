"""The op's OpInfo entries: the tests every op gets from
torch/testing/_internal/common_methods_invocations.py."""

from __future__ import annotations

import re

from onboard.workflows.opsource import scan
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.paths import SourceLoc

OPINFO_FILE = "torch/testing/_internal/common_methods_invocations.py"
# `UnaryUfuncInfo('trunc', ...)`, and the Python reference's `torch_opinfo_name="trunc"`.
# ForeachFuncInfo('trunc') is the entry of _foreach_trunc, so it only counts for those.
_OPINFO_BEFORE = re.compile(r"(?:(?P<info>\w*Info)\(\s*|torch_opinfo_name\s*=\s*)$")


def opinfo(ctx: TreeContext, base: str) -> list[SourceLoc]:
    """The first few lines that name the op's OpInfo (empty when the file is missing)."""
    text = scan.read(ctx.checkout / OPINFO_FILE)
    if not text:
        return []
    foreach = base.startswith("_foreach_")
    name = base.removeprefix("_foreach_")
    starts: list[int] = []
    # str.find for the quoted name, then a look at what precedes it: a regex over the
    # whole 1 MB file costs ~0.1 s, this ~5 ms.
    for needle in (f"'{name}'", f'"{name}"'):
        at = text.find(needle)
        while at >= 0:
            mo = _OPINFO_BEFORE.search(text, max(0, at - 120), at)
            if mo and (mo.group("info") == "ForeachFuncInfo") == foreach:
                starts.append(mo.start())
            at = text.find(needle, at + 1)
    lines = sorted({text.count("\n", 0, start) + 1 for start in starts})
    return [ctx.source_map.loc(OPINFO_FILE, line) for line in lines[:5]]
