"""The one line `where` and `locate` end with: `onboard reviews` for the files they name."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

_MOST = 3


def line(paths: Iterable[str | None] = (), *, op: str | None = None) -> str | None:
    """ "Past reviews of these files: onboard reviews ..." (None when nothing to name)."""
    if op:
        return f"Past reviews of these files: onboard reviews {shlex.quote(op)}"
    named = [p for p in dict.fromkeys(p for p in paths if p) if not p.startswith(("/", "build/"))]
    if not named:
        return None
    words = " ".join(shlex.quote(p) for p in named[:_MOST])
    return f"Past reviews of these files: onboard reviews {words}"
