"""Write a scaffold on a new branch, all or nothing.

The checkout must have no uncommitted changes to tracked files (they would be
carried onto the new branch and into the scaffold commit). Any failure,
Ctrl-C included, switches back to the branch (or detached commit) the user was
on, deletes the new branch and removes exactly the files and folders this run
created; tracked files come back from git. Untracked files of the user are
never touched: a new file that would land on one is refused before anything
is written.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from onboard import git
from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.workflows.newop.plan import Plan


@dataclass(frozen=True)
class Applied:
    branch: str
    commit: str
    base_branch: str | None
    base_commit: str


def _write_file(path: Path, text: str) -> None:
    """One file write (a seam: tests inject a failure here)."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def preflight(checkout: Path, plan: Plan, branch: str) -> None:
    if not git.is_repo(checkout):
        raise OnboardError(
            f"The workspace checkout {checkout} is not a git repository, so new-op cannot put "
            "the scaffold on its own branch.",
            next_step="Recreate the workspace with `onboard setup DIR --from-wheel` (or "
            "`onboard setup DIR`).",
        )
    if git.head_sha(checkout) is None:
        raise OnboardError(
            f"The checkout {checkout} has no commit yet.",
            next_step="Recreate the workspace with `onboard setup DIR --from-wheel`.",
        )
    dirty = git.tracked_changes(checkout)
    if dirty:
        shown = ", ".join(git.porcelain_path(line) for line in dirty[:5]) + (
            " ..." if len(dirty) > 5 else ""
        )
        raise OnboardError(
            f"The checkout has uncommitted changes to tracked files ({shown}); new-op commits "
            "its scaffold on a new branch and will not mix your changes into it.",
            next_step=f"Commit or stash them (`git -C {checkout} stash`), then run the "
            "command again.",
        )
    if git.branch_exists(checkout, branch):
        raise BadInput(
            f"The branch `{branch}` already exists in {checkout}.",
            next_step=f"Switch to it (`git -C {checkout} switch {branch}`) to keep working on "
            f"that scaffold, or delete it (`git -C {checkout} branch -D {branch}`) to start over.",
        )
    for change in plan.changes:
        if change.created and (checkout / change.path).exists():
            raise BadInput(
                f"{change.path} already exists in the checkout; new-op never overwrites a file.",
                next_step="Move it away or pick another op name.",
            )


def apply(checkout: Path, plan: Plan, branch: str, message: str, reporter: Reporter) -> Applied:
    preflight(checkout, plan, branch)
    base_branch = git.current_branch(checkout)
    base_commit = git.head_sha(checkout)
    assert base_commit is not None
    created_files: list[Path] = []
    created_dirs: list[Path] = []
    switched = False
    try:
        git.switch_new_branch(checkout, branch)
        switched = True
        for change in plan.changes:
            path = checkout / change.path
            if change.created:
                missing = []
                parent = path.parent
                while not parent.exists():
                    missing.append(parent)
                    parent = parent.parent
                for folder in reversed(missing):
                    folder.mkdir()
                    created_dirs.append(folder)
                created_files.append(path)
            reporter.detail(f"{'create' if change.created else 'edit'} {change.path}")
            _write_file(path, change.after)
        git.stage_paths(checkout, [c.path for c in plan.changes])
        commit = git.commit_staged(checkout, message)
    except BaseException:
        _rollback(
            checkout,
            base_branch,
            base_commit,
            branch if switched else None,
            created_files,
            created_dirs,
        )
        raise
    return Applied(branch, commit, base_branch, base_commit)


def _rollback(
    checkout: Path,
    base_branch: str | None,
    base_commit: str,
    branch: str | None,
    created_files: list[Path],
    created_dirs: list[Path],
) -> None:
    if branch is not None:
        git.restore_checkout(checkout, base_branch, base_commit)
        git.delete_branch(checkout, branch)
    for path in created_files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    for folder in reversed(created_dirs):
        with contextlib.suppress(OSError):  # not empty: something else was put there
            folder.rmdir()
