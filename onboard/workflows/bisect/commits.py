"""The commit level: onboard steps ``git bisect`` itself, one verdict at a time.

Stepping (``git bisect start``, then ``git bisect good|bad|skip`` and reading
what git answers) instead of ``git bisect run`` keeps every rule in onboard's
hands: crashes, timeouts, failed builds, majorities over repeats, progress,
and the guarantee that the repository is put back (guard.py). The run is three
steps: start the session (session.py), test both bounds (preflight.py), then
test what git checks out until it names the first new commit.

The bisect is started *before* the pre-flight moves HEAD, so ``BISECT_START``
names the user's own branch: even if onboard is killed with SIGKILL, a plain
``git bisect reset`` takes them home.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from onboard import git
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.bisect.builds import Builder
from onboard.workflows.bisect.guard import Original, RepoGuard
from onboard.workflows.bisect.model import (
    BISECT,
    PREFLIGHT,
    CommitBisect,
    CommitInfo,
    Step,
    commit_info,
    github_base,
)
from onboard.workflows.bisect.preflight import Bounds, bound_verdict, check_orientation, said
from onboard.workflows.bisect.runner import SKIP, ReproRunner, Verdict, repro_env
from onboard.workflows.bisect.session import Answer, BisectSession
from onboard.workflows.bisect.terms import Terms

__all__ = ["CommitBisector", "CommitTester", "Terms", "estimate_steps"]


@dataclass
class CommitBisector:
    repo: Path
    runner: ReproRunner
    builder: Builder
    reporter: Reporter
    guard: RepoGuard
    repeat: int
    first_parent: bool
    terms: Terms
    gpu_why: str = ""

    def __post_init__(self) -> None:
        self.tester = CommitTester(
            self.repo, self.runner, self.builder, self.guard, self.repeat, self.terms
        )

    def run(
        self,
        old_ref: str,
        new_ref: str,
        old: str,
        new: str,
        original: Original,
        candidates: int | None = None,
    ) -> CommitBisect:
        """``candidates``: the count of commits in old..new, when the caller has it."""
        bounds = Bounds(old_ref, new_ref, old, new)
        if candidates is None:
            candidates = git.history.count_range(
                self.repo, old, new, first_parent=self.first_parent
            )
        result = self._result(bounds, candidates)
        self.reporter.step(
            f"bisecting {candidates} commit(s) between {_short(old_ref)} and {_short(new_ref)} "
            f"in {self.repo} "
            f"(about {result.expected_steps} steps, {self.repeat} run(s) each)"
        )
        session = BisectSession(self.repo, self.guard)
        session.start(self.terms, self.first_parent)
        answer = self._preflight(result, bounds, session)
        self._loop(result, answer, session)
        result.builds = self.builder.builds
        return result

    def _result(self, b: Bounds, candidates: int) -> CommitBisect:
        t = self.terms
        return CommitBisect(
            repo=self.repo,
            old=b.old,
            new=b.new,
            old_ref=b.old_ref,
            new_ref=b.new_ref,
            term_old=t.old,
            term_new=t.new,
            old_state=t.old_state,
            first_parent=self.first_parent,
            candidates=candidates,
            expected_steps=estimate_steps(candidates),
            log=self.guard.log_path,
        )

    def _preflight(self, result: CommitBisect, b: Bounds, session: BisectSession) -> Answer:
        """Test both bounds; on success mark them in git and return git's answer."""
        verdicts: list[Verdict] = []
        subjects = git.history.log_subjects(self.repo, ["--no-walk=unsorted", b.old, b.new])
        for i, (flag, ref, sha) in enumerate(
            (("--good", b.old_ref, b.old), ("--bad", b.new_ref, b.new))
        ):
            label = subjects[i] if len(subjects) == 2 else ""
            self.reporter.step(f"pre-flight: testing {flag} {_short(ref)} ({sha[:10]})")
            with self.guard.critical():
                git.worktree.checkout_quiet(self.repo, sha, detach=True)
            step = self.tester.test(sha, label, PREFLIGHT)
            result.steps.append(step)
            v = bound_verdict(step, f"{flag} {ref}", self.gpu_why)
            self.reporter.step(
                f"pre-flight: {flag} {_short(ref)}: the repro {said(v)} ({v.summary()})"
            )
            verdicts.append(v)
        check_orientation(self.terms, verdicts[0], verdicts[1], b, self._by_hand(b.new_ref))
        return session.mark_bounds(self.terms, b.old, b.new)

    def _by_hand(self, ref: str) -> str:
        repo = quote(self.repo)
        return (
            f"Check by hand: `git -C {repo} checkout {ref} && PYTHONPATH={repo} "
            f"{quote(self.runner.python)} {quote(self.runner.repro)}; echo $?`, then "
            f"`git -C {repo} checkout -` "
        )

    def _loop(self, result: CommitBisect, answer: Answer, session: BisectSession) -> None:
        recent: list[str] = []
        limit = result.candidates + 5
        steps = 0
        while True:
            if answer.culprit:
                result.culprit = self._info(answer.culprit)
                self.reporter.step(
                    f"found: {answer.culprit[:12]} is the first {self.terms.new} commit "
                    f"({result.executions} repro runs)"
                )
                break
            possible = answer.possible
            if possible is not None:
                result.possible = [self._info(sha) for sha in possible]
                self.reporter.step(
                    f"only skipped commits are left: {len(result.possible)} possible culprits"
                )
                break
            steps += 1
            if steps > limit:
                raise OnboardError(
                    f"git bisect did not converge after {limit} steps; "
                    f"last answer: {answer.text.strip()}",
                    next_step="Report this with the bisect log.",
                )
            sha, label = answer.next_commit or self._checked_out()
            left = answer.steps_left
            total = (steps + left) if left is not None else result.expected_steps
            self.reporter.step(
                f"step {steps} of ~{max(total, steps)}: testing {sha[:10]} {label[:70]}"
                + (f"  (last: {', '.join(recent[-3:])})" if recent else "")
            )
            step = self.tester.test(sha, label, BISECT)
            result.steps.append(step)
            recent.append(step.mark)
            detail = step.verdict.summary() if step.verdict else step.reason
            self.reporter.step(
                f"  {sha[:10]} is {step.mark}: {detail}"
                + (f" ({step.reason})" if step.reason and step.verdict else "")
            )
            answer = session.mark(step.mark)

    def _checked_out(self) -> tuple[str, str]:
        sha = git.refs.head_sha(self.repo) or ""
        return sha, git.history.subject_of(self.repo, sha)

    def _info(self, sha: str) -> CommitInfo:
        return commit_info(self.repo, sha, github_base(self.repo))


