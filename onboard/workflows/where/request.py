"""What `onboard where` was asked: an aten op name or a Python name, and how to answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

from onboard.errors import BadInput

_PY_ROOTS = ("torch.", "Tensor.", "F.", "nn.")
_OP_NAME = re.compile(r"^(?:aten::)?(?P<name>[A-Za-z_]\w*)(?:\.(?P<overload>\w+))?$")
OP = "op"
PYTHON = "python"


def parse_query(query: str) -> tuple[str, str, str | None]:
    """("op"|"python", name, overload) for ``trunc``, ``aten::mm.out``, ``torch.X.y``."""
    text = query.strip()
    if not text:
        raise BadInput(
            "No op was given.",
            next_step="Name one: `onboard where trunc`, `onboard where aten::mm.out` or "
            "`onboard where torch.nn.functional.linear`.",
        )
    if text.startswith(_PY_ROOTS) and not text.startswith("aten::"):
        if not re.fullmatch(r"[A-Za-z_][\w.]*", text):
            raise BadInput(
                f"{query!r} is not a Python name.",
                next_step="Give a dotted name such as `torch.nn.functional.linear` or "
                "`Tensor.trunc`.",
            )
        return PYTHON, text, None
    mo = _OP_NAME.match(text)
    if not mo:
        raise BadInput(
            f"{query!r} is neither an aten op name nor a Python entry point.",
            next_step="Use `onboard where trunc`, `onboard where aten::mm.out` or "
            "`onboard where torch.trunc`.",
        )
    return OP, mo.group("name"), mo.group("overload")


@dataclass(frozen=True)
class WhereRequest:
    """``query`` as typed; ``kind``, ``name`` and ``overload`` as `parse_query` reads it;
    ``generated``: regenerate torchgen's files to show their lines; ``refresh``: ask the
    installed torch again instead of onboard's cache; ``workspace``, ``python``: as
    everywhere (None: found from the current folder, the interpreter running onboard)."""

    query: str
    kind: str
    name: str
    overload: str | None
    generated: bool = False
    refresh: bool = False
    workspace: str | None = None
    python: str | None = None

    @classmethod
    def parse(
        cls,
        query: str,
        *,
        generated: bool = False,
        refresh: bool = False,
        workspace: str | None = None,
        python: str | None = None,
    ) -> WhereRequest:
        kind, name, overload = parse_query(query)
        return cls(query, kind, name, overload, generated, refresh, workspace, python)
