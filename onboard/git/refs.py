"""Refs: HEAD, branches, every ref and stash entry at once, and moving one ref
(only from the value it is known to hold)."""

from __future__ import annotations

from typing import Any

from onboard import journalling
from onboard.git import core
from onboard.git.core import PathLike


def head_sha(repo: PathLike) -> str | None:
    result = core.git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return result.stdout.strip() or None


def current_branch(repo: PathLike) -> str | None:
    """The branch name, or None when HEAD is detached."""
    result = core.git(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    return result.stdout.strip() or None


def head_state(repo: PathLike) -> tuple[str | None, str | None]:
    """(HEAD's sha, its branch or None when detached) in one git call."""
    result = core.git(repo, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD", check=False)
    lines = result.stdout.split()
    if result.returncode != 0 or len(lines) != 2:
        return head_sha(repo), current_branch(repo)  # no commit yet: ask the long way
    sha, ref = lines
    return sha, ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None


def rev_parse(repo: PathLike, rev: str) -> str | None:
    result = core.git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    return result.stdout.strip() or None


def ref_value(repo: PathLike, ref: str) -> str | None:
    result = core.git(repo, "rev-parse", "--verify", "-q", ref, check=False)
    return result.stdout.strip() or None


def branch_exists(repo: PathLike, branch: str) -> bool:
    result = core.git(repo, "show-ref", "--verify", "-q", f"refs/heads/{branch}", check=False)
    return result.returncode == 0


def merge_base(repo: PathLike, a: str, b: str) -> str | None:
    result = core.git(repo, "merge-base", a, b, check=False)
    return result.stdout.strip() or None


def is_ancestor(repo: PathLike, ancestor: str, rev: str) -> bool:
    result = core.git(repo, "merge-base", "--is-ancestor", ancestor, rev, check=False)
    return result.returncode == 0


def snapshot(repo: PathLike) -> dict[str, Any]:
    """HEAD (branch or detached sha), every ref and every stash entry."""
    refs: dict[str, str] = {}
    for line in core.out(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines():
        name, _, sha = line.partition(" ")
        if name and sha and name != "refs/stash":  # the stash's entries are listed below
            refs[name] = sha
    stash = core.git(repo, "log", "-g", "--format=%H", "refs/stash", check=False)
    return {
        "branch": current_branch(repo),
        "head": head_sha(repo),
        "refs": refs,
        "stash": stash.stdout.split() if stash.ok else [],
    }


def update_ref(repo: PathLike, ref: str, new: str, *, old: str | None = None) -> None:
    """Point ``ref`` at ``new``; with ``old``, only if it is there now (all zeros: absent)."""
    # --create-reflog: a tag or refs/onboard/* gets a reflog too, naming onboard.
    message = journalling.reflog_name() or "onboard"
    args = ["update-ref", "--create-reflog", "-m", message, ref, new]
    core.git(repo, *args + ([old] if old is not None else []), what=f"updating {ref}")


def delete_ref(repo: PathLike, ref: str, old: str) -> None:
    """Delete ``ref`` only while it still points at ``old``."""
    core.git(repo, "update-ref", "-d", ref, old, what=f"deleting {ref}")


def stash_store(repo: PathLike, sha: str) -> None:
    core.git(
        repo, "stash", "store", "-m", "restored by onboard", sha, what="restoring a stash entry"
    )
