"""What `onboard reviews` (and `reviews sync`) and `onboard blame` were asked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from onboard.github.token import DEFAULT_API_URL

DEFAULT_LIMIT = 20


@dataclass(frozen=True, kw_only=True)
class HistoryOptions:
    """Where both read and how they ask GitHub: ``workspace`` / ``repo`` (None: the
    workspace's checkout, else the git repository around the current folder), ``since``
    (YYYY-MM-DD: how far back; None: two years before the checkout's commit),
    ``offline`` (git and the cache only), ``refresh`` (ask GitHub again about kept
    answers), ``api_url``, ``upstream`` (OWNER/NAME; None: pytorch/pytorch)."""

    workspace: str | None = None
    repo: str | None = None
    since: str | None = None
    offline: bool = False
    refresh: bool = False
    api_url: str = DEFAULT_API_URL
    upstream: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReviewsRequest(HistoryOptions):
    """``targets``: ops or files (none: the files the branch changes against ``base``).
    ``reviewer``: only what this login said and approved. ``limit``: at most this many
    pull requests. ``sync``: fetch all of it and keep it instead of answering."""

    targets: Sequence[str] = ()
    reviewer: str | None = None
    limit: int = DEFAULT_LIMIT
    base: str | None = None
    sync: bool = False


@dataclass(frozen=True, kw_only=True)
class BlameRequest(HistoryOptions):
    """``spec``: PATH:LINE or PATH:START-END. ``walk``: step back past reverts, relands and
    whitespace-only changes to the commit that meant the line."""

    spec: str
    walk: bool = False
