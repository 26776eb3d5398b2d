"""The op's entries in derivatives.yaml: the backward formulas autograd generates from.

An entry's keys besides ``name`` are formulas (``self: grad * 2``, ``result:
auto_element_wise``), except ``output_differentiability`` (which outputs have a
gradient: not a formula) and ``dispatch`` (formulas per autograd key, each shown
under its key), as tools/autograd/load_derivatives.py reads them.
"""

from __future__ import annotations

import ast
from typing import Any

from onboard.workflows.opsource.anatomy import Derivative
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.native_yaml import DERIVATIVES

NOT_FORMULAS = ("output_differentiability", "dispatch")


def derivatives(ctx: TreeContext, yaml: Any, functions: list[dict[str, Any]]) -> list[Derivative]:
    smap = ctx.source_map
    names = {f["name"] for f in functions}
    found = []
    for d in yaml.derivatives_for(names):
        raw: dict[str, str] = d["formulas"]
        found.append(
            Derivative(
                d["name"],
                smap.loc(DERIVATIVES, d["line"]),
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
