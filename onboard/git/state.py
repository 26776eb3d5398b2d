"""What git says about a repository's state, for the transaction's rollback and audit.

The user's own git runs between and during onboard's steps, so a rollback
asks, before every write back: is HEAD still where onboard put it, is each
changed file still what onboard wrote, did onboard (by its reflog name) or
the user move this ref, is git in the middle of the user's own operation.
Plain types out; every call goes through ``core.git``. (The paths that changed are
``status.tracked_changes``; the branches each work tree has out, ``worktree``'s.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from onboard.git import core, refs, repository
from onboard.git.core import PathLike


@dataclass(frozen=True)
class Operation:
    """A multi-step git operation the user has in progress."""

    name: str  # "a rebase"
    finish: str  # the command that finishes it
    abort: str  # the command that abandons it


# Markers in a work tree's own git folder (per worktree, like HEAD), as git's
# own `wt_status_get_state` (wt-status.c) reads them; the first match names it.
_OPERATIONS: tuple[tuple[str, Operation], ...] = (
    ("rebase-merge", Operation("a rebase", "git rebase --continue", "git rebase --abort")),
    ("rebase-apply/applying", Operation("a `git am`", "git am --continue", "git am --abort")),
    ("rebase-apply", Operation("a rebase", "git rebase --continue", "git rebase --abort")),
    ("MERGE_HEAD", Operation("a merge", "git commit", "git merge --abort")),
    (
        "CHERRY_PICK_HEAD",
        Operation("a cherry-pick", "git cherry-pick --continue", "git cherry-pick --abort"),
    ),
    ("REVERT_HEAD", Operation("a revert", "git revert --continue", "git revert --abort")),
    (
        "sequencer",
        Operation(
            "a cherry-pick or revert", "git cherry-pick --continue", "git cherry-pick --quit"
        ),
    ),
    ("BISECT_START", Operation("a bisect", "git bisect good|bad", "git bisect reset")),
)


def operation_in_progress(repo: PathLike) -> Operation | None:
    """The rebase, merge, cherry-pick, revert, am or bisect the user has started
    in this work tree and not finished, if any."""
    folder = repository.git_dir(repo)
    for marker, operation in _OPERATIONS:
        if (folder / marker).exists():
            return operation
    return None


def reflog_newest(repo: PathLike, ref: str) -> tuple[str, str] | None:
    """(sha, message) of the newest reflog entry of ``ref``; None without a reflog."""
    result = core.git(repo, "log", "-g", "-1", "--format=%H %gs", ref, "--", check=False)
    line = result.stdout.strip()
    if result.returncode != 0 or not line:
        return None
    sha, _, message = line.partition(" ")
    return sha, message


def paths_only_in(repo: PathLike, target: str, head: str) -> list[str]:
    """Paths ``target`` tracks that ``head`` does not: a checkout of ``target``
    writes them, over an untracked file of the same name if one is there."""
    raw = core.git(
        repo, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", head, target
    ).stdout
    return [p for p in raw.split("\0") if p]


def blob_of_file(repo: PathLike, path: Path, *, as_path: str) -> str | None:
    """The blob git would store for the file at ``path`` under the name ``as_path``
    (its clean filters, ``core.autocrlf`` among them, applied)."""
    result = core.git(repo, "hash-object", f"--path={as_path}", "--", os.fspath(path), check=False)
    return (result.stdout.strip() or None) if result.returncode == 0 else None


def index_blobs(repo: PathLike, paths: list[str]) -> dict[str, str]:
    """path -> the blob the index holds for it (stage 0)."""
    if not paths:
        return {}
    raw = core.git(repo, "ls-files", "-s", "-z", "--", *paths).stdout
    blobs: dict[str, str] = {}
    for entry in filter(None, raw.split("\0")):
        meta, _, name = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[2] == "0":
            blobs[name] = parts[1]
    return blobs


def unstage(repo: PathLike, paths: list[str]) -> None:
    """Give these index entries back HEAD's version (or drop them when HEAD has
    none); the work tree is not touched."""
    if paths:
        core.git(repo, "reset", "-q", "HEAD", "--", *paths, check=False)


@dataclass(frozen=True)
class Switch:
    """What a checkout that moves HEAD did."""

    moved: bool  # HEAD is where it was asked to go
    hook_failure: str | None = None  # git moved, then a hook of the user's failed
    error: str | None = None  # git refused (and said why)


def checkout(repo: PathLike, target: str, *, detach: bool, force: bool) -> Switch:
    """``git checkout [-f] [--detach] TARGET`` that reports instead of raising.

    A post-checkout hook's exit status becomes checkout's (githooks(5)), so a
    non-zero exit does not mean HEAD stayed: what HEAD is now decides."""
    args = ["checkout", "-q"] + (["-f"] if force else []) + (["--detach"] if detach else [])
    result = core.git(repo, *args, target, "--", check=False, timeout=None)
    if result.returncode == 0:
        return Switch(True)
    sha, branch = refs.head_state(repo)
    wanted = refs.rev_parse(repo, target)
    arrived = sha == wanted and (branch is None if detach else branch == target)
    text = (result.stderr or result.stdout).strip()
    if arrived:
        return Switch(True, hook_failure=text or f"exit status {result.returncode}")
    return Switch(False, error=text or f"exit status {result.returncode}")


def hooks_folder(repo: PathLike) -> str:
    """Where this repository's hooks live (``core.hooksPath`` or the default)."""
    configured = core.out(repo, "config", "--get", "core.hooksPath", check=False)
    return configured or str(repository.git_dir(repo) / "hooks")
