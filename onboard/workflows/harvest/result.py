"""What `onboard harvest` and `onboard harvest show ID` answer, and their JSON
(``onboard/views/harvest.py`` draws them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.jsonable import spec
from onboard.workflows.harvest.collect import Scan
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.tags import TAGS


@dataclass
class HarvestResult:
    """What `onboard harvest` found. JSON keys: items, filters, notes, issues, then root,
    tree, commit, searcher, summary (see ``summary``), seconds."""

    scan: Scan = field(metadata=spec(omit=True))  # its part of the JSON: json_extra
    items: list[Item]  # the shown ones, ranked
    # items passing the filters (before --limit): in JSON in summary
    matched: int = field(metadata=spec(omit=True))
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

    def json_extra(self) -> dict[str, object]:
        t = self.scan.target
        return {
            "root": t.root,
            "tree": t.kind,
            "commit": t.ws.commit if t.ws else None,
            "searcher": self.scan.searcher,
            "summary": self.summary(),
            "seconds": self.scan.seconds,
        }


@dataclass
class ShowResult:
    """One harvested comment with the code around it, its blame and links."""

    item: Item
    # In JSON one "context" {start_line, lines} (json_extra).
    context_start: int = field(metadata=spec(omit=True))
    context: list[str] = field(metadata=spec(omit=True))
    blame: list[dict[str, Any]]  # per line of the comment
    links: dict[str, Any]
    notes: list[str]
    root: Path

    @property
    def exit_code(self) -> int:
        return 0

    def json_extra(self) -> dict[str, object]:
        return {"context": {"start_line": self.context_start, "lines": self.context}}
