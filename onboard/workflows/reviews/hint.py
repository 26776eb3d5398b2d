"""The one line `where` and `locate` end with: `onboard reviews` for the files they name."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

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


def show(console: Any, result: Any) -> None:
    """Print the line for a `where` (its query) or `locate` result (the files it names
    in the checkout: the raising line, the chain, the best matches)."""
    from rich.markup import escape

    query = getattr(result, "query", None) if hasattr(result, "yaml_entries") else None
    locs = [getattr(result, "check", None)]
    locs += [getattr(layer, "location", None) for layer in getattr(result, "chain", [])]
    locs += [c.location for c in getattr(result, "candidates", [])[:_MOST]]
    text = line(
        (loc.path for loc in locs if loc is not None and getattr(loc, "in_checkout", False)),
        op=query,
    )
    if text:
        console.print(f"\n[dim]{escape(text)}[/]")
