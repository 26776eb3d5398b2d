"""The commit level: onboard steps ``git bisect`` itself, one verdict at a time.

Stepping (``git bisect start``, then ``git bisect good|bad|skip`` and reading
what git answers) instead of ``git bisect run`` keeps every rule in onboard's
hands: crashes, timeouts, failed builds, majorities over repeats, progress,
and the guarantee that the repository is put back (guard.py).

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

from onboard import git, proc
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
from onboard.workflows.bisect.runner import (
    FAIL,
    NO_GPU,
    PASS,
    SKIP,
    ReproRunner,
    Verdict,
    repro_env,
)

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
class Terms:
    """git's names for the two states, and which one the repro passes in."""

    old: str = "good"
    new: str = "bad"

    @property
    def fix(self) -> bool:
        # Custom terms are for finding a fix: the repro fails at the old bound
        # and passes at the new one (`--term-old broken --term-new fixed`).
        return (self.old, self.new) != ("good", "bad")

    @property
    def old_state(self) -> str:
        return "fails" if self.fix else "passes"

    def mark(self, verdict: str) -> str:
        if verdict == SKIP:
            return "skip"
        passes = verdict == PASS
        return (
            (self.new if passes else self.old) if self.fix else (self.old if passes else self.new)
        )

    def git_terms(self) -> tuple[str | None, str | None]:
        return (self.old, self.new) if self.fix else (None, None)


