"""`onboard ab`'s run folders and the temporary worktrees in them: recognisably
onboard's, and removed when the run that made them is dead.

Each run works in ``WS/.onboard/ab/run-XXXXXXXX/`` (a ``commit:REV`` side's
worktree is ``worktree-A`` or ``worktree-B`` in it) and keeps the folder's
owner file ``flock``-ed while it runs, as ``onboard/staging.py`` does for
setup's staging folders. A run killed outright (SIGKILL) cannot remove its
worktree, and git keeps it registered; the next run, or `onboard recover`,
removes every worktree whose run folder is onboard's and whose owner is dead
(``git worktree remove --force``). A worktree anywhere else, or in a folder
without an owner file (the user's own), is never touched; nor is one whose
owner still runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from onboard import git, lock
from onboard.staging import LEGACY_AGE, OWNER, Staging

RUNS = Path(".onboard") / "ab"  # under the workspace
RUN_PREFIX = "run-"
TREE_PREFIX = "worktree-"


def make_run_folder(parent: Path | None) -> Staging:
    """A fresh ``run-XXXXXXXX`` folder in ``parent`` (a temporary folder when None),
    with its owner file held by this process until ``release()``."""
    path = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=parent))
    fd = None
    try:
        fd = os.open(path / OWNER, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        if fd is not None:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        raise
    return Staging(path, fd)


def _is_run_folder(folder: Path) -> bool:
    """A folder an `onboard ab` made: ``.onboard/ab/run-*`` (under any workspace)."""
    return folder.name.startswith(RUN_PREFIX) and folder.parent.parts[-2:] == RUNS.parts


def _dead(run: Path) -> bool:
    """Whether the run that owns ``run`` is over: its owner file is held by no process.
    A run folder of an onboard that kept no owner file counts as dead after a day."""
    owner = run / OWNER
    if owner.exists():
        return not lock.is_held(owner)
    try:
        return time.time() - run.stat().st_mtime > LEGACY_AGE
    except OSError:
        return True  # gone already: only git's record of its worktree is left


def sweep_dead_worktrees(repo: Path) -> list[Path]:
    """Remove the worktrees of ``repo`` that an `onboard ab` killed outright left (and
    their run folders); returns the worktrees removed."""
    removed: list[Path] = []
    try:
        trees = git.worktree.list_all(repo)[1:]  # the first is the main work tree
    except Exception:  # noqa: BLE001 - not a repository (any more): nothing of ours to sweep
        return removed
    for tree in trees:
        run = tree.parent
        if not (tree.name.startswith(TREE_PREFIX) and _is_run_folder(run) and _dead(run)):
            continue
        git.worktree.remove(repo, tree)
        if tree not in git.worktree.list_all(repo):
            removed.append(tree)
            shutil.rmtree(run, ignore_errors=True)
    return removed


def sweep_dead_runs(parent: Path) -> list[Path]:
    """Remove the run folders in ``parent`` (``WS/.onboard/ab``) whose runs are dead and
    that hold no worktree git still knows (``sweep_dead_worktrees`` goes first)."""
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for run in sorted(parent.iterdir()):
            if not run.is_dir() or run.is_symlink() or not _is_run_folder(run):
                continue
            if any(_registered(p) for p in run.glob(TREE_PREFIX + "*")) or not _dead(run):
                continue
            shutil.rmtree(run, ignore_errors=True)
            removed.append(run)
    return removed


def _registered(tree: Path) -> bool:
    """Whether git still keeps a record of the worktree ``tree`` (its ``.git`` file names
    an administrative folder in the repository that exists)."""
    try:
        text = (tree / ".git").read_text(encoding="utf-8")
    except OSError:
        return False
    return text.startswith("gitdir: ") and Path(text[len("gitdir: ") :].strip()).is_dir()
