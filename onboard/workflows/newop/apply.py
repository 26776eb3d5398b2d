"""Write a scaffold on a new branch, all or nothing.

The checkout must have no uncommitted changes to tracked files (they would be
carried onto the new branch and into the scaffold commit). Everything runs in
the caller's workspace transaction (``onboard/transaction/``): any failure,
Ctrl-C or SIGTERM included, switches back to the branch (or detached commit)
the user was on, deletes the new branch and removes exactly the files and
folders this run created. Untracked files of the user are never touched: a
new file that would land on one is refused before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onboard import files, git
from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.transaction import Transaction
from onboard.workflows.newop.plan import Plan


@dataclass(frozen=True)
class Applied:
    branch: str
    commit: str
    base_branch: str | None
    base_commit: str
    hook_failure: str | None = None  # git switched, then the user's post-checkout hook failed


def _write_file(path: Path, text: str) -> None:
    """One file write (a seam: tests inject a failure here). An edited file keeps its
    line endings (``text`` was read with universal newlines)."""
    if path.is_file():
        files.write_bytes(path, files.with_line_endings_of(path.read_bytes(), text))
    else:
        files.write_text(path, text)


def preflight(checkout: Path, plan: Plan, branch: str) -> None:
    if not git.repository.is_repo(checkout):
        raise OnboardError(
            f"The workspace checkout {checkout} is not a git repository, so new-op cannot put "
            "the scaffold on its own branch.",
            next_step="Recreate the workspace with `onboard setup DIR --from-wheel` (or "
            "`onboard setup DIR`).",
        )
    if git.refs.head_sha(checkout) is None:
        raise OnboardError(
            f"The checkout {checkout} has no commit yet.",
            next_step="Recreate the workspace with `onboard setup DIR --from-wheel`.",
        )
    dirty = git.status.tracked_changes(checkout)
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise OnboardError(
            f"The checkout has uncommitted changes to tracked files ({shown}); new-op commits "
            "its scaffold on a new branch and will not mix your changes into it.",
            next_step=f"Commit or stash them (`git -C {quote(checkout)} stash`), then run the "
            "command again.",
        )
    if git.refs.branch_exists(checkout, branch):
        raise BadInput(
            f"The branch `{branch}` already exists in {checkout}.",
            next_step=f"Switch to it (`git -C {quote(checkout)} switch {branch}`) to keep working "
            "on "
            f"that scaffold, or delete it (`git -C {quote(checkout)} branch -D {branch}`) to start "
            "over.",
        )
    for change in plan.changes:
        if change.created and (checkout / change.path).exists():
            raise BadInput(
                f"{change.path} already exists in the checkout; new-op never overwrites a file.",
                next_step="Move it away or pick another op name.",
            )


def apply(
    tx: Transaction, checkout: Path, plan: Plan, branch: str, message: str, reporter: Reporter
) -> Applied:
    """Commit the scaffold on a new branch inside ``tx`` (which undoes it all on failure)."""
    tx.watch(checkout)  # first: it refuses a checkout mid-rebase/merge/bisect by name
    preflight(checkout, plan, branch)
    reporter.step(f"writing {len(plan.changes)} files on branch {branch}")
    base_branch = git.refs.current_branch(checkout)
    base_commit = git.refs.head_sha(checkout)
    assert base_commit is not None
    hook_failure = tx.switch_new_branch(checkout, branch)
    for change in plan.changes:
        path = checkout / change.path
        if change.created:
            files.make_dirs(path.parent)
        reporter.detail(f"{'create' if change.created else 'edit'} {change.path}")
        _write_file(path, change.after)
    git.history.stage_paths(checkout, [c.path for c in plan.changes])
    # The commit object first, the branch moved to it second: the journal knows
    # the new value before the ref holds it, so even a kill in between rolls back.
    commit = git.history.commit_index(checkout, message)
    tx.ref_now_at(checkout, f"refs/heads/{branch}", commit)
    git.refs.update_ref(checkout, f"refs/heads/{branch}", commit, old=base_commit)
    return Applied(branch, commit, base_branch, base_commit, hook_failure)
