"""`onboard harvest`: TODO/FIXME comments of the PyTorch tree as ranked first tasks."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands._common import (
    PathParam,
    check_api_url,
    common_options,
    reporter,
    workspace_option,
)

_API_URL = "https://api.github.com"


def _repo_option(func: Any) -> Any:
    return click.option(
        "--repo",
        type=PathParam(file_okay=False),
        default=None,
        help="The tree to harvest (default: the workspace checkout, else the git repo around "
        "the current folder).",
    )(func)


def _api_options(func: Any) -> Any:
    func = click.option(
        "--offline",
        is_flag=True,
        help="No enrichment: no git blame, no GitHub.",
    )(func)
    func = click.option(
        "--api-url",
        default=_API_URL,
        show_default=True,
        callback=check_api_url,
        help="GitHub API root (GitHub Enterprise: https://HOST/api/v3). The token comes from "
        "GH_TOKEN / GITHUB_TOKEN (or gh's hosts.yml) and is never printed.",
    )(func)
    return func


@click.group(invoke_without_command=True)
@_repo_option
@workspace_option
@click.option(
    "--path",
    "paths",
    multiple=True,
    type=PathParam(),
    metavar="PATH",
    help="Only under this folder or file (a glob works: 'torch/nn/*'). Repeatable.",
)
@click.option(
    "--module",
    "modules",
    multiple=True,
    metavar="NAME",
    help="Only this module: 'autograd' matches torch/autograd and torch/csrc/autograd; "
    "'nn.modules' a dotted run. Repeatable.",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    type=click.Choice(["TODO", "FIXME", "XXX", "HACK"], case_sensitive=False),
    help="Only this tag. Repeatable.",
)
@click.option("--python-only", is_flag=True, help="Only Python files (no C++ rebuild needed).")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="How many to show (0: all).",
)
@click.option("--markdown", is_flag=True, help="Print a Markdown list to share.")
@click.option(
    "--issues",
    is_flag=True,
    help="Also list open GitHub issues labelled 'good first issue' or 'actionable' (token).",
)
@click.option(
    "--searcher",
    type=click.Choice(["auto", "rg", "git"]),
    default="auto",
    show_default=True,
    help="Find candidate lines with ripgrep or git grep (auto: ripgrep when installed).",
)
@click.option(
    "--no-cache", is_flag=True, help="Search and lex the whole tree again (ignore the cache)."
)
@_api_options
@common_options
@click.pass_context
def harvest(
    ctx: click.Context,
    repo: str | None,
    workspace: str | None,
    paths: tuple[str, ...],
    modules: tuple[str, ...],
    tags: tuple[str, ...],
    python_only: bool,
    limit: int,
    markdown: bool,
    issues: bool,
    searcher: str,
    no_cache: bool,
    offline: bool,
    api_url: str,
    as_json: bool,
    verbose: bool,
) -> int:
    """Rank the tree's TODO/FIXME/XXX/HACK comments as first tasks, each with the
    reasons for its score (Python-only, small wording, a test nearby, no owner).

    `onboard harvest show ID` prints one with its code, blame and links.
    Vendored (third_party/) and generated files are skipped and counted.
    Exit status: 0 results shown (also when none match the filters), 1 no tree
    to search or an unknown id, 2 bad arguments (a malformed or ambiguous id).
    """
    if ctx.invoked_subcommand is not None:
        return 0
    from onboard.console import emit_view
    from onboard.views import harvest as view
    from onboard.workflows.harvest import harvest as run

    result = run(
        workspace=workspace,
        repo=repo,
        paths=paths,
        modules=modules,
        tags=tags,
        python_only=python_only,
        limit=limit,
        issues=issues,
        enrich_results=not offline,
        api_url=api_url,
        searcher=searcher,
        cache=not no_cache,
        reporter=reporter(as_json or markdown, verbose),
        # The user waits for the answer, not for the cache write.
        save_in_background=True,
    )
    render = view.render_markdown if markdown else view.render
    emit_view(result, render, as_json=as_json, verbose=verbose)
    return result.exit_code


@harvest.command("show")
@click.argument("item_id", metavar="ID")
@_repo_option
@workspace_option
@click.option(
    "--searcher", type=click.Choice(["auto", "rg", "git"]), default="auto", show_default=True
)
@_api_options
@common_options
@click.pass_context
def show(
    ctx: click.Context,
    item_id: str,
    repo: str | None,
    workspace: str | None,
    searcher: str,
    offline: bool,
    api_url: str,
    as_json: bool,
    verbose: bool,
) -> int:
    """One harvested comment: its code around it, blame and links."""
    from onboard.console import emit_view
    from onboard.views import harvest as view
    from onboard.workflows.harvest import show as run

    # Options given before `show` (`onboard harvest --json show ID`) count too.
    parent = ctx.parent.params if ctx.parent is not None else {}
    as_json = as_json or bool(parent.get("as_json"))
    verbose = verbose or bool(parent.get("verbose"))
    offline = offline or bool(parent.get("offline"))
    if api_url == _API_URL and parent.get("api_url"):
        api_url = parent["api_url"]
    result = run(
        item_id,
        workspace=workspace or parent.get("workspace"),
        repo=repo or parent.get("repo"),
        enrich_results=not offline,
        api_url=api_url,
        searcher=searcher if searcher != "auto" else parent.get("searcher") or "auto",
        cache=not parent.get("no_cache"),
        reporter=reporter(as_json, verbose),
    )
    emit_view(result, view.render_item, as_json=as_json, verbose=verbose)
    return result.exit_code
