"""Which harvested comments a run shows: ``--path``, ``--module``, ``--tag``,
``--python-only`` and ``--limit``."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field

from onboard.errors import BadInput
from onboard.jsonable import spec
from onboard.workflows.harvest import rank
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.stored import StoredItems
from onboard.workflows.harvest.tags import TAGS
from onboard.workflows.harvest.target import Target

DEFAULT_LIMIT = 20


def _tag_names(tags: Sequence[str]) -> list[str]:
    return sorted({t.upper() for t in tags})


@dataclass(frozen=True)
class Filters:
    """What to show; its JSON names each filter as its command-line option."""

    paths: Sequence[str] = field(default=(), metadata=spec(key="path"))
    modules: Sequence[str] = field(default=(), metadata=spec(key="module"))
    tags: Sequence[str] = field(default=(), metadata=spec(key="tag", convert=_tag_names))
    python_only: bool = False
    limit: int = DEFAULT_LIMIT  # 0: every match

    def __post_init__(self) -> None:
        if self.limit < 0:
            raise BadInput(f"--limit {self.limit}: must be 0 (all) or more.")
        bad = self._tags() - set(TAGS)
        if bad:
            raise BadInput(
                f"--tag {', '.join(sorted(bad))}: not a tag onboard harvests.",
                next_step=f"Use one of {', '.join(TAGS)}.",
            )

    def check(self, target: Target) -> None:
        """Every --path is there: a typo'd one would otherwise look like "no TODOs here"."""
        for path in self.paths:
            rel = _relative(path)
            globbed = any(c in rel for c in "*?[")
            if not (next(target.root.glob(rel), None) if globbed else (target.root / rel).exists()):
                raise BadInput(
                    f"--path {path}: there is no such file or folder in {target.root}.",
                    next_step="Give a path relative to the checkout root, e.g. `--path torch/nn`.",
                )

    def select(self, items: Sequence[Item]) -> Sequence[Item]:
        """The items that pass the filters (``items`` itself when there are none: a
        cached result's items are built only when used)."""
        tags = self._tags()
        if not (self.paths or self.modules or tags or self.python_only):
            return items
        paths = [_relative(p) for p in self.paths]
        return [
            item
            for item in items
            if (item.python_only or not self.python_only)
            and (not tags or item.tag in tags)
            and (not paths or _under(item.path, paths))
            and (not self.modules or any(rank.matches_module(item.module, m) for m in self.modules))
        ]

    def first(self, items: Sequence[Item]) -> list[Item]:
        """The ones shown: ``limit`` of them (all with 0), one per linked issue: a
        comment naming an issue or PR that a higher-ranked one names is one task with
        it, listed under it (``Item.same_issue``) instead of taking a place."""
        shown: list[Item] = []
        lead_of: dict[int, Item] = {}
        for item in items:
            if self.limit and len(shown) == self.limit:
                break
            if not _joins(item, lead_of):
                item.same_issue = []
                shown.append(item)
                for n in (*item.form.issues, *item.form.pulls):
                    lead_of[n] = item
        # Below the cut, only the comments that name a shown one's issue can join it
        # (a cached result finds those without building the rest).
        if self.limit and len(shown) == self.limit:
            linking = items.naming(set(lead_of)) if isinstance(items, StoredItems) else items
            seen = {id(i) for i in shown}
            for item in linking:
                if id(item) not in seen and (item.form.issues or item.form.pulls):
                    _joins(item, lead_of)
        return shown

    def _tags(self) -> set[str]:
        return {t.upper() for t in self.tags}


def _joins(item: Item, lead_of: dict[int, Item]) -> bool:
    """Whether ``item`` names an issue or PR a shown item names (it is added to that
    item's ``same_issue``, and its other numbers lead there too)."""
    numbers = (*item.form.issues, *item.form.pulls)
    lead = next((lead_of[n] for n in numbers if n in lead_of), None)
    if lead is None:
        return False
    if all(other is not item for other in lead.same_issue):
        lead.same_issue.append(item)
    for n in numbers:
        lead_of.setdefault(n, lead)
    return True


def _relative(path: str) -> str:
    return path.strip("/").removeprefix("./")


def _under(path: str, wanted: Sequence[str]) -> bool:
    """Whether ``path`` is one of ``wanted`` or under one (globs allowed)."""
    for want in wanted:
        if any(ch in want for ch in "*?["):
            if fnmatch.fnmatch(path, want) or fnmatch.fnmatch(path, want.rstrip("/") + "/*"):
                return True
        elif path == want or path.startswith(want + "/"):
            return True
    return False
