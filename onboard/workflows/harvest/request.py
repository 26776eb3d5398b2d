"""What `onboard harvest` and `onboard harvest show ID` were asked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from onboard.workflows.harvest.filters import DEFAULT_LIMIT
from onboard.workflows.harvest.issues import DEFAULT_API_URL, DEFAULT_GITHUB_REPO


@dataclass(frozen=True, kw_only=True)
class TreeOptions:
    """Which tree, and how to read it: ``workspace`` / ``repo`` (None: the workspace
    checkout, else the git repository around the current folder). ``enrich_results``:
    add git blame and GitHub's state of linked issues (False: offline). ``api_url``,
    ``github_repo``: where GitHub is asked. ``searcher``: ``rg``, ``git`` or ``auto``.
    ``cache``: True for the user cache (XDG_CACHE_HOME/onboard/harvest), a path for
    another folder, False/None for none."""

    workspace: str | None = None
    repo: str | None = None
    enrich_results: bool = True
    api_url: str = DEFAULT_API_URL
    github_repo: str = DEFAULT_GITHUB_REPO
    searcher: str = "auto"
    cache: Path | None | bool = True


@dataclass(frozen=True, kw_only=True)
class HarvestRequest(TreeOptions):
    """The filters (``paths``, ``modules``, ``tags``, ``python_only``), how many to show
    (``limit``; 0: all), ``issues``: also GitHub's newcomer issues.
    ``save_in_background``: a new result is written to the cache after the answer is
    returned (``collect.gather``)."""

    paths: Sequence[str] = ()
    modules: Sequence[str] = ()
    tags: Sequence[str] = ()
    python_only: bool = False
    limit: int = DEFAULT_LIMIT
    issues: bool = False
    save_in_background: bool = False


@dataclass(frozen=True, kw_only=True)
class ShowRequest(TreeOptions):
    """``item_id``: the id (or a prefix of 4 hex digits at least) `onboard harvest` printed."""

    item_id: str
