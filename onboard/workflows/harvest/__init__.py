"""`onboard harvest`: the tree's TODO/FIXME/XXX/HACK comments as ranked first tasks.

The steps, one module each: find the tree (``target``) -> every tagged
comment of it, ranked and kept per tree state (``collect``: grep and lex in
``scan``/``lexer``/``whole_file``, parse in ``forms``, score in ``rank``, the cache in
``stored``) -> the ones the filters pass (``filters``) -> GitHub's state of the
issues they name (``issues``) -> links and blame ages for those shown
(``links``, ``enrich``) -> a result (``result``; ``onboard/views/harvest.py``
draws it). `onboard harvest show ID` is ``detail``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from onboard.report import Reporter
from onboard.workflows.harvest import collect, enrich, links
from onboard.workflows.harvest.collect import Scan
from onboard.workflows.harvest.detail import show
from onboard.workflows.harvest.filters import DEFAULT_LIMIT, Filters
from onboard.workflows.harvest.issues import DEFAULT_API_URL, DEFAULT_GITHUB_REPO, GitHubAsk
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.result import HarvestResult, ShowResult
from onboard.workflows.harvest.target import Target, resolve_target

__all__ = ["HarvestResult", "Item", "Scan", "ShowResult", "Target", "harvest", "show"]


def harvest(
    *,
    workspace: str | None = None,
    repo: str | None = None,
    paths: Sequence[str] = (),
    modules: Sequence[str] = (),
    tags: Sequence[str] = (),
    python_only: bool = False,
    limit: int = DEFAULT_LIMIT,
    issues: bool = False,
    enrich_results: bool = True,
    api_url: str = DEFAULT_API_URL,
    github_repo: str = DEFAULT_GITHUB_REPO,
    searcher: str = "auto",
    cache: Path | None | bool = True,
    reporter: Reporter | None = None,
    save_in_background: bool = False,
) -> HarvestResult:
    """Harvest the tree; ``limit=0`` shows every match.

    ``cache``: True for the user cache (XDG_CACHE_HOME/onboard/harvest), a
    path for another folder, False/None for none. ``save_in_background``: a
    new result is written to the cache after this returns (``collect.gather``).
    """
    wanted = Filters(paths, modules, tags, python_only, limit)
    target = resolve_target(workspace, repo)
    wanted.check(target)
    cache_dir = collect.cache_folder(cache)
    found = collect.gather(
        target,
        searcher=searcher,
        cache=cache_dir,
        reporter=reporter or Reporter(),
        save_in_background=save_in_background,
    )
    matched = wanted.select(found.items)
    github = GitHubAsk(api_url, github_repo, cache_dir)
    if enrich_results:
        matched = github.rank_linked(matched)
    shown = wanted.first(matched)
    links.add_links(target, shown, head=found.head, cache=cache_dir, reuse=found.cache == "tree")
    blame_note = None
    if enrich_results and shown:
        blame_note = enrich.blame_ages(
            target.root, shown, is_reference=target.kind == "reference", head=found.head,
            cache=cache_dir,
        )  # fmt: skip
    newcomers = github.newcomer_issues(limit) if issues else None
    notes = [n for n in (found.changed_note(), blame_note, github.note()) if n]
    return HarvestResult(found, shown, len(matched), wanted.to_json(), notes, newcomers)
