"""The work tree: checking a commit or branch out into it, switching to a new branch,
searching its files, and the temporary linked work trees of `onboard ab --b commit:REV`
(`git worktree`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from onboard import journalling
from onboard.errors import OnboardError
from onboard.git import core, refs
from onboard.git.core import PathLike


def checkout_detached(repo: PathLike, rev: str) -> None:
    """``git checkout --detach REV`` without -f: git refuses rather than overwrite."""
    core.git(repo, "checkout", "-q", "--detach", rev, timeout=600, what=f"Checking out {rev[:12]}")


def checkout_branch(repo: PathLike, branch: str) -> None:
    core.git(repo, "checkout", "-q", "-f", branch, timeout=600, what=f"Checking out {branch}")


def checkout_quiet(repo: PathLike, target: str, *, detach: bool = False) -> None:
    args = ["checkout", "-q"] + (["--detach"] if detach else []) + [target]
    core.git(repo, *args, timeout=None, what=f"`git checkout {target}`")


def merge_ff_only(repo: PathLike, rev: str) -> None:
    what = f"Fast-forwarding to {rev[:12]}"
    core.git(repo, "merge", "-q", "--ff-only", rev, timeout=600, what=what)


def switch_new_branch(repo: PathLike, branch: str) -> str | None:
    """Create ``branch`` at HEAD and switch to it (the working tree is kept).

    A post-checkout hook's exit status becomes checkout's (githooks(5)): when
    git did switch and only the user's hook failed, its output is returned
    instead of an error, for the command to report.

    HEAD's reflog gets git's own "checkout: moving from OLD to BRANCH" (onboard's
    name after it): ``git switch -`` and ``@{-1}`` find the branch the user was on
    only by that prefix, which GIT_REFLOG_ACTION alone would replace."""
    old = refs.current_branch(repo) or refs.head_sha(repo) or "(invalid)"
    action = f"checkout: moving from {old} to {branch}"
    name = journalling.reflog_name()
    if name is not None:
        action += f" ({name})"
    result = core.git(
        repo, "checkout", "-q", "-b", branch, check=False, extra_env={"GIT_REFLOG_ACTION": action}
    )
    if result.returncode == 0:
        return None
    if refs.current_branch(repo) == branch:
        return (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
    detail = (result.stderr or result.stdout).strip().splitlines()
    raise OnboardError(
        f"git could not create the branch {branch} in {repo}: "
        f"{detail[-1] if detail else f'exit status {result.returncode}'}",
        next_step=f"Run `git -C {repo} status` to see what is in the way, then run the "
        "command again.",
    )


def grep_null(
    repo: PathLike, pattern: str, pathspecs: Sequence[str], *, timeout: float = 300
) -> str:
    """``git grep -n -z -I -E`` over tracked and untracked (not ignored) files.

    Output lines are ``path NUL line NUL text``; no match is an empty string.
    """
    result = core.git(
        repo,
        "grep",
        "--untracked",
        "-n",
        "-z",
        "-I",
        "--no-color",
        "-E",
        "-e",
        pattern,
        "--",
        *pathspecs,
        check=False,
        timeout=timeout,
    )
    if result.returncode not in (0, 1):
        raise OnboardError(
            f"`git grep` failed in {repo} (exit {result.returncode}): {result.stderr.strip()}",
            next_step="Check that the folder is a readable git checkout, or install ripgrep "
            "(`pip install ripgrep`), which onboard prefers.",
        )
    return result.stdout


def add(repo: PathLike, path: Path, sha: str) -> None:
    core.git(
        repo,
        "worktree",
        "add",
        "--detach",
        "--quiet",
        os.fspath(path),
        sha,
        timeout=600,
        what=f"checking out {sha[:12]} in a temporary worktree",
    )


def remove(repo: PathLike, path: Path) -> None:
    """Remove a worktree this run added (its folder and git's record of it)."""
    import shutil

    if core.git(repo, "worktree", "remove", "--force", os.fspath(path), check=False).returncode:
        shutil.rmtree(path, ignore_errors=True)
        core.git(repo, "worktree", "prune", check=False)


def list_all(repo: PathLike) -> list[Path]:
    """Every work tree of the repository, the main one first."""
    lines = core.out(repo, "worktree", "list", "--porcelain").splitlines()
    return [Path(ln[len("worktree ") :]) for ln in lines if ln.startswith("worktree ")]


def checked_out_branches(repo: PathLike) -> dict[str, Path]:
    """``refs/heads/NAME`` -> the work tree that has it checked out (every worktree)."""
    found: dict[str, Path] = {}
    where: Path | None = None
    for line in core.out(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            where = Path(line[len("worktree ") :])
        elif line.startswith("branch ") and where is not None:
            found[line[len("branch ") :]] = where
    return found
