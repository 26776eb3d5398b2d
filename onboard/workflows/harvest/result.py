"""What `onboard harvest` and `onboard harvest show ID` answer, and their JSON
(``onboard/views/harvest.py`` draws them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.workflows.harvest.collect import Scan
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.tags import TAGS


@dataclass
class HarvestResult:
    """What `onboard harvest` found (JSON keys: see ``to_json``)."""

    scan: Scan
    items: list[Item]  # the shown ones, ranked
    matched: int  # items passing the filters (before --limit)
    filters: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    issues: list[dict[str, Any]] | None = None  # --issues

    @property
    def total(self) -> int:
        return len(self.scan.items)

    @property
    def exit_code(self) -> int:
        return 0

    def summary(self) -> dict[str, Any]:
        s = self.scan
        tags, kinds, python = s.counts()
        return {
            "harvested": self.total,
            "matched": self.matched,
            "shown": len(self.items),
            "python_only": python,
            "by_tag": {t: tags.get(t, 0) for t in TAGS},
            "by_kind": dict(sorted(kinds.items())),
            "skipped_vendored": s.skipped_vendored,
            "skipped_vendored_files": s.skipped_vendored_files,
            "skipped_generated": s.skipped_generated,
            "skipped_generated_files": s.skipped_generated_files,
            "candidate_lines": s.candidate_lines,
            "files_with_hits": s.files_with_hits,
            "non_comment_hits": s.non_comment_hits,
            "unterminated_string_files": s.unterminated_files,
            "files_lexed": s.files_lexed,
            "files_cached": s.files_cached,
            "cache": s.cache,
            "changed_during_run": dict(s.changed_during_run),
        }

    def to_json(self) -> dict[str, Any]:
        t = self.scan.target
        return {
            "root": str(t.root),
            "tree": t.kind,
            "commit": t.ws.commit if t.ws else None,
            "searcher": self.scan.searcher,
            "summary": self.summary(),
            "filters": self.filters,
            "items": [i.to_json() for i in self.items],
            "issues": self.issues,
            "notes": self.notes,
            "seconds": self.scan.seconds,
        }


@dataclass
class ShowResult:
    """One harvested comment with the code around it, its blame and links."""

    item: Item
    context_start: int
    context: list[str]
    blame: list[dict[str, Any]]  # per line of the comment
    links: dict[str, Any]
    notes: list[str]
    root: Path

    @property
    def exit_code(self) -> int:
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            "item": self.item.to_json(),
            "root": str(self.root),
            "context": {"start_line": self.context_start, "lines": self.context},
            "blame": self.blame,
            "links": self.links,
            "notes": self.notes,
        }
