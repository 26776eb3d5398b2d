"""An op's names in native_functions.yaml: the group a name belongs to, and the entries
an overload (``mm.out``) stands for."""

from __future__ import annotations

from typing import Any


def base_of(yaml: Any, name: str) -> str:
    """The yaml group of ``name`` (``trunc`` for ``trunc_`` and ``trunc.out``)."""
    entry = yaml.by_name.get(name)
    if entry is not None:
        return str(entry["base"])
    base = name.split(".", 1)[0]
    if yaml.group(base):
        return base
    stripped = base.rstrip("_")
    return stripped if yaml.group(stripped) else base


def select(
    functions: list[dict[str, Any]], overload: str | None, name: str
) -> list[dict[str, Any]]:
    """The group's entries for ``name.overload``: the overload itself and the structured
    entries it delegates to or that delegate to it; the whole group with no overload."""
    if overload is None:
        return functions
    wanted = f"{name}.{overload}"
    exact = [f for f in functions if f["name"] == wanted]
    if not exact:
        return []
    delegate = exact[0]["structured_delegate"]
    return [
        f
        for f in functions
        if f["name"] == wanted or f["name"] == delegate or f["structured_delegate"] == wanted
    ]