@dataclass
class CommitTester:
    """One commit tested: built when the mode asks, the repro run ``repeat`` times
    against the checkout, the verdict named in git's terms."""

    repo: Path
    runner: ReproRunner
    builder: Builder
    guard: RepoGuard
    repeat: int
    terms: Terms

    def test(self, sha: str, label: str, phase: str) -> Step:
        ready, build, why = self.builder.prepare(sha)
        if not ready:
            return Step(sha, label, phase, "skip", None, why, build)
        verdict = self.runner.verdict(self._env(sha), self.repeat, self._pycache(sha))
        if build is not None or phase == PREFLIGHT:
            # A build may rewrite tracked files; the bounds are checked out by onboard,
            # not by git bisect. While stepping, a repro's edit is undone when git bisect
            # refuses to check out over it (session.py): no status round per step.
            self._clean(sha)
        reason = verdict.reason if verdict.value == SKIP or verdict.flaky else ""
        return Step(sha, label, phase, self.terms.mark(verdict.value), verdict, reason, build)

    def _env(self, sha: str) -> dict[str, str]:
        path = os.environ.get("PYTHONPATH")
        return repro_env(
            PYTHONPATH=str(self.repo) + (os.pathsep + path if path else ""),
            ONBOARD_BISECT_COMMIT=sha,
            ONBOARD_BISECT_CHECKOUT=str(self.repo),
        )

    def _pycache(self, sha: str) -> Path:
        root = self.runner.workdir / "pycache"
        if root.is_dir():
            for old in root.iterdir():
                if old.name != sha[:16]:
                    shutil.rmtree(old, ignore_errors=True)
        return root / sha[:16]

    def _clean(self, sha: str) -> None:
        # A repro or a build that edits tracked files would carry the edit
        # into the next commit (or block its checkout): set it aside (the
        # guard keeps it in the stash: the user may have made it).
        with self.guard.critical():
            self.guard.set_aside_changes(sha[:12])


def _short(ref: str) -> str:
    return ref[:10] if re.fullmatch(r"[0-9a-f]{40}", ref) else ref


def estimate_steps(candidates: int) -> int:
    """The steps git bisect will take over ``candidates`` commits, counted as git counts
    them (bisect.c: estimate_bisect_steps, plus the step in progress), so the figure
    printed up front and git's "roughly N steps" at step 1 agree."""
    if candidates < 2:
        return 0
    if candidates < 3:
        return 1
    n = candidates.bit_length() - 1  # floor(log2)
    e = 1 << n
    return 1 + (n if e < 3 * (candidates - e) else n - 1)