def no_gpu_error(where: str, verdict: Verdict, why: str) -> OnboardError:
    run = next(r for r in verdict.runs if r.outcome == NO_GPU)
    last = run.tail.splitlines()[-1] if run.tail else "a CUDA error"
    return OnboardError(
        f"The repro stopped at {where} with `{last}`: it needs a CUDA GPU, and this machine has "
        f"none it can use ({why or 'torch reports no usable device'}). A missing GPU says nothing "
        "about the commit, so onboard will not bisect it here.",
        next_step="Run the same `onboard bisect` on a machine with an NVIDIA GPU and a CUDA "
        "build (the workspace's python, or --python).",
    )


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

    # -- one commit -------------------------------------------------------

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

    def test(self, sha: str, label: str, phase: str) -> Step:
        ready, build, why = self.builder.prepare(sha)
        if not ready:
            return Step(sha, label, phase, "skip", None, why, build)
        verdict = self.runner.verdict(self._env(sha), self.repeat, self._pycache(sha))
        if build is not None or phase == PREFLIGHT:
            # A build may rewrite tracked files; the bounds are checked out by onboard,
            # not by git bisect. While stepping, a repro's edit is undone when git bisect
            # refuses to check out over it (see _mark): no status round per step.
            self._clean(sha)
        reason = verdict.reason if verdict.value == SKIP or verdict.flaky else ""
        return Step(sha, label, phase, self.terms.mark(verdict.value), verdict, reason, build)

    def _mark(self, term: str) -> str:
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
        return self._answer_text(answer)

    def _head(self) -> str:
        """HEAD's short sha, which names what is set aside (asked only then)."""
        return (git.refs.head_sha(self.repo) or "HEAD")[:12]

    # -- the whole run ----------------------------------------------------

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
        t = self.terms
        if candidates is None:
            candidates = git.history.count_range(
                self.repo, old, new, first_parent=self.first_parent
            )
        expected = estimate_steps(candidates)
        result = CommitBisect(
            repo=self.repo,
            old=old,
            new=new,
            old_ref=old_ref,
            new_ref=new_ref,
            term_old=t.old,
            term_new=t.new,
            old_state=t.old_state,
            first_parent=self.first_parent,
            candidates=candidates,
            expected_steps=expected,
            log=self.guard.log_path,
        )
        self.reporter.step(
            f"bisecting {candidates} commit(s) between {_short(old_ref)} and {_short(new_ref)} "
            f"in {self.repo} "
            f"(about {expected} steps, {self.repeat} run(s) each)"
        )
        term_old, term_new = t.git_terms()
        with self.guard.critical():
            self._start(term_old, term_new)
        answer = self._preflight(result, old_ref, new_ref, old, new)
        self._loop(result, answer)
        result.builds = self.builder.builds
        return result

    def _start(self, term_old: str | None, term_new: str | None) -> None:
        # No bounds yet: they are marked after the pre-flight has checked them.
        started = git.bisect.start(
            self.repo, first_parent=self.first_parent, term_old=term_old, term_new=term_new
        )
        if not started.ok:
            raise OnboardError(
                f"`git bisect start` failed in {self.repo}: "
                f"{(started.stderr or started.stdout).strip()}",
                next_step="Check the repository with `git status`, then run the bisect again.",
            )

    def _preflight(
        self, result: CommitBisect, old_ref: str, new_ref: str, old: str, new: str
    ) -> str:
        """Test both bounds; on success mark them in git and return git's answer."""
        t = self.terms
        verdicts: dict[str, Verdict] = {}
        subjects = git.history.log_subjects(self.repo, ["--no-walk=unsorted", old, new])
        for role, ref, sha in (("old", old_ref, old), ("new", new_ref, new)):
            flag = "--good" if role == "old" else "--bad"
            label = subjects[0 if role == "old" else 1] if len(subjects) == 2 else ""
            self.reporter.step(f"pre-flight: testing {flag} {_short(ref)} ({sha[:10]})")
            with self.guard.critical():
                git.worktree.checkout_quiet(self.repo, sha, detach=True)
            step = self.test(sha, label, PREFLIGHT)
            result.steps.append(step)
            if step.verdict is None:
                raise OnboardError(
                    f"Cannot test {flag} {ref}: {step.reason}.",
                    next_step="Fix the build (see the log), or pass --build never to test the "
                    "Python sources against the current build.",
                )
            v = step.verdict
            if any(r.outcome == NO_GPU for r in v.runs):
                raise no_gpu_error(f"{flag} {ref}", v, self.gpu_why)
            if v.value == SKIP:
                raise OnboardError(
                    f"The repro gave no verdict at {flag} {ref}: {v.reason}.",
                    next_step="Raise --timeout, or with a crashing repro use --on-crash bad; "
                    "a bound must pass or fail clearly.",
                )
            self.reporter.step(
                f"pre-flight: {flag} {_short(ref)}: the repro {_word(v)} ({v.summary()})"
            )
            verdicts[role] = v
        self._check_orientation(verdicts["old"], verdicts["new"], old_ref, new_ref, old, new)
        with self.guard.critical():
            marked = git.bisect.mark(self.repo, t.new, new)
            if not marked.ok:
                raise OnboardError(
                    f"`git bisect {t.new} {new[:10]}` failed: {marked.stderr.strip()}",
                    next_step="Check the bounds with `git log --oneline --first-parent`.",
                )
            answer = git.bisect.mark(self.repo, t.old, old)
        return self._answer_text(answer)

    def _answer_text(self, answer: proc.Result) -> str:
        text = answer.stdout + answer.stderr
        if answer.ok or _ONLY_SKIPPED in text:
            return text
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

    def _check_orientation(
        self, vo: Verdict, vn: Verdict, old_ref: str, new_ref: str, old: str, new: str
    ) -> None:
        t = self.terms
        at_old, at_new = vo.value, vn.value
        want_old, want_new = (FAIL, PASS) if t.fix else (PASS, FAIL)
        if (at_old, at_new) == (want_old, want_new):
            return
        repo = self.repo
        by_hand = (
            f"Check by hand: `git -C {quote(repo)} checkout {new_ref} && PYTHONPATH={quote(repo)} "
            f"{quote(self.runner.python)} {quote(self.runner.repro)}; echo $?`, then "
            f"`git -C {quote(repo)} checkout -` "
        )
        last = _last_lines(vo if at_old == FAIL else vn)
        if not t.fix:
            if at_old == PASS and at_new == PASS:
                raise OnboardError(
                    f"The repro passes at both --good {old_ref} ({old[:10]}) and --bad {new_ref} "
                    f"({new[:10]}): it does not reproduce the problem at {new_ref}, so there is "
                    "nothing to bisect.",
                    next_step="Make the repro exit non-zero when the problem shows (an assert or "
                    f"sys.exit(1)), or pass a --bad that has the problem. {by_hand}",
                )
            if at_old == FAIL and at_new == FAIL:
                raise OnboardError(
                    f"The repro fails at --good {old_ref} ({old[:10]}) as well as at --bad "
                    f"{new_ref}, so {old_ref} is not a good bound.{last}",
                    next_step="Pass an older --good where it passes (e.g. an earlier release tag), "
                    "or check that the repro runs at all against this checkout.",
                )
            raise OnboardError(
                f"The repro fails at --good {old_ref} and passes at --bad {new_ref}: between them "
                "the problem was fixed, not introduced.",
                next_step="To find the commit that fixed it, run the same command with "
                "`--term-old broken --term-new fixed`.",
            )
        if at_old == PASS and at_new == FAIL:
            raise OnboardError(
                f"With --term-old {t.old} --term-new {t.new} onboard looks for the commit where "
                f"the repro starts passing, but it passes at --good {old_ref} and fails at --bad "
                f"{new_ref}: that is a regression.",
                next_step="Drop --term-old/--term-new to find the commit that broke it.",
            )
        state = "passes" if at_old == PASS else "fails"
        raise OnboardError(
            f"The repro {state} at both --good {old_ref} and --bad {new_ref}, so there is no "
            f"{t.old} -> {t.new} change between them to find.{last}",
            next_step="With --term-old/--term-new the repro must fail at --good and pass at "
            f"--bad. {by_hand}",
        )

    def _loop(self, result: CommitBisect, answer: str) -> None:
        t = self.terms
        recent: list[str] = []
        limit = result.candidates + 5
        steps = 0
        while True:
            first = _FIRST.search(answer)
            if first:
                result.culprit = self._info(first.group(1))
                self.reporter.step(
                    f"found: {first.group(1)[:12]} is the first {t.new} commit "
                    f"({result.executions} repro runs)"
                )
                break
            if _ONLY_SKIPPED in answer:
                tail = answer.split(_ONLY_SKIPPED, 1)[1]
                result.possible = [self._info(sha) for sha in _SHA_LINE.findall(tail)]
                self.reporter.step(
                    f"only skipped commits are left: {len(result.possible)} possible culprits"
                )
                break
            steps += 1
            if steps > limit:
                raise OnboardError(
                    f"git bisect did not converge after {limit} steps; "
                    f"last answer: {answer.strip()}",
                    next_step="Report this with the bisect log.",
                )
            nxt = _NEXT.search(answer)
            sha = nxt.group(1) if nxt else (git.refs.head_sha(self.repo) or "")
            roughly = _ROUGHLY.search(answer)
            total = (steps + int(roughly.group(1))) if roughly else result.expected_steps
            label = nxt.group(2).strip() if nxt else git.history.subject_of(self.repo, sha)
            self.reporter.step(
                f"step {steps} of ~{max(total, steps)}: testing {sha[:10]} {label[:70]}"
                + (f"  (last: {', '.join(recent[-3:])})" if recent else "")
            )
            step = self.test(sha, label, BISECT)
            result.steps.append(step)
            recent.append(step.mark)
            detail = step.verdict.summary() if step.verdict else step.reason
            self.reporter.step(
                f"  {sha[:10]} is {step.mark}: {detail}"
                + (f" ({step.reason})" if step.reason and step.verdict else "")
            )
            answer = self._mark(step.mark)

    def _info(self, sha: str) -> CommitInfo:
        return commit_info(self.repo, sha, github_base(self.repo))


def _short(ref: str) -> str:
    return ref[:10] if re.fullmatch(r"[0-9a-f]{40}", ref) else ref


def _word(v: Verdict) -> str:
    return {PASS: "passes", FAIL: "fails"}.get(v.value, "gives no verdict") + (
        " (flaky)" if v.flaky else ""
    )


def _last_lines(v: Verdict) -> str:
    tails = [r.tail for r in v.runs if r.tail]
    if not tails:
        return ""
    return " Its last output: " + " | ".join(tails[0].splitlines()[-3:])


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
