"""GitHub for one harvest: the state and labels of the issues the shown comments
name (they move an item's score), the newcomer-labelled issues (``--issues``),
and ONE note for whatever GitHub could not be asked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onboard.github.token import DEFAULT_API_URL
from onboard.workflows.harvest import enrich, rank
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.stored import StoredItems

__all__ = ["DEFAULT_API_URL", "DEFAULT_GITHUB_REPO", "GitHubAsk"]

DEFAULT_GITHUB_REPO = "pytorch/pytorch"


class GitHubAsk:
    """What one run asks GitHub. The token is looked up on first use only (most runs
    need none: the issues are cached); each problem is kept for ``note``."""

    def __init__(self, api_url: str, repo: str, cache: Path | None) -> None:
        self.api_url = api_url
        self.repo = repo
        self.cache = cache
        self.problem: str | None = None  # why GitHub was not (fully) used
        self._skipped: list[str] = []  # what that left out
        self._token: list[str | None] = []

    def token(self) -> str | None:
        if not self._token:
            from onboard.github.token import find_token

            found = find_token(self.api_url)
            self._token.append(found.value if found is not None else None)
        return self._token[0]

    def rank_linked(self, items: Sequence[Item]) -> Sequence[Item]:
        """``items`` scored again with the state and labels of the issues and PRs they
        name, and ranked again when any was found."""
        lookup = enrich.linked_issues(
            _linked_numbers(items), token=self.token, api_url=self.api_url, repo=self.repo,
            cache=self.cache,
        )  # fmt: skip
        if lookup.fetched:
            for item in _linking(items):
                numbers = (*item.form.issues, *item.form.pulls)
                item.linked = [lookup.fetched[n] for n in numbers if n in lookup.fetched]
                if item.linked:
                    rank.score(item, None)
            items = sorted(items, key=rank.sort_key)
        if lookup.problem:
            self.problem = lookup.problem
            self._skipped.append(
                f"{lookup.unchecked} linked issue(s) ranked without state and labels"
            )
        return items

    def newcomer_issues(self, limit: int) -> list[dict[str, Any]]:
        """Open issues labelled for newcomers (``limit`` 0: up to 50)."""
        found: list[dict[str, Any]] = []
        if not (self.problem and not self.token()):
            found, problem = enrich.newcomer_issues(
                token=self.token(), api_url=self.api_url, repo=self.repo, limit=limit or 50
            )
            self.problem = self.problem or problem
        if self.problem and not found:
            self._skipped.append("--issues listed nothing")
        return found

    def note(self) -> str | None:
        """ONE line, whatever was skipped (None: GitHub answered all)."""
        if self.problem is None:
            return None
        return f"GitHub not used: {self.problem}; {'; '.join(self._skipped)}."


def _linking(items: Sequence[Item]) -> list[Item]:
    """The items that name an issue or a PR (a cached result knows them unbuilt)."""
    if isinstance(items, StoredItems):
        return items.linking()
    return [i for i in items if i.form.issues or i.form.pulls]


def _linked_numbers(items: Sequence[Item]) -> list[int]:
    """The issue and PR numbers the items name (a cached result: none built for them)."""
    if isinstance(items, StoredItems):
        return items.linked_numbers()
    return list(dict.fromkeys(n for i in items for n in (*i.form.issues, *i.form.pulls)))
