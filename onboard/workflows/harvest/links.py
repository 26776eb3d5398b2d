"""Which files of the tree GitHub has as they are here, for the items' links.

A file only this checkout has (a new-op branch's) has no page at the installed
commit; one changed here is linked without a line anchor (its lines moved).
What differs from the installed commit costs git a diff and a status
(``SourceMap.local_changes``); a warm harvest asks git for nothing but its own
status, so the answer is kept next to the harvest's cached result, for the
same HEAD, and reused while that result is (the working tree as it was).
"""

from __future__ import annotations

from pathlib import Path

from onboard.cache import read_valid, sha1_hex, write_json
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.target import Target

_SHAPE = {"key": str, "changes": {str: str}}


def add_links(
    target: Target, items: list[Item], *, head: str | None, cache: Path | None, reuse: bool
) -> None:
    """Each item's ``url``: its line on GitHub at the installed commit."""
    if not items:
        return
    changes = local_changes(target, head, cache, reuse=reuse)
    for item in items:
        item.url = target.url(item.path, item.line, changes)


def local_changes(
    target: Target, head: str | None, cache: Path | None, *, reuse: bool
) -> dict[str, str]:
    """path -> "added" / "modified" against the installed commit ({} without a workspace)."""
    if target.ws is None:
        return {}
    from onboard.workflows.opsource.paths import SourceMap

    ws = target.ws
    key = "|".join((str(target.root), ws.commit or "", str(ws.extra.get("head") or ""), head or ""))
    path = cache / f"links-{sha1_hex(key.encode())[:16]}.json" if cache is not None else None
    if reuse and path is not None:
        stored = read_valid(path, _SHAPE)
        if stored.get("key") == key:
            return dict(stored["changes"])
    changes = SourceMap(ws).local_changes()
    if path is not None:
        write_json(path, {"key": key, "changes": changes})
    return changes
