"""The op's OpInfo entries: the tests every op gets from
torch/testing/_internal/common_methods_invocations.py."""

from __future__ import annotations

import re

from onboard.workflows.opsource import scan
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.where.live_answers import ALIASES

OPINFO_FILE = "torch/testing/_internal/common_methods_invocations.py"
# `UnaryUfuncInfo('trunc', ...)`, and the Python reference's `torch_opinfo_name="trunc"`.
# ForeachFuncInfo('trunc') is the entry of _foreach_trunc, so it only counts for those.
_OPINFO_BEFORE = re.compile(r"(?:(?P<info>\w*Info)\(\s*|torch_opinfo_name\s*=\s*)$")
# An entry's start, before its `aten_name="gelu"` (OpInfo('nn.functional.gelu', ...)).
_ENTRY_START = re.compile(r"\b\w*Info\(\s*['\"]")
# How far back from `aten_name=` its entry's first line may be (they come within a
# few lines of it).
_ENTRY_SPAN = 3000
# The yaml's python_module prefixes and the names OpInfo gives those ops
# (linalg_norm: 'linalg.norm').
_MODULES = ("linalg", "fft", "special", "sparse", "nested")


def opinfo_names(base: str, op: str, python: str | None) -> tuple[set[str], set[str]]:
    """The names an op's OpInfo may have (its own, the Python one: 'nn.functional.gelu',
    'linalg.norm') and the aten names its ``aten_name=`` may give."""
    aten = {base, op}
    names = set(aten)
    for name in aten:
        names.add(f"nn.functional.{name}")
        module = name.split("_", 1)[0]
        if module in _MODULES and "_" in name:
            names.add(f"{module}.{name.split('_', 1)[1]}")
    if python:  # OpInfo names a Python name without torch. (torch.Tensor.add: 'add')
        root, _, rest = python.partition(".")
        full = f"{ALIASES[root]}.{rest}" if root in ALIASES else python
        names.add(full.removeprefix("torch.Tensor.").removeprefix("torch."))
    return names, aten


def opinfo(ctx: TreeContext, base: str, op: str, python: str | None = None) -> list[SourceLoc]:
    """The first few lines that name the op's OpInfo (empty when the file is missing):
    an entry named as the op (or as its Python name) or whose ``aten_name=`` is the op."""
    text = scan.read(ctx.checkout / OPINFO_FILE)
    if not text:
        return []
    names, aten = opinfo_names(base, op, python)
    foreach = base.startswith("_foreach_")
    starts: list[int] = []
    # str.find for the quoted name, then a look at what precedes it: a regex over the
    # whole 1 MB file costs ~0.1 s, this ~5 ms.
    for name in sorted(names):
        name = name.removeprefix("_foreach_")
        for needle in (f"'{name}'", f'"{name}"'):
            at = text.find(needle)
            while at >= 0:
                mo = _OPINFO_BEFORE.search(text, max(0, at - 120), at)
                if mo and (mo.group("info") == "ForeachFuncInfo") == foreach:
                    starts.append(mo.start())
                elif name in aten and _is_aten_name(text, at):
                    entry = _entry_start(text, at)
                    if entry is not None:
                        starts.append(entry)
                at = text.find(needle, at + 1)
    lines = sorted({text.count("\n", 0, start) + 1 for start in starts})
    return [ctx.source_map.loc(OPINFO_FILE, line) for line in lines[:5]]


def _is_aten_name(text: str, at: int) -> bool:
    """Whether the quoted name at ``at`` is the value of ``aten_name=`` (not of
    ``decomp_aten_name=``)."""
    before = text[max(0, at - 40) : at]
    return re.search(r"(?<![\w])aten_name\s*=\s*$", before) is not None


def _entry_start(text: str, at: int) -> int | None:
    found = [m.start() for m in _ENTRY_START.finditer(text, max(0, at - _ENTRY_SPAN), at)]
    return found[-1] if found else None
