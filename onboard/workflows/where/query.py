"""Which op a `where` query names: an aten name's yaml entries (an overload such as
``mm.out`` stands for itself and the structured entries it delegates to), or the op a
Python name stands for by torch's own metadata (its generated binding, or the op named
like the function), with what a call on meta tensors reached as a check, never as the
only source: a call that fails costs the recorded calls, not the table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.errors import BadInput
from onboard.workflows.opsource.native_yaml import NATIVE_FUNCTIONS, NativeEntry, YamlIndex
from onboard.workflows.where.live import BINDING, NAME, LiveAnswers, python_op
from onboard.workflows.where.request import PYTHON, WhereRequest


@dataclass(frozen=True)
class ResolvedOp:
    """``base``: the yaml group (``trunc``); ``name``: the op the query names
    (``trunc_``, ``mm`` for ``mm.out``); ``functions``: its yaml entries the query
    stands for; ``answer``: the live answer about them; ``entries``: the Python entry
    points to show (for a Python name, that name alone); ``notes``: what onboard could
    not check about how the name was resolved."""

    base: str
    functions: list[NativeEntry]
    answer: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    name: str = ""
    notes: list[str] = field(default_factory=list)


def resolve(request: WhereRequest, yaml: YamlIndex, live: LiveAnswers) -> ResolvedOp:
    if request.kind == PYTHON:
        return _python_name(request.name, yaml, live)
    return _op_name(request, yaml, live)


def select(functions: list[NativeEntry], overload: str | None, name: str) -> list[NativeEntry]:
    """The group's entries for ``name.overload``: the overload itself and the structured
    entries it delegates to or that delegate to it; the whole group with no overload."""
    if overload is None:
        return functions
    wanted = f"{name}.{overload}"
    exact = [f for f in functions if f.name == wanted]
    if not exact:
        return []
    delegate = exact[0].structured_delegate
    return [
        f
        for f in functions
        if f.name == wanted or f.name == delegate or f.structured_delegate == wanted
    ]


def _python_name(name: str, yaml: YamlIndex, live: LiveAnswers) -> ResolvedOp:
    answer = live.about_python(name)
    entry = answer["entries"][0]
    if not entry["exists"]:
        raise BadInput(
            f"{name} does not exist in the installed torch ({answer['torch_version']}).",
            next_step="Check the spelling "
            "(`python -c 'import torch; help(torch.nn.functional)'`), "
            "or give the aten op name: `onboard where linear`.",
        )
    op, how = python_op(yaml, entry)
    if op is None:
        raise BadInput(
            f"onboard could not tell which aten op {name} reaches: it is not a generated "
            f"binding of an op, no op in {NATIVE_FUNCTIONS} has its name, and calling it on "
            f"meta tensors failed ({entry.get('call_error') or 'no aten op was recorded'}).",
            next_step="Name the aten op directly (`onboard where OP`), or run a call with "
            "`onboard locate -- python repro.py` to see the chain it takes.",
        )
    base = yaml.base_of(op)
    functions = yaml.named(op)
    dumps = answer.get("dumps") or {}
    if any(f"aten::{f.name}" not in dumps for f in functions):
        # The answer holds the tables of the ops a call reached; this op's come from
        # the index, or a child asked about the op.
        answer = live.about_op(base, functions)
    return ResolvedOp(
        base,
        functions,
        {**answer, "entries": [entry]},
        [entry],
        op,
        _how_notes(name, op, how, entry),
    )


def _how_notes(name: str, op: str, how: str | None, entry: dict[str, Any]) -> list[str]:
    """What onboard could not check about the op a Python name was taken to stand for."""
    error = entry.get("call_error")
    reached = [str(t) for t in entry.get("top_ops", [])]
    if how == BINDING and error:
        return [
            f"Calling {name} on meta tensors failed ({error}), so the ops it runs are not "
            f"recorded; aten::{op} is the op its generated binding is for."
        ]
    if how != NAME:
        return []
    named_like = (
        f"{name} is a Python function, so torch's metadata does not say which op it calls: "
        f"aten::{op} is the op of {NATIVE_FUNCTIONS} named like it"
    )
    if error:
        return [f"{named_like}, and calling it on meta tensors failed ({error}) to check it."]
    if reached and not any(r.split("::", 1)[-1].split(".", 1)[0] == op for r in reached):
        return [
            f"{named_like}; its call on meta tensors reached {', '.join(reached)} instead "
            "(which op runs may depend on the arguments)."
        ]
    if not reached:
        return [f"{named_like}; no call on meta tensors was recorded to check it."]
    return []


def _op_name(request: WhereRequest, yaml: YamlIndex, live: LiveAnswers) -> ResolvedOp:
    name, overload = request.name, request.overload
    base = yaml.base_of(name)
    if overload is None and name != base:
        functions = yaml.named(name)  # an in-place op (trunc_), a dunder (__iand__)
    else:
        functions = select(yaml.group(base), overload, name)
    if not functions:
        suggestions = yaml.suggest(f"{name}.{overload}" if overload else name)
        raise BadInput(
            f"There is no op {request.query!r} in {NATIVE_FUNCTIONS} at this commit."
            + (f" Closest names: {', '.join(suggestions)}." if suggestions else ""),
            next_step=f"Run `onboard where {suggestions[0]}`."
            if suggestions
            else "Check the name against the yaml (`grep -n 'func: NAME' "
            f"{NATIVE_FUNCTIONS}`) or give a Python name such as `torch.trunc`.",
        )
    answer = live.about_op(base, functions)
    return ResolvedOp(base, functions, answer, list(answer["entries"]), name)
