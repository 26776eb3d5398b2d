"""What `onboard bisect` was asked: the repro, the two ends, and how to step between them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class BisectRequest:
    """``repro``: a Python file, exit 0 = good. ``good`` / ``bad``: commits, tags or
    branches (with ``wheels``: releases, such as 2.11.0). ``repeat``: runs per commit,
    the majority wins. ``timeout``: seconds per run (None: no limit). ``term_old`` /
    ``term_new``: git bisect's names of the two states. ``on_crash``: a run killed by a
    signal counts as ``bad`` or ``skip``s the commit. ``build``: rebuild ``never``,
    when compiled files changed (``auto``) or ``always``. ``first_parent``: follow
    only first parents. ``wheels``: bisect released wheels of ``package`` first (from
    ``index_url`` / ``find_links``). ``repo``: the checkout (None: the workspace's, or
    the one around the current folder). ``workspace``, ``python``: as everywhere."""

    repro: str | Path
    good: str
    bad: str = "HEAD"
    repeat: int = 1
    timeout: float | None = None
    term_old: str | None = None
    term_new: str | None = None
    on_crash: str = "bad"
    build: str = "auto"
    first_parent: bool = True
    wheels: bool = False
    package: str = "torch"
    index_url: str | None = None
    find_links: str | None = None
    repo: str | None = None
    workspace: str | None = None
    python: str | None = None
