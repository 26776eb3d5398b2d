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

import datetime as _dt
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from onboard import git
from onboard.errors import OnboardError
from onboard.report import Reporter


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every ``finally`` runs (the CLI exits 130)."""


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
    """Refuse a repository that is mid-bisect, dirty, or without a commit."""
    if git.bisect_in_progress(repo):
        raise OnboardError(
            f"A `git bisect` is already in progress in {repo}; onboard will not start a second "
            "one on top of it.",
            next_step=f"Finish or abandon it first: `git -C {repo} bisect log` shows it, "
            f"`git -C {repo} bisect reset` ends it and returns to where it started.",
        )
    dirty = git.status_porcelain(repo, untracked=False)
    if dirty:
        shown = "; ".join(ln.strip() for ln in dirty[:5]) + ("; ..." if len(dirty) > 5 else "")
        raise OnboardError(
            f"The checkout {repo} has uncommitted changes ({shown}); bisecting checks out other "
            "commits, which would carry or clash with them.",
            next_step=f"Commit or stash them (`git -C {repo} stash`), then run the bisect again.",
        )
    head, branch = git.head_state(repo)
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
    _depth: int = 0
    _pending: int | None = None
    _old: dict[int, Any] = field(default_factory=dict)

    # -- signals --------------------------------------------------------

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self._depth > 0:
            self._pending = signum
            return
        self._raise(signum)

    @staticmethod
    def _raise(signum: int) -> None:
        if signum == signal.SIGTERM:
            raise Terminated()
        raise KeyboardInterrupt()

    @contextmanager
    def critical(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if self._depth == 0 and self._pending is not None:
            signum, self._pending = self._pending, None
            self._raise(signum)

    def __enter__(self) -> RepoGuard:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._old[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._depth += 1  # hold every signal back until the tree is restored
        try:
            problem = self.restore()
        finally:
            for signum, old in self._old.items():
                signal.signal(signum, old)
            self._old.clear()
            self._depth -= 1
        if self.saved_log is not None:
            self.reporter.step(
                f"bisect log saved to {self.saved_log} "
                f"(replay: git -C {self.repo} bisect replay {self.saved_log})"
            )
        if problem:
            if exc_type is None:
                raise OnboardError(problem, next_step=self._fix())
            self.reporter.step(f"{problem} {self._fix()}")
        if exc_type is None and self._pending is not None:
            signum, self._pending = self._pending, None
            self._raise(signum)

    # -- restore --------------------------------------------------------

    def _fix(self) -> str:
        o = self.original
        target = o.branch if o.branch else f"--detach {o.head}"
        return (
            f"Restore it by hand: `git -C {self.repo} bisect reset; "
            f"git -C {self.repo} checkout {target}`."
        )

    def save_log(self) -> Path | None:
        if self.saved_log is None and git.bisect_in_progress(self.repo):
            text = git.bisect_log(self.repo)
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
            # The tree was clean when we started: any tracked change now was
            # made by a repro or a build, never by the user.
            if git.status_porcelain(repo, untracked=False):
                git.reset_hard(repo)
            if git.bisect_in_progress(repo):
                result = git.bisect_reset(repo, o.ref)
                if not result.ok:
                    return f"`git bisect reset {o.ref}` failed in {repo}: {result.stderr.strip()}"
            state: tuple[str | None, str | None] | None = git.head_state(repo)
            if state != (o.head, o.branch):
                git.checkout_quiet(repo, o.ref, detach=o.branch is None)
                state = None
            if self.resync_submodules is not None and self.resync_submodules():
                git.submodule_sync(repo)
            head, branch = state or git.head_state(repo)
        except OnboardError as exc:
            return f"Could not restore {repo} to {o.describe()}: {exc.message}"
        if head != o.head or branch != o.branch:
            return f"{repo} is at {head} ({branch or 'detached'}), not at {o.describe()}."
        return ""


def stamp() -> str:
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
