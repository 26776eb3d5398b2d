"""The state of a git work tree: HEAD and the size and mtime of every changed file.

What a result cached per tree is kept for (harvest's): the same state again
means the same files. Light to import, so that its `git status` can start
before the rest of a command is imported (``headstart``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from onboard import git
from onboard.errors import OnboardError


@dataclass(frozen=True)
class TreeState:
    head: str
    changed: dict[str, list[int] | None]  # changed/untracked path -> [size, mtime_ns] (None: gone)


def tree_state(root: Path) -> TreeState | None:
    """HEAD and the state of every changed file, or None outside a git work tree's top."""
    return start_tree_state(root).result()


class PendingState:
    """``tree_state(root)`` with its `git status` already running: ``result()`` waits
    for git and stats the changed files.

    (A process, not a thread: a thread of ours would compete with the imports and
    the cache read it is meant to overlap, for the interpreter's one lock.)"""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._status: git.PendingStatus | None = None
        if (root / ".git").exists():
            # git missing or not runnable: no state, and so no cache
            with contextlib.suppress(OnboardError):
                self._status = git.start_status_v2(root)

    def result(self) -> TreeState | None:
        if self._status is None:
            return None
        try:
            status = self._status.result()
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
                st = (self._root / rel).stat()
                stats[rel] = [st.st_size, st.st_mtime_ns]
            except OSError:
                stats[rel] = None
        return TreeState(head, stats)

    @property
    def pid(self) -> int | None:
        """The `git status` process (None: none was started, not a git work tree)."""
        return self._status.pid if self._status is not None else None

    def stop(self) -> None:
        """No answer wanted any more (the run failed on something else)."""
        if self._status is not None:
            self._status.stop()


def start_tree_state(root: Path) -> PendingState:
    """``tree_state(root)``, its `git status` started now."""
    return PendingState(root)
