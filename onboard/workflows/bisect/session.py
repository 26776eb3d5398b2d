"""The bisect session in the repository: ``git bisect start``, the bounds, each
verdict as ``git bisect good|bad|skip``, and what git answers each time.

Every command that moves HEAD runs inside the guard's critical section, so an
interrupt never lands between git's bisect state and onboard's record of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from onboard import git, proc
from onboard.errors import OnboardError
from onboard.shell import quote
from onboard.workflows.bisect.guard import RepoGuard
from onboard.workflows.bisect.terms import Terms

_FIRST = re.compile(r"^([0-9a-f]{40}) is the first (\S+) commit", re.M)
_ONLY_SKIPPED = "There are only 'skip'ped commits left to test."
_NEXT = re.compile(r"^\[([0-9a-f]{40})\] ?(.*)$", re.M)
_ROUGHLY = re.compile(r"roughly (\d+) steps?")
_BLOCKED = re.compile(
    r"untracked working tree files would be overwritten by checkout:\n(?P<files>(?:\s+\S.*\n?)+)"
)
_SHA_LINE = re.compile(r"^([0-9a-f]{40})$", re.M)
# git checkout's refusal (unpack-trees.c) when a local change would be lost.
_LOCAL_CHANGES = "would be overwritten by checkout"


@dataclass(frozen=True)
class Answer:
    """What git bisect said after a mark: the culprit, the commits only skips left, or
    the next commit it checked out (with its subject and git's steps-left estimate)."""

    text: str

    @property
    def culprit(self) -> str | None:
        first = _FIRST.search(self.text)
        return first.group(1) if first else None

    @property
    def possible(self) -> list[str] | None:
        """The candidates when only skipped commits are left, else None."""
        if _ONLY_SKIPPED not in self.text:
            return None
        return _SHA_LINE.findall(self.text.split(_ONLY_SKIPPED, 1)[1])

    @property
    def next_commit(self) -> tuple[str, str] | None:
        """(sha, subject) of the commit git checked out, when it names one."""
        nxt = _NEXT.search(self.text)
        return (nxt.group(1), nxt.group(2).strip()) if nxt else None

    @property
    def steps_left(self) -> int | None:
        roughly = _ROUGHLY.search(self.text)
        return int(roughly.group(1)) if roughly else None


@dataclass
class BisectSession:
    repo: Path
    guard: RepoGuard

    def start(self, terms: Terms, first_parent: bool) -> None:
        # No bounds yet: they are marked after the pre-flight has checked them.
        term_old, term_new = terms.git_terms()
        with self.guard.critical():
            entry = self.guard.bisect_starting()  # journalled before git starts it
            started = git.bisect.start(
                self.repo, first_parent=first_parent, term_old=term_old, term_new=term_new
            )
            if started.ok:
                self.guard.bisect_started(entry)
            if not started.ok:
                raise OnboardError(
                    f"`git bisect start` failed in {self.repo}: "
                    f"{(started.stderr or started.stdout).strip()}",
                    next_step="Check the repository with `git status`, then run the bisect again.",
                )

    def mark_bounds(self, terms: Terms, old: str, new: str) -> Answer:
        """Both bounds marked, once the pre-flight has checked them; git's answer."""
        with self.guard.critical():
            marked = git.bisect.mark(self.repo, terms.new, new)
            if not marked.ok:
                raise OnboardError(
                    f"`git bisect {terms.new} {new[:10]}` failed: {marked.stderr.strip()}",
                    next_step="Check the bounds with `git log --oneline --first-parent`.",
                )
            answer = git.bisect.mark(self.repo, terms.old, old)
        return self._read(answer)

    def mark(self, term: str) -> Answer:
        """``git bisect TERM`` and its answer. The tree was clean when the bisect began,
        so an edit of a tracked file now is the repro's: it is undone before the next
        commit is checked out, or it would be tested along with that commit."""
        with self.guard.critical():
            if not git.status.tree_matches_head(self.repo):
                self.guard.set_aside_changes(self._head())
            answer = git.bisect.mark(self.repo, term)
            if not answer.ok and _LOCAL_CHANGES in answer.stderr:
                self.guard.set_aside_changes(self._head())
                answer = git.bisect.mark(self.repo, term)
        return self._read(answer)

    def _head(self) -> str:
        """HEAD's short sha, which names what is set aside (asked only then)."""
        return (git.refs.head_sha(self.repo) or "HEAD")[:12]

    def _read(self, answer: proc.Result) -> Answer:
        text = answer.stdout + answer.stderr
        if answer.ok or _ONLY_SKIPPED in text:
            return Answer(text)
        blocked = _BLOCKED.search(text)
        if blocked:
            # git could not check out the commit it picked: the bounds are fine.
            files = [ln.strip() for ln in blocked.group("files").splitlines() if ln.strip()]
            raise OnboardError(
                f"git bisect could not check out the next commit in {self.repo}: untracked "
                f"files would be overwritten by it ({', '.join(files[:5])}"
                f"{', ...' if len(files) > 5 else ''}).",
                next_step=f"Move those files out of {self.repo} (`git -C {quote(self.repo)} status "
                "--untracked-files` lists them), then run the bisect again.",
            )
        raise OnboardError(
            f"git bisect stopped: {text.strip()}",
            next_step="Check that --good is older than --bad (`git merge-base --is-ancestor GOOD "
            "BAD`); with release branches git tests their merge base first.",
        )
