"""What `onboard blame`, `onboard reviews` and `onboard reviews sync` answer: one
dataclass each, feeding the views (``onboard/views/reviews.py``, ``blame.py``), the
Markdown (`markdown.py`) and ``--json`` alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.github_cache import ApiStats
from onboard.workflows.reviews.blame import Skipped
from onboard.workflows.reviews.codeowners import Owners
from onboard.workflows.reviews.comments import Review, Thread
from onboard.workflows.reviews.history import Approval, HistoryState, Landed
from onboard.workflows.reviews.merge_rules import MergeRule
from onboard.workflows.reviews.tree import Target


@dataclass
class Checkout:
    path: str
    kind: str  # clone / repo / reference
    commit: str | None
    upstream: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "commit": self.commit,
            "upstream": self.upstream,
        }


@dataclass
class PrView:
    """A landed pull request as shown: the commit, links, and what its review said."""

    change: Landed
    url: str | None
    commit_url: str | None  # None when the repository has no GitHub remote to link to
    reviews: list[Review] = field(default_factory=list)
    comments_here: int = 0
    problem: str | None = None  # why its review is not shown

    def states(self) -> dict[str, list[str]]:
        """Each reviewer's last state (bots left out), grouped by state."""
        last: dict[str, str] = {}
        for r in sorted(self.reviews, key=lambda r: r.submitted_at):
            if r.user_is_bot or (r.state == "COMMENTED" and r.user in last):
                continue
            last[r.user] = r.state
        out: dict[str, list[str]] = {}
        for user, state in last.items():
            out.setdefault(state, []).append(user)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            **self.change.to_json(),
            "url": self.url,
            "commit_url": self.commit_url,
            "review_states": self.states(),
            "comments_on_these_files": self.comments_here,
            "review_problem": self.problem,
        }


@dataclass
class FileFacts:
    target: Target
    rules: list[MergeRule] = field(default_factory=list)
    owners: Owners | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.target.to_json(),
            "merge_rules": [r.to_json() for r in self.rules],
            "codeowners": self.owners.to_json() if self.owners else None,
        }


@dataclass
class ReviewsResult:
    mode: str  # op / paths / branch
    query: list[str]
    checkout: Checkout
    history: HistoryState
    files: list[FileFacts] = field(default_factory=list)
    prs: list[PrView] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)
    threads: list[Thread] = field(default_factory=list)
    reviewer: str | None = None
    since: str | None = None
    limit: int = 0
    api: ApiStats | None = None
    offline: bool = False
    rules_source: str | None = None  # where merge_rules.yaml was read (None: not found)
    notes: list[str] = field(default_factory=list)

    exit_code = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "mode": self.mode,
            "query": self.query,
            "checkout": self.checkout.to_json(),
            "history": self.history.to_json(),
            "since": self.since,
            "limit": self.limit,
            "reviewer": self.reviewer,
            "files": [f.to_json() for f in self.files],
            "merge_rules_source": self.rules_source,
            "pull_requests": [p.to_json() for p in self.prs],
            "approvals": [a.to_json() for a in self.approvals],
            "threads": [t.to_json() for t in self.threads],
            "github": self.api.to_json() if self.api else None,
            "offline": self.offline,
            "notes": self.notes,
        }

    def markdown(self) -> str:
        from onboard.workflows.reviews import markdown

        return markdown.reviews(self)


@dataclass
class BlamedLine:
    line: int
    text: str
    sha: str
    orig_line: int
    orig_path: str
    boundary: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "text": self.text,
            "sha": self.sha,
            "line_then": self.orig_line,
            "path_then": self.orig_path,
            "boundary": self.boundary,
        }


@dataclass
class BlameResult:
    path: str
    start: int
    end: int
    walk: bool
    checkout: Checkout
    history: HistoryState
    lines: list[BlamedLine] = field(default_factory=list)
    prs: dict[str, PrView] = field(default_factory=dict)  # by commit sha
    threads: dict[str, list[Thread]] = field(default_factory=dict)  # by commit sha
    skipped: list[Skipped] = field(default_factory=list)
    ignored_listed: int = 0
    originals: dict[str, list[PrView]] = field(default_factory=dict)  # reland sha -> its original
    api: ApiStats | None = None
    offline: bool = False
    notes: list[str] = field(default_factory=list)

    exit_code = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "path": self.path,
            "lines": [self.start, self.end],
            "walk": self.walk,
            "checkout": self.checkout.to_json(),
            "history": self.history.to_json(),
            "blame": [ln.to_json() for ln in self.lines],
            "commits": {sha: p.to_json() for sha, p in self.prs.items()},
            "threads": {sha: [t.to_json() for t in ts] for sha, ts in self.threads.items()},
            "skipped": [s.to_json() for s in self.skipped],
            "ignore_revs_applied": self.ignored_listed,
            "relands_of": {sha: [p.to_json() for p in v] for sha, v in self.originals.items()},
            "github": self.api.to_json() if self.api else None,
            "offline": self.offline,
            "notes": self.notes,
        }

    def markdown(self) -> str:
        from onboard.workflows.reviews import markdown

        return markdown.blame(self)


@dataclass
class SyncedPr:
    pr: int
    source: str  # cache / api / revalidated / missing
    comments: int
    reviews: int
    problem: str | None
    gone: bool = False  # GitHub has no such pull request: known, nothing to fetch

    def to_json(self) -> dict[str, Any]:
        return {
            "pr": self.pr,
            "source": self.source,
            "comments": self.comments,
            "reviews": self.reviews,
            "problem": self.problem,
            "not_on_github": self.gone,
        }


@dataclass
class SyncResult:
    query: list[str]
    checkout: Checkout
    history: HistoryState
    files: list[Target] = field(default_factory=list)
    prs: list[SyncedPr] = field(default_factory=list)
    api: ApiStats = field(default_factory=ApiStats)
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[SyncedPr]:
        return [p for p in self.prs if not p.gone and (p.source == "missing" or p.problem)]

    @property
    def exit_code(self) -> int:
        return 1 if self.missing or self.api.stopped else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == 0,
            "query": self.query,
            "checkout": self.checkout.to_json(),
            "history": self.history.to_json(),
            "files": [t.to_json() for t in self.files],
            "pull_requests": [p.to_json() for p in self.prs],
            "github": self.api.to_json(),
            "notes": self.notes,
        }
