"""What `onboard build` was asked, and the one entry that answers it: the plan (with
``dry_run``), else the build that plan describes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onboard.workflows.build.plan import BuildPlan, plan
from onboard.workflows.build.run import BuildResult, build

if TYPE_CHECKING:
    from onboard.report import Reporter


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    """``workspace``: as everywhere (None: found from the current folder). ``debug``:
    DEBUG=1. ``debinfo_files``: -g only for these files (relative to the checkout).
    ``cache``: the compiler cache (``auto``, ``ccache``, ``sccache``, ``none``).
    ``jobs``: MAX_JOBS (None: from cores and free memory). ``with_tests``: BUILD_TEST=1.
    ``extra_args``: for `pip install`. ``dry_run``: the plan only."""

    workspace: str | None = None
    debug: bool = False
    debinfo_files: Sequence[str] = ()
    cache: str = "auto"
    jobs: int | None = None
    with_tests: bool = False
    extra_args: Sequence[str] = ()
    dry_run: bool = False


def run_build(request: BuildRequest, reporter: Reporter) -> BuildPlan | BuildResult:
    """`onboard build`: the plan, and unless ``dry_run`` the build it describes."""
    from onboard import workspace

    ws = workspace.require(request.workspace, writing=True)
    the_plan = plan(
        ws,
        debug=request.debug,
        debinfo_files=tuple(request.debinfo_files),
        cache=request.cache,
        jobs=request.jobs,
        with_tests=request.with_tests,
        extra_args=tuple(request.extra_args),
        reporter=reporter,
    )
    if request.dry_run:
        return the_plan
    return build(ws, the_plan, reporter)
