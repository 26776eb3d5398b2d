"""The op's entries in derivatives.yaml: the backward formulas autograd generates from."""

from __future__ import annotations

from typing import Any

from onboard.workflows.opsource.anatomy import Derivative
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.native_yaml import DERIVATIVES


def derivatives(ctx: TreeContext, yaml: Any, functions: list[dict[str, Any]]) -> list[Derivative]:
    smap = ctx.source_map
    names = {f["name"] for f in functions}
    return [
        Derivative(d["name"], smap.loc(DERIVATIVES, d["line"]), d["formulas"])
        for d in yaml.derivatives_for(names)
    ]
