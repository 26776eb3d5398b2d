"""What `onboard blame`, `onboard reviews` and `onboard reviews sync` answer: one
dataclass each, feeding the views (``onboard/views/reviews.py``, ``blame.py``), the
Markdown (`markdown.py`) and ``--json`` alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.github.cache import ApiStats
from onboard.jsonable import spec, to_json
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


@dataclass
class PrView:
    """A landed pull request as shown: the commit, links, and what its review said."""

    change: Landed = field(metadata=spec(omit=True))  # its keys join (json_extra)
    url: str | None
    commit_url: str | None  # None when the repository has no GitHub remote to link to
    reviews: list[Review] = field(default_factory=list, metadata=spec(omit=True))
    comments_here: int = field(default=0, metadata=spec(key="comments_on_these_files"))
    # why its review is not shown
    problem: str | None = field(default=None, metadata=spec(key="review_problem"))

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

    def json_extra(self) -> dict[str, Any]:
        return {**to_json(self.change), "review_states": self.states()}


@dataclass
class FileFacts:
    target: Target = field(metadata=spec(omit=True))  # its keys join (json_extra)
    rules: list[MergeRule] = field(default_factory=list, metadata=spec(key="merge_rules"))
    owners: Owners | None = field(default=None, metadata=spec(key="codeowners"))

    def json_extra(self) -> dict[str, Any]:
        return to_json(self.target)  # its keys join the file's facts


@dataclass
class ReviewsResult:
    mode: str  # op / paths / branch
    query: list[str]
    checkout: Checkout
    history: HistoryState
    since: str | None = None
    limit: int = 0
    reviewer: str | None = None
    files: list[FileFacts] = field(default_factory=list)
    # where merge_rules.yaml was read (None: not found)
    rules_source: str | None = field(default=None, metadata=spec(key="merge_rules_source"))
    prs: list[PrView] = field(default_factory=list, metadata=spec(key="pull_requests"))
    approvals: list[Approval] = field(default_factory=list)
    threads: list[Thread] = field(default_factory=list)
    api: ApiStats | None = field(default=None, metadata=spec(key="github"))
    offline: bool = False
    notes: list[str] = field(default_factory=list)

    exit_code = 0

    def json_extra(self) -> dict[str, Any]:
        return {"ok": True}

    def markdown(self) -> str:
        from onboard.workflows.reviews import markdown

        return markdown.reviews(self)


@dataclass
class BlamedLine:
    line: int
    text: str
    sha: str
    orig_line: int = field(metadata=spec(key="line_then"))
    orig_path: str = field(metadata=spec(key="path_then"))
    boundary: bool


@dataclass
class BlameResult:
    path: str
    start: int = field(metadata=spec(omit=True))  # JSON: "lines" [start, end]
    end: int = field(metadata=spec(omit=True))
    walk: bool
    checkout: Checkout
    history: HistoryState
    lines: list[BlamedLine] = field(default_factory=list, metadata=spec(key="blame"))
    # by commit sha
    prs: dict[str, PrView] = field(default_factory=dict, metadata=spec(key="commits"))
    threads: dict[str, list[Thread]] = field(default_factory=dict)  # by commit sha
    skipped: list[Skipped] = field(default_factory=list)
    ignored_listed: int = field(default=0, metadata=spec(key="ignore_revs_applied"))
    # reland sha -> its original
    originals: dict[str, list[PrView]] = field(
        default_factory=dict, metadata=spec(key="relands_of")
    )
    api: ApiStats | None = field(default=None, metadata=spec(key="github"))
    offline: bool = False
    notes: list[str] = field(default_factory=list)

    exit_code = 0

    def json_extra(self) -> dict[str, Any]:
        return {"ok": True, "lines": [self.start, self.end]}

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
    # GitHub has no such pull request: known, nothing to fetch
    gone: bool = field(default=False, metadata=spec(key="not_on_github"))


@dataclass
class SyncResult:
    query: list[str]
    checkout: Checkout
    history: HistoryState
    files: list[Target] = field(default_factory=list)
    prs: list[SyncedPr] = field(default_factory=list, metadata=spec(key="pull_requests"))
    api: ApiStats = field(default_factory=ApiStats, metadata=spec(key="github"))
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[SyncedPr]:
        return [p for p in self.prs if not p.gone and (p.source == "missing" or p.problem)]

    @property
    def exit_code(self) -> int:
        return 1 if self.missing or self.api.stopped else 0

    def json_extra(self) -> dict[str, Any]:
        return {"ok": self.exit_code == 0}
