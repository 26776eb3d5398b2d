"""`onboard bisect repro.py`: find the commit (or release) that broke the repro."""

from __future__ import annotations

import click

from onboard.commands._common import (
    PathParam,
    common_options,
    python_option,
    reporter,
    workspace_option,
)


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
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds per repro run; a run past it skips the commit.",
)
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
@click.option(
    "--repo",
    default=None,
    type=PathParam(file_okay=False),
    help="The git checkout to bisect (default: the workspace's, or the one around the "
    "current folder).",
)
@workspace_option
@python_option(
    help="The interpreter that runs the repro (default: the workspace's, else the one "
    "running onboard)."
)
@common_options
def bisect(
    repro: str,
    good: str,
    bad: str,
    repeat: int,
    timeout: float | None,
    term_old: str | None,
    term_new: str | None,
    on_crash: str,
    build: str,
    first_parent: bool,
    wheels: bool,
    package: str,
    index_url: str | None,
    find_links: str | None,
    repo: str | None,
    workspace: str | None,
    python: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Find the first commit where REPRO (a Python file: exit 0 = good) starts failing.

    The repro runs with the checkout first on the import path, in a fresh
    empty folder. Crashes by signal count as failing (--on-crash), timeouts
    and failed builds skip the commit. Whatever happens, the checkout ends
    on the branch or commit it started on. Exit 0 when one commit was pinned,
    1 otherwise.
    """
    from onboard.commands._common import finish
    from onboard.views import bisect as view
    from onboard.workflows.bisect import run_bisect

    result = run_bisect(
        repro,
        good=good,
        bad=bad,
        repeat=repeat,
        timeout=timeout,
        term_old=term_old,
        term_new=term_new,
        on_crash=on_crash,
        build=build,
        first_parent=first_parent,
        wheels=wheels,
        package=package,
        index_url=index_url,
        find_links=find_links,
        repo=repo,
        workspace_dir=workspace,
        python=python,
        reporter=reporter(as_json, verbose),
    )
    return finish(result, view.render, as_json, verbose)
