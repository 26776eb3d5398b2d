"""What the work tree holds against HEAD: `git status` (now, or started ahead and read
later), the paths that changed, the files the index tracks, and the stat cache.

A result kept per tree (harvest's) is keyed by ``TreeState``: HEAD and the size and
mtime of every changed file; the same state again means the same files.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from onboard import proc
from onboard.errors import OnboardError
from onboard.git import core, refs
from onboard.git.core import PathLike


def status_porcelain(repo: PathLike, *, untracked: bool = True) -> list[str]:
    """`git status --porcelain=v1` lines, each ``XY path`` with its two status columns
    intact (not `core.out()`: stripping the output would eat the first line's leading space
    and shift its path by one character)."""
    args = ["status", "--porcelain=v1"]
    if not untracked:
        args.append("--untracked-files=no")
    return [ln for ln in core.git(repo, *args).stdout.splitlines() if ln.strip()]


def porcelain_path(line: str) -> str:
    """The path of one `status_porcelain` line (the new name of a rename)."""
    path = line[3:]
    return path.split(" -> ", 1)[-1]


def tracked_changes(repo: PathLike) -> list[str]:
    """Paths of tracked files that differ from HEAD, in the index or the work tree
    (``-z``: names with spaces or non-ASCII come through as they are)."""
    raw = core.git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=no").stdout
    fields = raw.split("\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC":  # a rename's old name follows as a field of its own
            paths.append(fields[i])
            i += 1
    return paths


def tracked_files(repo: PathLike) -> list[str]:
    """Every path the index tracks."""
    return core.git(repo, "ls-files", "-z", timeout=300, whole=False).stdout.split("\x00")[:-1]


def changes_since(repo: PathLike, base: str) -> dict[str, str]:
    """Paths that differ from ``base`` in the working tree: ``added`` or ``modified``
    (committed since, staged, unstaged or untracked alike).

    One scan of the working tree (`git status`) plus, when HEAD moved past
    ``base``, a tree-to-tree diff that reads no files.
    """
    changes: dict[str, str] = {}
    head = refs.head_sha(repo)
    if head and head != base:
        diff = core.git(repo, "diff", "--name-status", "--no-renames", base, head, check=False)
        for line in diff.stdout.splitlines():
            kind, _, path = line.partition("\t")
            if kind[:1] == "A":
                changes[path] = "added"
            elif kind[:1] in ("M", "T"):
                changes[path] = "modified"
    tree = core.git(
        repo, "status", "--porcelain=v1", "--untracked-files=all", "--no-renames", check=False
    )
    for line in tree.stdout.splitlines():
        code, path = line[:2], line[3:]
        if code == "??" or "A" in code:
            changes[path] = "added"
        elif code.strip() and "D" not in code and changes.get(path) != "added":
            changes[path] = "modified"
    return changes


_COARSE_CLOCK_LAG = 0.05  # seconds: several ticks even at HZ=100


def refresh_index(repo: PathLike) -> None:
    """Bring git's stat cache up to date (a writer's `git update-index --refresh`) for a
    tree just written; a failure only leaves it as it was.

    git trusts a file's cached stat only when the file is older than the index, to
    the second (git's Documentation/technical/racy-git.txt): an index written in the
    same second as the files leaves them "racily clean", re-read by every read-only
    `git status` (0.13 s on the wheel's 12k files), which writes nothing back. So the
    refresh waits for the next second first (at most one, once per new tree).

    The wait runs a little past the second: file times come from the kernel's coarse
    clock, which trails ``time.time()`` by up to a scheduler tick (1-10 ms), so an
    index written right at the top of the second could still be stamped with the old
    one."""
    now = time.time()
    time.sleep(math.floor(now) + 1 + _COARSE_CLOCK_LAG - now)
    core.git(repo, "update-index", "-q", "--refresh", check=False)


def tree_matches_head(repo: PathLike) -> bool:
    """No tracked file differs from HEAD, in the index or the work tree (one cheap call)."""
    return core.git(repo, "diff-index", "--quiet", "HEAD", "--", check=False).returncode == 0


# --- `git status --porcelain=v2`, started now and read when wanted ---------------


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


class PendingStatus:
    """``status_v2`` started now: git works on while the caller does other things;
    ``result()`` waits for it (``stop()`` when the answer is no longer wanted)."""

    def __init__(self, repo: PathLike, timeout: float) -> None:
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


def start_status_v2(repo: PathLike, *, timeout: float = 120) -> PendingStatus:
    return PendingStatus(repo, timeout)


def _start_status(
    repo: PathLike, untracked: str, pathspec: Sequence[str], timeout: float
) -> proc.Running:
    # Started ahead and not whole, as no other git call is: with no optional lock
    # (``core.read_only_env``), status writes nothing, not even git's stat cache, so it
    # never holds index.lock when another writer needs it. (The price: git never
    # writes back the stat data it refreshed, so the files of a tree written in the
    # same second as its index are re-read on each call until a writer refreshes it.)
    return core.start(
        repo,
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--no-ahead-behind",
        f"--untracked-files={untracked}",
        "--no-renames",
        "--ignore-submodules=dirty",
        *(["--", *(f":(literal){p}" for p in pathspec)] if pathspec else []),
        timeout=timeout,
        what="`git status`",
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
