"""The state of a tree that harvest's cached result is kept for: HEAD and every change.

Kept apart from ``collect`` (and light to import) so that `git status` can
start before the rest of harvest is imported.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from onboard.errors import OnboardError


@dataclass(frozen=True)
class TreeState:
    head: str
    changed: dict[str, list[int] | None]  # changed/untracked path -> [size, mtime_ns] (None: gone)


def tree_state(root: Path) -> TreeState | None:
    """HEAD and the state of every changed file, or None outside a git work tree's top."""
    if not (root / ".git").exists():
        return None
    from onboard import git

    try:
        status = git.status_v2(root)
    except OnboardError:
        return None
    if status is None:
        return None
    head, changed = status
    if head is None:
        return None
    stats: dict[str, list[int] | None] = {}
    for rel in sorted(changed):
        try:
            st = (root / rel).stat()
            stats[rel] = [st.st_size, st.st_mtime_ns]
        except OSError:
            stats[rel] = None
    return TreeState(head, stats)


def start_tree_state(root: Path) -> Future[TreeState | None]:
    """``tree_state(root)`` in a thread (its `git status` runs in a process of its own)."""
    pending: Future[TreeState | None] = Future()

    def run() -> None:
        try:
            pending.set_result(tree_state(root))
        except BaseException as exc:  # handed to whoever waits for it
            pending.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return pending
