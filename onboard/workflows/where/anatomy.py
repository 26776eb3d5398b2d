"""The places of an op's anatomy besides its kernels, layer by layer: the Python entry
points (``torch.trunc``, ``Tensor.trunc_``: where each is defined, or which generated
binding it is, and the aten ops a call on meta tensors reached), its entries in
native_functions.yaml (as torchgen reads them), its derivatives.yaml formulas and its
OpInfo entries (the tests every op gets).

derivatives.yaml: an entry's keys besides ``name`` are formulas (``self: grad * 2``,
``result: auto_element_wise``), except ``output_differentiability`` (which outputs have
a gradient: not a formula) and ``dispatch`` (formulas per autograd key, each shown under
its key), as tools/autograd/load_derivatives.py reads them.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from onboard.workflows.opsource import scan
from onboard.workflows.opsource.anatomy import Derivative, EntryPoint, YamlEntry
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.native_yaml import (
    DERIVATIVES,
    NATIVE_FUNCTIONS,
    NativeEntry,
    YamlIndex,
    op_name,
)
from onboard.workflows.opsource.paths import SourceLoc, SourceMap
from onboard.workflows.where.live import ALIASES
from onboard.workflows.where.query import ResolvedOp

# The Python bindings of torch.X / Tensor.X are generated from the yaml by
# tools/autograd/gen_python_functions.py into these (not in git).
BINDINGS = {
    "torch": "torch/csrc/autograd/generated/python_torch_functions_*.cpp",
    "Tensor": "torch/csrc/autograd/generated/python_variable_methods.cpp",
    "nn": "torch/csrc/autograd/generated/python_nn_functions.cpp",
}


def entry_points(op: ResolvedOp, smap: SourceMap) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in op.entries:
        if not entry.get("exists") or entry["name"] in seen:
            continue
        seen.add(entry["name"])
        source = entry.get("source")
        found.append(
            EntryPoint(
                name=entry["name"],
                kind=entry.get("kind", ""),
                source=smap.map(source["path"], source["line"]) if source else None,
                binding=binding(entry["name"], entry.get("kind", "")),
                top_ops=tuple(entry.get("top_ops", [])),
                dispatched=tuple(entry.get("dispatched", [])),
                call_error=entry.get("call_error"),
            )
        )
    return found


def decomposes_to(op: ResolvedOp) -> list[str]:
    """For a Python name: the ops its call on meta tensors ran other than the op's own
    (``linear`` runs as ``t`` and ``addmm``)."""
    entry = op.entries[0]
    own = {f"aten.{op_name(f.name)}." for f in op.functions}
    return [d for d in entry.get("dispatched", []) if not d.startswith(tuple(own))]


def binding(name: str, kind: str) -> str | None:
    """The generated C++ function a builtin entry point is, and the file it is in."""
    if kind not in ("builtin_function_or_method", "method_descriptor"):
        return None
    if name.startswith("torch.Tensor."):
        where = BINDINGS["Tensor"]
    elif name.startswith(("torch.nn.functional.", "torch._C._nn.")):
        where = BINDINGS["nn"]
    else:
        where = BINDINGS["torch"]
    short = name.rsplit(".", 1)[-1]
    return f"THPVariable_{short} in {where}, generated from {NATIVE_FUNCTIONS}"


def yaml_entries(functions: list[NativeEntry], smap: SourceMap) -> list[YamlEntry]:
    return [
        YamlEntry(
            name=f.name,
            schema=f.schema,
            kind=f.kind,
            location=smap.loc(NATIVE_FUNCTIONS, f.line),
            variants=f.variants,
            structured=f.structured,
            structured_delegate=f.structured_delegate,
            dispatch=f.dispatch,
            tags=f.tags,
        )
        for f in functions
    ]


NOT_FORMULAS = ("output_differentiability", "dispatch")


def derivatives(
    ctx: TreeContext, yaml: YamlIndex, functions: list[NativeEntry]
) -> list[Derivative]:
    smap = ctx.source_map
    names = {f.name for f in functions}
    found = []
    for d in yaml.derivatives_for(names):
        raw = d.formulas
        found.append(
            Derivative(
                d.name,
                smap.loc(DERIVATIVES, d.line),
                formulas(raw),
                _differentiability(raw.get("output_differentiability")),
            )
        )
    return found


def formulas(raw: dict[str, str]) -> dict[str, str]:
    """The entry's formulas; those under ``dispatch:`` as ``self [AutogradNestedTensor]``
    (the ``Default`` key's without a suffix)."""
    out = {k: v for k, v in raw.items() if k not in NOT_FORMULAS}
    table = _literal(raw.get("dispatch"))
    if isinstance(table, dict):
        for key, per_key in table.items():
            if not isinstance(per_key, dict):
                continue
            for spec, formula in per_key.items():
                if spec == "__line__":  # the yaml child's line of that mapping
                    continue
                out[str(spec) if key == "Default" else f"{spec} [{key}]"] = str(formula)
    return out


def _differentiability(text: str | None) -> list[bool] | None:
    value = _literal(text)
    if isinstance(value, list) and all(isinstance(v, bool) for v in value):
        return value
    return None


def _literal(text: str | None) -> Any:
    """A value the yaml child wrote as its Python repr (a list, a dict), or None."""
    if text is None:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


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
