"""The items of a cached harvest, built when used.

A warm run shows twenty of thousands of comments, and an edit changes the
items of one file: building every item from the cache cost those runs more
than reading the file. ``StoredItems`` keeps each file's rows where the cache
holds them (a slice of the sealed file's attachment), parses a file's rows
when one of its items is first used and builds that item then (the same
object after that). The issue and PR numbers of the items that name one are
stored apart, so that looking their state up builds none of them.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from onboard.workflows.harvest import forms, rank
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.tags import language

Counts = tuple[Counter[str], Counter[str], int]  # per tag, per kind, in Python files


def counts_of(items: Iterable[Item]) -> Counts:
    tags: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    python = 0
    for i in items:
        form = i.form
        tags[form.tag] += 1
        kinds[form.kind] += 1
        python += i.language == "python"
    return tags, kinds, python


class StoredItems(Sequence[Item]):
    """The ranked items of a cached result (``linking()``: those naming an issue or PR).

    Places: the stored items in the files' order (0 .. stored-1), then the items
    added by ``updated`` (an edit's files, lexed again).
    """

    def __init__(
        self,
        files: list[tuple[str, int, int, int]],  # path, item count, where its rows are, size
        order: list[int],  # the ranking, as places
        linking: list[int],  # ranked too
        linked: list[list[list[int]]],  # per linking place: [issue numbers, PR numbers]
        reasons: list[list[Any]],
        attachment: bytes,  # the rows of every file, one JSON list each
    ) -> None:
        self._files = files
        self._starts: list[int] = []
        total = 0
        end = 0
        for _path, count, at, size in files:
            self._starts.append(total)
            total += count
            if at != end:
                raise ValueError("the files' rows are not where the body says")
            end = at + size
        if (
            end != len(attachment)
            or sorted(order) != list(range(total))
            or not set(linking) <= set(order)
            or len(linked) != len(linking)
        ):
            raise ValueError("not a ranking of the stored items")
        self._stored = total
        self._order = order
        self._linking = linking
        self._linked = dict(zip(linking, linked, strict=True))
        self._reasons = [rank.Reason(p, w) for p, w in reasons]
        self._attachment = attachment
        self._built: dict[int, Item] = {}
        self._rows: dict[int, list[Any]] = {}
        self._added: list[Item] = []
        self._dropped: frozenset[str] = frozenset()

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, at: int) -> Item: ...
    @overload
    def __getitem__(self, at: slice) -> list[Item]: ...
    def __getitem__(self, at: int | slice) -> Item | list[Item]:
        if isinstance(at, slice):
            return [self._item(n) for n in self._order[at]]
        return self._item(self._order[at])

    def __iter__(self) -> Iterator[Item]:
        return (self._item(n) for n in self._order)

    def linking(self) -> list[Item]:
        """The items that name an issue or a PR, ranked."""
        return [self._item(n) for n in self._linking]

    def naming(self, numbers: set[int]) -> list[Item]:
        """The items that name one of these issue or PR numbers, ranked (only those built)."""
        out = []
        for n in self._linking:
            if n >= self._stored:
                form = self._added[n - self._stored].form
                named: tuple[int, ...] = (*form.issues, *form.pulls)
            else:
                issues, pulls = self._linked[n]
                named = (*issues, *pulls)
            if not numbers.isdisjoint(named):
                out.append(self._item(n))
        return out

    def linked_numbers(self) -> list[int]:
        """The issue and PR numbers those items name, in their order (none built)."""
        out: dict[int, None] = {}
        for n in self._linking:
            if n >= self._stored:
                form = self._added[n - self._stored].form
                out.update(dict.fromkeys((*form.issues, *form.pulls)))
            else:
                issues, pulls = self._linked[n]
                out.update(dict.fromkeys((*issues, *pulls)))
        return list(out)

    def by_file(self) -> dict[str, list[Item]]:
        """Every stored item still here, per file (each file in its own order)."""
        out: dict[str, list[Item]] = {}
        for number, (path, _count, _at, _size) in enumerate(self._files):
            if path not in self._dropped:
                out[path] = self._file_items(number)
        return out

    def updated(self, dropped: set[str], added: Sequence[Item]) -> StoredItems:
        """These items without those of the ``dropped`` files and with ``added``, each
        put where a stable sort of them all would put it (an edit changes only its
        own file's items; the rest keep their ranking)."""
        new = object.__new__(StoredItems)
        new.__dict__.update(self.__dict__)
        new._dropped = self._dropped | dropped
        gone = {
            n
            for number, (path, count, _at, _size) in enumerate(self._files)
            if path in dropped
            for n in range(self._starts[number], self._starts[number] + count)
        }
        gone.update(self._stored + k for k, i in enumerate(self._added) if i.path in dropped)
        new._added = [*self._added, *added]
        order = [n for n in self._order if n not in gone]
        first = self._stored + len(self._added)
        for n in range(first, first + len(added)):
            bisect.insort_right(order, n, key=lambda m: rank.sort_key(new._item(m)))
        new._order = order
        linking = set(self._linking) - gone
        linking.update(n for n in range(first, first + len(added)) if _links(new._item(n)))
        new._linking = [n for n in order if n in linking]
        return new

    def counts_of_files(self, paths: set[str]) -> Counts:
        """The counts of the stored items of these files (to take them off the totals)."""
        return counts_of(
            item
            for number, (path, _c, _at, _size) in enumerate(self._files)
            if path in paths and path not in self._dropped
            for item in self._file_items(number)
        )

    def _file_items(self, number: int) -> list[Item]:
        start = self._starts[number]
        return [self._built_at(number, n) for n in range(start, start + self._files[number][1])]

    def _item(self, n: int) -> Item:
        if n >= self._stored:
            return self._added[n - self._stored]
        item = self._built.get(n)
        if item is None:
            item = self._built_at(bisect.bisect_right(self._starts, n) - 1, n)
        return item

    def _built_at(self, number: int, n: int) -> Item:
        """Stored item ``n``, of file ``number``: built once (the file's rows are
        parsed when the first of its items is asked for)."""
        item = self._built.get(n)
        if item is None:
            path, _count, at, size = self._files[number]
            rows = self._rows.get(number)
            if rows is None:
                rows = self._rows[number] = json.loads(self._attachment[at : at + size])
            item = self._built[n] = item_from(
                path, language(path) or "c++", rank.module_of(path),
                rows[n - self._starts[number]], self._reasons,
            )  # fmt: skip
        return item


def _links(item: Item) -> bool:
    return bool(item.form.issues or item.form.pulls)


def item_from(
    path: str, lang: str, module: str, row: list[Any], reasons: list[rank.Reason]
) -> Item:
    # Thousands per run, from a sealed body (``onboard.cache``): no per-field checks.
    iid, line, end, col, text, form, why, test_file = row
    tag, kind, owners, issues, pulls, internal, others, body = form
    f = forms.Form(
        tag,
        kind,
        tuple(owners) if owners else (),
        tuple(issues) if issues else (),
        tuple(pulls) if pulls else (),
        tuple(internal) if internal else (),
        tuple(others) if others else (),
        body,
    )
    item = Item(iid, path, line, end, col, lang, module, text, f)
    item.reasons = [reasons[n] for n in why]
    item.test_file = test_file
    return item
