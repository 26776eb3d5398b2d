"""The state of a tree that harvest's cached result is kept for: HEAD and every change.

Kept apart from ``collect`` (and light to import) so that `git status` can
start before the rest of harvest is imported.
"""

from __future__ import annotations

import threading
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


class PendingState:
    """``tree_state(root)`` computed in a thread; ``result()`` waits for it.

    (Not concurrent.futures: importing it, and the logging it pulls in, costs
    a warm harvest more than the `git status` it overlaps.)"""

    def __init__(self, root: Path) -> None:
        self._value: TreeState | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(root,), daemon=True)
        self._thread.start()

    def _run(self, root: Path) -> None:
        try:
            self._value = tree_state(root)
        except BaseException as exc:  # handed to whoever waits for it
            self._error = exc

    def result(self) -> TreeState | None:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def start_tree_state(root: Path) -> PendingState:
    """``tree_state(root)`` in a thread (its `git status` runs in a process of its own)."""
    return PendingState(root)
