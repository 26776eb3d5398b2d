"""Leave the repository exactly as it was, whatever happens.

Success, an error, Ctrl-C or SIGTERM: the checkout ends on the branch (or
detached commit) it started on, with no bisect in progress and no tracked
change. Two things make that hold:

- every git command that moves the tree runs in a *critical section*: Ctrl-C
  and SIGTERM arriving then are held back until git has finished, so a git
  process is never killed halfway through a checkout (which would leave
  ``index.lock`` and a half-written tree);
- the restore itself runs with those signals held back.

The repro and the builds run outside critical sections, so Ctrl-C stops them
at once (``proc`` kills their whole process group).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import git, signals, transaction
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.signals import Terminated

__all__ = ["Original", "RepoGuard", "Terminated", "check_startable", "stamp"]


@dataclass
class Original:
    head: str
    branch: str | None

    @property
    def ref(self) -> str:
        return self.branch or self.head

    def describe(self) -> str:
        return (
            f"branch {self.branch} at {self.head[:10]}"
            if self.branch
            else f"{self.head[:10]} (detached)"
        )


def check_startable(repo: Path) -> Original:
    """Refuse a repository that is mid-bisect, dirty, or without a commit. A bisect an
    onboard killed outright left there is recovered first (its journal ends it)."""
    transaction.settle(transaction.scope_for_repo(repo))
    if git.bisect.in_progress(repo):
        raise OnboardError(
            f"A `git bisect` is already in progress in {repo}; onboard will not start a second "
            "one on top of it.",
            next_step=f"Finish or abandon it first: `git -C {quote(repo)} bisect log` shows it, "
            f"`git -C {quote(repo)} bisect reset` ends it and returns to where it started.",
        )
    dirty = git.status.status_porcelain(repo, untracked=False)
    if dirty:
        shown = "; ".join(ln.strip() for ln in dirty[:5]) + ("; ..." if len(dirty) > 5 else "")
        raise OnboardError(
            f"The checkout {repo} has uncommitted changes ({shown}); bisecting checks out other "
            "commits, which would carry or clash with them.",
            next_step=f"Commit or stash them (`git -C {quote(repo)} stash`), then run the bisect "
            "again.",
        )
    head, branch = git.refs.head_state(repo)
    if head is None:
        raise OnboardError(
            f"{repo} has no commits to bisect.",
            next_step="Pass --repo with your PyTorch checkout.",
        )
    return Original(head=head, branch=branch)


@dataclass
class RepoGuard:
    """``with RepoGuard(repo, original, ...) as guard:`` ... ``with guard.critical(): git ...``."""

    repo: Path
    original: Original
    reporter: Reporter
    log_path: Path
    resync_submodules: Any = None  # callable -> bool: were submodules synced?
    saved_log: Path | None = None
    # Changes to tracked files found between steps, kept as stash entries:
    # "stash message" lines for the result's notes.
    set_aside: list[str] = field(default_factory=list)
    # The run's transaction (``transaction.Transaction``): the bisect onboard starts is
    # journalled there, so that a recovery after SIGKILL ends it (and only it).
    journal: Any = None
    _signals: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    # -- signals (onboard/signals.py: one mechanism for every command) ---

    @contextmanager
    def critical(self) -> Iterator[None]:
        with signals.critical():
            yield

    def __enter__(self) -> RepoGuard:
        self._signals.enter_context(signals.handlers())
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            with signals.critical():  # hold every signal back until the tree is restored
                problem = self.restore()
                if self.saved_log is not None:
                    self.reporter.step(
                        f"bisect log saved to {self.saved_log} "
                        f"(replay: git -C {quote(self.repo)} bisect replay {quote(self.saved_log)})"
                    )
                if problem:
                    if exc_type is None:
                        raise OnboardError(problem, next_step=self._fix())
                    self.reporter.step(f"{problem} {self._fix()}")
        finally:
            self._signals.close()

    # -- the journal ----------------------------------------------------

    def bisect_starting(self) -> Any:
        """Journal the `git bisect start` about to run (call under ``critical``)."""
        if self.journal is None:
            return None
        return self.journal.bisect_starting(self.repo, self.original.ref)

    def bisect_started(self, entry: Any) -> None:
        if self.journal is not None and entry is not None:
            self.journal.bisect_started(entry)

    # -- tracked changes found mid-bisect -------------------------------

    def set_aside_changes(self, where: str) -> None:
        """Tracked files changed while the bisect ran: a repro or a build did it,
        or the user did, in another terminal. Either way they must not travel to
        the next commit, and they are not onboard's to throw away: they go into
        the user's stash, named, and the result says so (call under ``critical``)."""
        changed = git.status.status_porcelain(self.repo, untracked=False)
        if not changed:
            return
        message = f"onboard bisect: tracked files changed at {where}"
        git.core.git(self.repo, "stash", "push", "-q", "-m", message, what="keeping those changes")
        shown = ", ".join(git.status.porcelain_path(line) for line in changed[:3])
        self.reporter.detail(f"tracked files changed at {where} ({shown}): kept in the stash")
        self.set_aside.append(message)

    def notes(self) -> list[str]:
        if not self.set_aside:
            return []
        return [
            f"tracked files changed during the bisect (by the repro, a build, or you) at "
            f"{len(self.set_aside)} step(s); onboard kept each change in your stash instead of "
            f'discarding it: `git -C {self.repo} stash list` shows them as "onboard bisect: '
            '..."; `git stash show -p stash@{N}` to look, `git stash drop stash@{N}` to drop'
        ]

    # -- restore --------------------------------------------------------

    def _fix(self) -> str:
        o = self.original
        target = o.branch if o.branch else f"--detach {o.head}"
        return (
            f"Restore it by hand: `git -C {quote(self.repo)} bisect reset; "
            f"git -C {quote(self.repo)} checkout {target}`."
        )

    def save_log(self) -> Path | None:
        if self.saved_log is None and git.bisect.in_progress(self.repo):
            text = git.bisect.log(self.repo)
            if text.strip():
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                self.log_path.write_text(text, encoding="utf-8")
                self.saved_log = self.log_path
        return self.saved_log

    def restore(self) -> str:
        """Put the repository back; '' when done, else what is wrong."""
        repo, o = self.repo, self.original
        try:
            self.save_log()
        except (OSError, OnboardError) as exc:
            self.reporter.step(f"could not save the bisect log: {exc}")
        try:
            # The tree was clean when we started: a tracked change now is a
            # repro's, a build's or the user's, and goes to the stash, not away.
            self.set_aside_changes("the end")
            if git.bisect.in_progress(repo):
                result = git.bisect.reset(repo, o.ref)
                if not result.ok:
                    return f"`git bisect reset {o.ref}` failed in {repo}: {result.stderr.strip()}"
            state: tuple[str | None, str | None] | None = git.refs.head_state(repo)
            if state != (o.head, o.branch):
                git.worktree.checkout_quiet(repo, o.ref, detach=o.branch is None)
                state = None
            if self.resync_submodules is not None and self.resync_submodules():
                git.remote.submodule_sync(repo)
            head, branch = state or git.refs.head_state(repo)
        except OnboardError as exc:
            return f"Could not restore {repo} to {o.describe()}: {exc.message}"
        if head != o.head or branch != o.branch:
            return f"{repo} is at {head} ({branch or 'detached'}), not at {o.describe()}."
        return ""


def stamp() -> str:
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
