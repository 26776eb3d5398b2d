"""What `onboard pr` was asked."""

from __future__ import annotations

import os
from dataclasses import dataclass

from onboard.github.token import DEFAULT_API_URL
from onboard.workflows.pr.publish import DEFAULT_PUSH_TIMEOUT_S

DEFAULT_UPSTREAM = "pytorch/pytorch"


@dataclass(frozen=True, kw_only=True)
class PrRequest:
    """``repo`` / ``workspace``: the checkout (None: the workspace's, else the repository
    around the current folder). ``base``: what the change is measured against (None:
    origin/main, upstream/main, main). ``issue``: the issue it fixes. ``title``: None for
    the first commit's subject. ``open_pr``: push to ``fork_remote`` and open (or update) a
    draft pull request against ``upstream_repo`` through ``api_url``; else a dry run.
    ``push_timeout``: seconds the fork remote may send nothing."""

    repo: str | os.PathLike[str] | None = None
    workspace: str | os.PathLike[str] | None = None
    base: str | None = None
    issue: int | None = None
    title: str | None = None
    open_pr: bool = False
    fork_remote: str | None = None
    api_url: str = DEFAULT_API_URL
    upstream_repo: str = DEFAULT_UPSTREAM
    push_timeout: float = DEFAULT_PUSH_TIMEOUT_S
