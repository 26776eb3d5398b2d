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

from onboard.jsonable import to_json
from onboard.report import Reporter
from onboard.workflows.harvest import collect, enrich, links
from onboard.workflows.harvest.collect import Scan
from onboard.workflows.harvest.detail import show
from onboard.workflows.harvest.filters import Filters
from onboard.workflows.harvest.issues import GitHubAsk
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.request import HarvestRequest, ShowRequest
from onboard.workflows.harvest.result import HarvestResult, ShowResult
from onboard.workflows.harvest.target import Target, resolve_target

__all__ = [
    "HarvestRequest",
    "HarvestResult",
    "Item",
    "Scan",
    "ShowRequest",
    "ShowResult",
    "Target",
    "harvest",
    "show",
]


def harvest(request: HarvestRequest, reporter: Reporter | None = None) -> HarvestResult:
    """Harvest the tree; ``limit=0`` shows every match."""
    wanted = Filters(
        request.paths, request.modules, request.tags, request.python_only, request.limit
    )
    target = resolve_target(request.workspace, request.repo)
    wanted.check(target)
    cache_dir = collect.cache_folder(request.cache)
    found = collect.gather(
        target,
        searcher=request.searcher,
        cache=cache_dir,
        reporter=reporter or Reporter(),
        save_in_background=request.save_in_background,
    )
    matched = wanted.select(found.items)
    github = GitHubAsk(request.api_url, request.github_repo, cache_dir)
    if request.enrich_results:
        matched = github.rank_linked(matched)
    shown = wanted.first(matched)
    links.add_links(target, shown, head=found.head, cache=cache_dir, reuse=found.cache == "tree")
    blame_note = None
    if request.enrich_results and shown:
        blame_note = enrich.blame_ages(
            target.root, shown, is_reference=target.kind == "reference", head=found.head,
            cache=cache_dir,
        )  # fmt: skip
    newcomers = github.newcomer_issues(request.limit) if request.issues else None
    notes = [n for n in (found.changed_note(), blame_note, github.note()) if n]
    return HarvestResult(found, shown, len(matched), to_json(wanted), notes, newcomers)
