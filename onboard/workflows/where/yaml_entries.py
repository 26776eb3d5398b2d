"""An op's entries in native_functions.yaml, as torchgen reads them (``native_yaml``):
schema, kind, variants, structured delegation, dispatch and tags."""

from __future__ import annotations

from typing import Any

from onboard.workflows.opsource.anatomy import YamlEntry
from onboard.workflows.opsource.native_yaml import NATIVE_FUNCTIONS
from onboard.workflows.opsource.paths import SourceMap


def yaml_entries(functions: list[dict[str, Any]], smap: SourceMap) -> list[YamlEntry]:
    return [
        YamlEntry(
            name=f["name"],
            schema=f["schema"],
            kind=f["kind"],
            location=smap.loc(NATIVE_FUNCTIONS, f["line"]),
            variants=tuple(f["variants"]),
            structured=f["structured"],
            structured_delegate=f["structured_delegate"],
            dispatch=f["dispatch"],
            tags=tuple(f["tags"]),
        )
        for f in functions
    ]
