"""Which op a `where` query names: an aten name's yaml entries, or the aten op a Python
name reaches (recorded by calling it on meta tensors in the live child)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.errors import BadInput
from onboard.workflows.opsource.native_yaml import NATIVE_FUNCTIONS
from onboard.workflows.where.live_answers import LiveAnswers
from onboard.workflows.where.names import base_of, select
from onboard.workflows.where.request import PYTHON, WhereRequest


@dataclass(frozen=True)
class ResolvedOp:
    """``base``: the yaml group (``trunc``); ``functions``: its yaml entries the query
    stands for; ``answer``: the live answer about them; ``entries``: the Python entry
    points to show (for a Python name, that name alone)."""

    base: str
    functions: list[dict[str, Any]]
    answer: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)


def resolve(request: WhereRequest, yaml: Any, live: LiveAnswers) -> ResolvedOp:
    if request.kind == PYTHON:
        return _python_name(request.name, yaml, live)
    return _op_name(request, yaml, live)


def _python_name(name: str, yaml: Any, live: LiveAnswers) -> ResolvedOp:
    answer = live.about_python(name)
    entry = answer["entries"][0]
    if not entry["exists"]:
        raise BadInput(
            f"{name} does not exist in the installed torch ({answer['torch_version']}).",
            next_step="Check the spelling "
            "(`python -c 'import torch; help(torch.nn.functional)'`), "
            "or give the aten op name: `onboard where linear`.",
        )
    top = [t.split("::", 1)[1] for t in entry.get("top_ops", [])]
    if not top:
        # Nothing was recorded (the call needs real arguments): fall back to the name.
        short = name.rsplit(".", 1)[-1]
        top = [short] if yaml.group(short.rstrip("_")) or yaml.group(short) else []
    if not top:
        raise BadInput(
            f"onboard could not tell which aten op {name} reaches: calling it on meta tensors "
            f"failed ({entry.get('call_error') or 'no aten op was recorded'}) and no op in "
            f"{NATIVE_FUNCTIONS} has its name.",
            next_step="Name the aten op directly (`onboard where OP`), or run a call with "
            "`onboard locate -- python repro.py` to see the chain it takes.",
        )
    base = base_of(yaml, top[0])
    return ResolvedOp(base, yaml.group(base), answer, [entry])


def _op_name(request: WhereRequest, yaml: Any, live: LiveAnswers) -> ResolvedOp:
    name, overload = request.name, request.overload
    base = base_of(yaml, name)
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
    return ResolvedOp(base, functions, answer, list(answer["entries"]))
