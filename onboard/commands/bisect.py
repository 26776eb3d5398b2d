"""`onboard bisect repro.py`: find the commit (or release) that broke the repro."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import PathParam, reporter


@click.command()
@click.argument("repro", type=PathParam(dir_okay=False))
@click.option(
    "--good",
    required=True,
    help="Where the repro passes: a commit, tag or branch (with --wheels: a release like 2.11.0).",
)
@click.option(
    "--bad",
    default="HEAD",
    show_default=True,
    help="Where the repro fails (with --wheels: a release like 2.13.0).",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run the repro N times per commit and take the majority; flaky commits are reported.",
)
@options.timeout(default=None, help="Seconds per repro run; a run past it skips the commit.")
@click.option("--term-old", default=None, help="Name of the old state (to find a fix: broken).")
@click.option("--term-new", default=None, help="Name of the new state (to find a fix: fixed).")
@click.option(
    "--on-crash",
    type=click.Choice(["bad", "skip"]),
    default="bad",
    show_default=True,
    help="A repro killed by a signal (segfault, abort) counts as failing, or skips.",
)
@click.option(
    "--build",
    "build",
    type=click.Choice(["never", "auto", "always"]),
    default="auto",
    show_default=True,
    help="Rebuild through the workspace's build session: when compiled files changed "
    "(auto), at every commit, or never.",
)
@click.option(
    "--first-parent/--no-first-parent",
    default=True,
    show_default=True,
    help="Follow only first parents (PyTorch's history is merge-bot commits).",
)
@click.option(
    "--wheels",
    is_flag=True,
    help="Bisect released wheels between --good and --bad first, then the commits "
    "between the two bracketing release tags.",
)
@click.option(
    "--package",
    default="torch",
    show_default=True,
    help="The package whose releases --wheels installs.",
)
@click.option("--index-url", default=None, help="Package index for --wheels.")
@click.option(
    "--find-links",
    default=None,
    type=PathParam(),
    help="Folder (or page) of wheels for --wheels; alone, nothing else is consulted.",
)
@options.repo(
    help="The git checkout to bisect (default: the workspace's, or the one around the "
    "current folder).",
)
@options.workspace()
@options.python(
    help="The interpreter that runs the repro (default: the workspace's, else the one "
    "running onboard)."
)
@options.output()
def bisect(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Find the first commit where REPRO (a Python file: exit 0 = good) starts failing.

    The repro runs with the checkout first on the import path, in a fresh
    empty folder. Crashes by signal count as failing (--on-crash), timeouts
    and failed builds skip the commit. Whatever happens, the checkout ends
    on the branch or commit it started on. Exit 0 when one commit was pinned,
    1 otherwise.

    \b
    Examples:
      onboard bisect repro.py --good v2.12.0                # --bad defaults to HEAD
      onboard bisect repro.py --good v2.12.0 --repeat 3 --timeout 300
      onboard bisect repro.py --good v2.12.0 --term-old broken --term-new fixed  # the fix
      onboard bisect repro.py --good 2.11.0 --bad 2.13.0 --wheels  # releases, then commits
    """
    from onboard.commands._common import finish
    from onboard.views import bisect as view
    from onboard.workflows.bisect import BisectRequest, run_bisect

    result = run_bisect(BisectRequest(**parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
