"""`onboard build`: a debug build of the workspace's checkout in the workspace's nox venv."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, PathParam, after_dashes, reporter


# Only what follows `--` goes to pip: a typo'd option before it is an error,
# not a pip argument discovered an hour into the build.
@click.command(cls=DashDashCommand, options_metavar="[OPTIONS] [-- PIP_ARGS...]")
@click.option("--debug", is_flag=True, help="DEBUG=1: -O0 -g everywhere (slow build, slow torch).")
@click.option(
    "--debinfo",
    "debinfo_files",
    multiple=True,
    type=PathParam(),
    metavar="PATH",
    help="USE_CUSTOM_DEBINFO: -g only for this file (relative to the checkout; repeatable).",
)
@click.option(
    "--cache",
    type=click.Choice(["auto", "ccache", "sccache", "none"]),
    default="auto",
    show_default=True,
    help="Compiler cache as CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER; sccache uses its own shared "
    "backends (SCCACHE_REDIS_ENDPOINT, SCCACHE_BUCKET, SCCACHE_GCS_BUCKET, ...).",
)
@click.option(
    "--jobs",
    type=int,
    default=None,
    metavar="N",
    help="MAX_JOBS (default: from cores and free memory).",
)
@click.option("--with-tests", is_flag=True, help="BUILD_TEST=1: also build the C++ tests.")
@click.option(
    "--dry-run", is_flag=True, help="Print the plan (env, commands, jobs, disk/RAM) and stop."
)
@options.workspace()
@options.output()
def build(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Build the workspace's PyTorch checkout (RelWithDebInfo by default) with
    `pip install --no-build-isolation -v -e .` in the workspace's nox venv, then
    check that the build is the torch that venv imports.

    Arguments after `--` go to `pip install`. Exit status: 0 built and checked
    (or --dry-run with a clean pre-flight), 1 a failed pre-flight, build or check,
    2 bad arguments.

    \b
    Examples:
      onboard build --dry-run      # the plan: environment, commands, jobs, disk and memory
      onboard build --debinfo aten/src/ATen/native/UnaryOps.cpp   # -g only for that file
      onboard build --jobs 4 --cache ccache
    """
    from onboard.commands._common import finish
    from onboard.views import build as view
    from onboard.workflows.build import BuildPlan, BuildRequest, run_build

    request = BuildRequest(extra_args=after_dashes() or [], **parsed)
    result = run_build(request, reporter(as_json, verbose))
    if isinstance(result, BuildPlan):
        return finish(result, view.plan, as_json, verbose)
    return finish(result, view.result, as_json, verbose)
