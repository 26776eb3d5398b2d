"""Reviewers `onboard pr` can suggest (never request) for the files a branch changes:
the people `.github/merge_rules.yaml` lets approve them (specific rules only: the
catch-all ones name everyone's reviewers), and those who approved earlier changes
to them (the `Approved by:` lines of their history). Git only, no API call."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from onboard import git
from onboard.errors import OnboardError
from onboard.jsonable import spec
from onboard.workflows.reviews import merge_rules, trailers

_PATHS_READ = 10  # history of at most this many changed files
_COMMITS_READ = 30  # per file


@dataclass(frozen=True)
class Suggestion:
    login: str
    approved: int  # changes to these files it approved
    last: str  # the day of the last one
    # merge rules that let it approve them
    rules: tuple[str, ...] = field(metadata=spec(key="merge_rules"))

    def why(self) -> str:
        parts = []
        if self.approved:
            parts.append(f"approved {self.approved} change(s) to these files, last {self.last}")
        if self.rules:
            parts.append(f"may approve them ({', '.join(self.rules)})")
        return "; ".join(parts)


def reviewers(repo: Path, paths: list[str], *, most: int = 5) -> list[Suggestion]:
    """At most ``most`` people, those both in a rule and in the history first."""
    approved: dict[str, list[str]] = {}
    try:
        for path in paths[:_PATHS_READ]:
            for entry in git.history.log_for_path(
                repo, path, max_count=_COMMITS_READ, follow=False
            ):
                for login in trailers.parse(entry.message).approvers:
                    if not trailers.is_bot(login):
                        approved.setdefault(login, []).append(entry.date[:10])
    except (OnboardError, OSError):
        approved = {}
    by_rule: dict[str, list[str]] = {}
    try:
        text = (repo / merge_rules.PATH).read_text(encoding="utf-8")
        matcher = merge_rules.Matcher(merge_rules.parse(text))
        for path in paths:
            for rule in matcher.rules_for(path):
                if not rule.catch_all:
                    for login in rule.people:
                        by_rule.setdefault(login, [])
                        if rule.name not in by_rule[login]:
                            by_rule[login].append(rule.name)
    except (OSError, merge_rules.Unreadable):
        pass
    people = set(approved) | set(by_rule)
    found = [
        Suggestion(
            login,
            len(approved.get(login, [])),
            max(approved.get(login, [""])),
            tuple(by_rule.get(login, [])),
        )
        for login in people
    ]
    found.sort(key=lambda s: (-(bool(s.approved) and bool(s.rules)), -s.approved, s.login.lower()))
    return found[:most]
