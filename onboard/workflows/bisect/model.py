"""What a bisect found, as one object for the table, the JSON and the tests.

JSON keys (stable):
- ``ok``: a single culprit was pinned (the first new commit, or with --wheels
  and no repository, two adjacent releases).
- ``repro``, ``python``, ``repeat``, ``timeout``, ``on_crash``, ``build``.
- ``wheels``: null, or ``{package, versions, last_old, first_new, skipped,
  steps, venvs}`` for the release level.
- ``commits``: null, or ``{repo, old, new, old_ref, new_ref, terms: {old, new},
  old_state, first_parent, candidates, expected_steps, steps, culprit,
  possible, skipped, flaky, executions, builds, log, replay, restored_to}``.
  ``culprit`` / each of ``possible``: ``{sha, subject, author, author_email,
  date, pr, pr_url, url, files}``. Each step: ``{rev, label, phase, mark,
  verdict, flaky, reason, seconds, build: null | {ok, seconds, reason, log},
  runs: [{outcome, returncode, signal, seconds, tail}]}``.
- ``executions`` (repro runs in all), ``notes``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import git
from onboard.jsonable import spec
from onboard.shell import quote
from onboard.workflows.bisect.builds import BuildOutcome
from onboard.workflows.bisect.runner import Verdict
from onboard.workflows.reviews.tree import pulls_repo

PREFLIGHT = "preflight"
BISECT = "bisect"

_PR_RESOLVED = re.compile(r"^Pull Request resolved:\s*(\S+/pull/(\d+))\s*$", re.M)
_PR_SUBJECT = re.compile(r"\(#(\d+)\)\s*$")


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    author: str
    author_email: str
    date: str
    pr: int | None
    pr_url: str | None
    url: str | None  # None when the repository has no GitHub remote to link to
    files: tuple[str, ...]


def github_base(repo: Path) -> str | None:
    """https://github.com/OWNER/NAME whose pull requests the history's ``(#1013)`` name
    (``pulls_repo``: pytorch/pytorch in PyTorch's tree, else the repository's own GitHub
    remote); None when there is none: nothing is linked then, as a subject's ``(#1013)``
    in another repository is not pytorch/pytorch's #1013."""
    found = pulls_repo(repo)
    return f"https://github.com/{found}" if found else None


def pr_of(subject: str, body: str, base: str | None) -> tuple[int | None, str | None]:
    """The PR a merge-bot commit came from (.github/scripts/trymerge.py writes both forms):
    the URL its body gives, else the subject's number, linked under ``base`` if any."""
    resolved = _PR_RESOLVED.findall(body)
    if resolved:
        url, number = resolved[-1]
        return int(number), url
    match = _PR_SUBJECT.search(subject)
    if match:
        return int(match.group(1)), f"{base}/pull/{match.group(1)}" if base else None
    return None, None


def commit_info(repo: Path, sha: str, base: str | None) -> CommitInfo:
    """``base``: the repository's GitHub URL (``github_base``), None for no links."""
    fields = git.history.commit_fields(repo, sha)
    pr, pr_url = pr_of(fields["subject"], fields["body"], base)
    return CommitInfo(
        sha=fields["sha"],
        subject=fields["subject"],
        author=fields["author"],
        author_email=fields["author_email"],
        date=fields["date"],
        pr=pr,
        pr_url=pr_url,
        url=f"{base}/commit/{fields['sha']}" if base else None,
        files=tuple(git.history.files_touched(repo, sha)),
    )


@dataclass
class Step:
    """One tested commit or release."""

    rev: str  # a sha, or a version
    label: str  # the commit subject, or "PACKAGE VERSION"
    phase: str  # preflight | bisect
    mark: str  # the term recorded: good / bad / skip (or the custom terms; old / new for wheels)
    # None when it was skipped before running (a failed build); JSON: its value
    verdict: Verdict | None = field(metadata=spec(empty="skip", convert=lambda v: v.value))
    reason: str = ""
    build: BuildOutcome | None = None

    @property
    def flaky(self) -> bool:
        return bool(self.verdict and self.verdict.flaky)

    @property
    def seconds(self) -> float:
        return (self.verdict.seconds if self.verdict else 0.0) + (
            self.build.seconds if self.build else 0.0
        )

    def json_extra(self) -> dict[str, Any]:
        return {
            "flaky": self.flaky,
            "seconds": round(self.seconds, 3),
            "runs": self.verdict.runs if self.verdict else [],
        }


@dataclass
class CommitBisect:
    repo: Path
    old: str
    new: str
    old_ref: str
    new_ref: str
    term_old: str = field(metadata=spec(omit=True))  # JSON: "terms" {old, new}
    term_new: str = field(metadata=spec(omit=True))
    old_state: str  # "passes" (a regression) or "fails" (looking for a fix)
    first_parent: bool
    candidates: int
    expected_steps: int
    steps: list[Step] = field(default_factory=list)
    culprit: CommitInfo | None = None
    possible: list[CommitInfo] = field(default_factory=list)
    builds: int = 0
    log: Path | None = None
    restored_to: str = ""
    notes: list[str] = field(default_factory=list)  # what the user should know (set-aside changes)

    @property
    def executions(self) -> int:
        return sum(len(s.verdict.runs) for s in self.steps if s.verdict)

    @property
    def skipped(self) -> list[Step]:
        return [s for s in self.steps if s.mark == "skip"]

    @property
    def flaky(self) -> list[Step]:
        return [s for s in self.steps if s.flaky]

    @property
    def replay(self) -> str | None:
        return f"git -C {quote(self.repo)} bisect replay {quote(self.log)}" if self.log else None

    def json_extra(self) -> dict[str, Any]:
        return {
            "terms": {"old": self.term_old, "new": self.term_new},
            "skipped": [{"sha": s.rev, "reason": s.reason} for s in self.skipped],
            "flaky": [
                {"sha": s.rev, "reason": s.verdict.reason if s.verdict else ""} for s in self.flaky
            ],
            "executions": self.executions,
            "replay": self.replay,
        }


@dataclass
class WheelBisect:
    package: str
    versions: list[str]
    last_old: str | None = None
    first_new: str | None = None
    skipped: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    venvs: str = ""

    @property
    def executions(self) -> int:
        return sum(len(s.verdict.runs) for s in self.steps if s.verdict)

    @property
    def untestable_between(self) -> list[str]:
        """The skipped releases between the last old and the first new one."""
        if self.last_old is None or self.first_new is None:
            return []
        i, j = self.versions.index(self.last_old), self.versions.index(self.first_new)
        return [v for v in self.versions[i + 1 : j] if v in self.skipped]

    def json_extra(self) -> dict[str, Any]:
        return {"executions": self.executions}


@dataclass
class BisectResult:
    repro: str
    python: str
    repeat: int
    timeout: float | None
    on_crash: str
    build: str
    wheels: WheelBisect | None = None
    commits: CommitBisect | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.commits is not None:
            return self.commits.culprit is not None
        w = self.wheels
        return bool(w and w.first_new and not w.untestable_between)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    @property
    def executions(self) -> int:
        return (self.wheels.executions if self.wheels else 0) + (
            self.commits.executions if self.commits else 0
        )

    def json_extra(self) -> dict[str, Any]:
        return {"ok": self.ok, "executions": self.executions}
