"""An op's names in native_functions.yaml: the group a name belongs to, the entries
an overload (``mm.out``) or an op name (``scatter_add_``) stands for, and the op a
Python name stands for."""

from __future__ import annotations

from typing import Any

# How a Python name's op was told (the live child's entry "aten_from", or a call).
BINDING = "binding"  # a generated binding, named as its op (THPVariable_masked_select)
NAME = "name"  # a Python function named like an op of the yaml (F.log_softmax)
CALL = "call"  # the op a call on meta tensors reached


def op_name(entry_name: str) -> str:
    """``add_`` for ``add_.Tensor``: the name without its overload."""
    return entry_name.split(".", 1)[0]


def base_of(yaml: Any, name: str) -> str:
    """The yaml group of ``name`` (``trunc`` for ``trunc_`` and ``trunc.out``, ``and``
    for ``__iand__``)."""
    entry = yaml.by_name.get(name)
    if entry is not None:
        return str(entry["base"])
    base = op_name(name)
    named = next((f for f in yaml.functions if op_name(f["name"]) == base), None)
    if named is not None:
        return str(named["base"])
    if yaml.group(base):
        return base
    stripped = base.rstrip("_")
    return stripped if yaml.group(stripped) else base


def named(yaml: Any, name: str) -> list[dict[str, Any]]:
    """The entries an op name without overload stands for: its every overload
    (``add_``: ``add_.Tensor``, ``add_.Scalar``) and the structured entries they
    delegate to (``scatter_add_``: ``scatter_add.out``), in yaml order."""
    group = yaml.group(base_of(yaml, name))
    exact = [f for f in group if op_name(f["name"]) == name]
    wanted = {f["name"] for f in exact} | {f["structured_delegate"] for f in exact}
    return [f for f in group if f["name"] in wanted]


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


def python_op(yaml: Any, entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """The yaml op a Python entry point stands for and how that was told: its
    generated binding's op or an op named like it (torch's metadata, no call), else
    the first op a call on meta tensors reached; (None, None) when none is in the yaml."""
    ops = {op_name(f["name"]) for f in yaml.functions}
    for name in entry.get("aten", []):
        if name in ops:
            return str(name), str(entry.get("aten_from") or NAME)
    for top in entry.get("top_ops", []):
        name = op_name(str(top).split("::", 1)[-1])
        if name in ops:
            return name, CALL
    return None, None
