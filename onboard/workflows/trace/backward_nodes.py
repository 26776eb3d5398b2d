"""Autograd Node classes (``MulBackward0``) and the derivatives.yaml entries behind them.

tools/autograd/load_derivatives.py names the generated C++ class of each
entry that has a derivative for at least one input: the op's base name in
CamelCase plus ``Backward`` (``_foreach_add_`` -> ``ForeachAddBackward``,
``...ForwardBackward`` -> ``...Backward``), the autograd dispatch key when
the entry has per-key formulas, and a counter per prefix in yaml order
(``mul.Tensor`` -> ``MulBackward0``, ``mul.Scalar`` -> ``MulBackward1``).
Views copied for functionalization get ``_copy`` classes with their view's
formula. The classes live in the generated
``torch/csrc/autograd/generated/Functions.h`` / ``Functions.cpp`` (written by
the build, not in git; the wheel ships the header).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

from onboard.workflows.opsource.native_yaml import DerivativeEntry

FUNCTIONS_H = "torch/csrc/autograd/generated/Functions.h"
_NOT_FORMULAS = {"output_differentiability", "dispatch", "result"}


@dataclass(frozen=True)
class BackwardEntry:
    node: str  # MulBackward0
    op: str  # mul.Tensor
    line: int
    formulas: dict[str, str]


def _prefix(base: str) -> str:
    camel = "".join(part.title() for part in base.split("_"))
    return (camel + "Backward").replace("ForwardBackward", "Backward")


def _arguments(schema: str) -> set[str]:
    """The input names of ``mul.Tensor(Tensor self, Tensor other) -> Tensor``."""
    start = schema.find("(")
    end = schema.rfind(") ->")
    if start < 0 or end < 0:
        return set()
    depth = 0
    parts, current = [], ""
    for ch in schema[start + 1 : end]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    names = set()
    for part in parts:
        words = part.split("=", 1)[0].split()
        if words and words[-1] != "*":
            names.add(words[-1])
    return names


def _per_key(formulas: dict[str, str]) -> dict[str, dict[str, str]]:
    if "dispatch" not in formulas:
        return {"Default": formulas}
    try:
        table = ast.literal_eval(formulas["dispatch"])
    except (ValueError, SyntaxError):
        return {"Default": formulas}
    return {
        str(k): {str(a): str(b) for a, b in v.items() if a != "__line__"}
        for k, v in table.items()
        if isinstance(v, dict)
    }


def index(derivatives: list[DerivativeEntry]) -> dict[str, BackwardEntry]:
    """Node class name -> its entry, for every derivatives.yaml entry (yaml order)."""
    counter: Counter[str] = Counter()
    out: dict[str, BackwardEntry] = {}
    for d in derivatives:
        op = d.op
        inputs = _arguments(d.name)
        for key, formulas in _per_key(dict(d.formulas)).items():
            differentiable = [
                name.strip()
                for spec, formula in formulas.items()
                if spec not in _NOT_FORMULAS and formula.strip() != "non_differentiable"
                for name in spec.split(",")
                if name.strip() in inputs
            ]
            if not differentiable:
                continue
            prefix = _prefix(op.split(".", 1)[0]) + ("" if key == "Default" else key)
            node = f"{prefix}{counter[prefix]}"
            counter[prefix] += 1
            out[node] = BackwardEntry(node, op, d.line, formulas)
    return out


def lookup(entries: dict[str, BackwardEntry], node_class: str) -> BackwardEntry | None:
    return entries.get(node_class) or entries.get(re.sub(r"_copy$", "", node_class))
