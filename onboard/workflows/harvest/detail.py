"""`onboard harvest show ID`: one harvested comment with the code around it, its
blame per line and its links (GitHub source, the issues and PRs it names)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.workflows.harvest import collect, enrich
from onboard.workflows.harvest.issues import GitHubAsk
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.request import ShowRequest
from onboard.workflows.harvest.result import ShowResult
from onboard.workflows.harvest.target import Target, resolve_target

CONTEXT_LINES = 6


def show(request: ShowRequest, reporter: Reporter | None = None) -> ShowResult:
    """One item: the comment with its code around it, blame and links."""
    want = _id_prefix(request.item_id)
    target = resolve_target(request.workspace, request.repo)
    cache_dir = collect.cache_folder(request.cache)
    reporter = reporter or Reporter()
    found = collect.gather(target, searcher=request.searcher, cache=cache_dir, reporter=reporter)
    item = _the_item(found.items, want, request.item_id, target)
    item.url = target.url(item.path, item.line)
    source = _source(target, item)
    start = max(1, item.line - CONTEXT_LINES)
    end = min(len(source), item.end_line + CONTEXT_LINES)
    notes: list[str] = []
    blame_rows: list[dict[str, Any]] = []
    if request.enrich_results:
        blame_rows = _blame(target, item, notes)
        github = GitHubAsk(request.api_url, request.github_repo, cache_dir)
        github.rank_linked([item])
        if github.problem:
            notes.append(f"GitHub not used: {github.problem}; the linked issue's state is unknown.")
    links = _links(item, request.github_repo)
    return ShowResult(item, start, source[start - 1 : end], blame_rows, links, notes, target.root)


def _id_prefix(item_id: str) -> str:
    want = item_id.strip().lower()
    if len(want) < 4 or any(c not in "0123456789abcdef" for c in want):
        raise BadInput(
            f"{item_id!r} is not a harvest id (ids are hex, like the first column of "
            "`onboard harvest`; 4 characters at least).",
            next_step="Run `onboard harvest` (or `onboard harvest --json`) and copy an id from "
            "its first column.",
        )
    return want


def _the_item(items: Sequence[Item], want: str, item_id: str, target: Target) -> Item:
    found = [i for i in items if i.id.startswith(want)]
    if not found:
        raise OnboardError(
            f"No harvested comment has the id {item_id} in {target.root}. An id comes from the "
            "comment's path and text, so an edited or removed comment has a new id or none.",
            next_step="Run `onboard harvest` (add --json or --limit 0 for all) to list the "
            "current ids.",
        )
    if len(found) > 1:
        raise BadInput(
            f"The id prefix {item_id} matches {len(found)} comments "
            f"({', '.join(i.id for i in found[:5])}).",
            next_step="Give more characters of the id.",
        )
    return found[0]


def _source(target: Target, item: Item) -> list[str]:
    """The lines of the item's file as they are now."""
    try:
        text = (target.root / item.path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise OnboardError(
            f"{item.path} changed after harvest found the comment {item.id} in it and cannot "
            f"be read now ({exc.strerror}).",
            next_step="Run `onboard harvest` again for the current ids, then "
            "`onboard harvest show ID`.",
        ) from None
    return text.splitlines()


def _blame(target: Target, item: Item, notes: list[str]) -> list[dict[str, Any]]:
    """The comment's lines with their commit and age (a note instead where the
    checkout's history cannot say)."""
    hist = enrich.history(target.root, is_reference=target.kind == "reference")
    if hist.note:
        limitation = (
            target.ws.limitation("How old this comment is (git blame)") if target.ws else None
        )
        notes.append(limitation or hist.note)
        return []
    if hist.commit is None:
        return []
    try:
        rows = enrich.blame_comment(target.root, item)
    except OnboardError as exc:
        notes.append(f"blame: {exc.message}")
        return []
    if rows:
        item.blame = rows[0]
    return rows


def _links(item: Item, github_repo: str) -> dict[str, Any]:
    links: dict[str, Any] = {"source": item.url, "issues": []}
    for number in item.form.issues:
        known = [x for x in item.linked if x.get("number") == number]
        links["issues"].append(
            known[0]
            if known
            else {"number": number, "url": f"https://github.com/{github_repo}/issues/{number}"}
        )
    for number in item.form.pulls:
        links.setdefault("pulls", []).append(f"https://github.com/{github_repo}/pull/{number}")
    if item.form.other_links:
        links["other"] = list(item.form.other_links)
    return links
