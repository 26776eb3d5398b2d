"""The state of a git work tree: HEAD and the size and mtime of every changed file.

What a result cached per tree is kept for (harvest's): the same state again
means the same files.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from onboard import proc
from onboard.errors import OnboardError


@dataclass(frozen=True)
class TreeState:
    head: str
    changed: dict[str, list[int] | None]  # changed/untracked path -> [size, mtime_ns] (None: gone)


class PendingState:
    """The ``TreeState`` of ``root`` with its `git status` already running: ``result()``
    waits for git and stats the changed files (None outside a git work tree's top).

    (A process, not a thread: a thread of ours would compete with the cache read it
    is meant to overlap, for the interpreter's one lock.)"""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._status: PendingStatus | None = None
        if (root / ".git").exists():
            # git missing or not runnable: no state, and so no cache
            with contextlib.suppress(OnboardError):
                self._status = start_status_v2(root)

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

    def stop(self) -> None:
        """No answer wanted any more (the run failed on something else)."""
        if self._status is not None:
            self._status.stop()


def start_tree_state(root: Path) -> PendingState:
    """The state of ``root``, its `git status` started now."""
    return PendingState(root)


# --------------------------------------------------------------------------
# `git status --porcelain=v2`, started now and read when wanted


class PendingStatus:
    """``status_v2`` started now: git works on while the caller does other things;
    ``result()`` waits for it (``stop()`` when the answer is no longer wanted)."""

    def __init__(self, repo: str | os.PathLike[str], timeout: float) -> None:
        self._repo = repo
        self._timeout = timeout
        # Untracked folders are listed as folders first and only those are walked
        # file by file: `--untracked-files=all` over a whole PyTorch checkout costs
        # about half again as much, and nearly always finds no untracked folder.
        self._running = _start_status(repo, "normal", (), timeout)

    def result(self) -> tuple[str | None, list[str]] | None:
        """(HEAD sha, changed or untracked paths): files, relative to the top of the
        work tree; a rename comes as a delete and an add. None when git cannot say
        (not a repository, git failed)."""
        found = _status_entries(self._running.result())
        if found is None:
            return None
        head, paths = found
        folders = [p for p in paths if p.endswith("/")]
        if folders:
            inside = _status_entries(
                _start_status(self._repo, "all", folders, self._timeout).result()
            )
            if inside is None:
                return None
            paths = sorted({p for p in paths if not p.endswith("/")} | set(inside[1]))
        return head, paths

    def stop(self) -> None:
        self._running.stop()


def start_status_v2(repo: str | os.PathLike[str], *, timeout: float = 120) -> PendingStatus:
    return PendingStatus(repo, timeout)


def _start_status(
    repo: str | os.PathLike[str], untracked: str, pathspec: Sequence[str], timeout: float
) -> proc.Running:
    # Not under ``signals.critical`` as other git calls are: with no optional lock
    # (``gitlock.read_only_env``), status writes nothing, not even git's stat cache, so it
    # never holds index.lock when another writer needs it. (The price: git never
    # writes back the stat data it refreshed, so the files of a tree written in the
    # same second as its index are re-read on each call until a writer refreshes it.)
    return proc.start(
        [
            "git",
            "-C",
            os.fspath(repo),
            "status",
            "--porcelain=v2",
            "-z",
            "--branch",
            "--no-ahead-behind",
            f"--untracked-files={untracked}",
            "--no-renames",
            "--ignore-submodules=dirty",
            *(["--", *(f":(literal){p}" for p in pathspec)] if pathspec else []),
        ],
        check=False,
        timeout=timeout,
        what="`git status`",
        extra_env={"GIT_OPTIONAL_LOCKS": "0"},  # (gitlock.read_only_env)
    )


def _status_entries(result: proc.Result) -> tuple[str | None, list[str]] | None:
    if result.returncode != 0:
        return None
    head: str | None = None
    paths: list[str] = []
    for entry in result.stdout.split("\0"):
        if entry.startswith("# branch.oid "):
            oid = entry.split()[2]
            head = oid if oid != "(initial)" else None
        elif entry.startswith(("1 ", "u ")):
            # "1 XY sub mH mI mW hH hI path" / "u XY sub m1 m2 m3 mW h1 h2 h3 path"
            fields = 9 if entry[0] == "1" else 11
            parts = entry.split(" ", fields - 1)
            if len(parts) == fields:
                paths.append(parts[-1])
        elif entry.startswith("? "):
            paths.append(entry[2:])
    return head, paths
