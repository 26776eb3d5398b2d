"""`onboard harvest`: TODO/FIXME comments of the PyTorch tree as ranked first tasks."""

from __future__ import annotations

import click

from onboard.commands import options
from onboard.commands._common import PathParam, reporter

# `harvest` and `harvest show` both take these.
_repo = options.repo(
    help="The tree to harvest (default: the workspace checkout, else the git repo around "
    "the current folder)."
)
_offline = click.option("--offline", is_flag=True, help="No enrichment: no git blame, no GitHub.")


@click.group(invoke_without_command=True)
@_repo
@options.workspace()
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
@options.md(help="Print a Markdown list to share.")
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
@options.api_url()
@_offline
@options.output()
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
    md: bool,
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

    \b
    Examples:
      onboard harvest                            # the top 20 of the workspace checkout
      onboard harvest --module autograd --python-only --limit 50
      onboard harvest --path 'torch/nn/*' --tag FIXME
      onboard harvest --md > tasks.md
    """
    if ctx.invoked_subcommand is not None:
        return 0
    from onboard.commands._common import finish
    from onboard.views import harvest as view
    from onboard.workflows.harvest import HarvestRequest
    from onboard.workflows.harvest import harvest as run

    request = HarvestRequest(
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
        # The user waits for the answer, not for the cache write.
        save_in_background=True,
    )
    result = run(request, reporter(as_json or md, verbose))
    render = view.render_markdown if md else view.render
    return finish(result, render, as_json, verbose)


@harvest.command("show")
@click.argument("item_id", metavar="ID")
@_repo
@options.workspace()
@click.option(
    "--searcher", type=click.Choice(["auto", "rg", "git"]), default="auto", show_default=True
)
@options.api_url()
@_offline
@options.output()
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
    """One harvested comment: its code around it, blame and links.

    \b
    Examples:
      onboard harvest show "$(onboard harvest --json | jq -r '.items[0].id')"
      onboard harvest show "$(onboard harvest --json | jq -r '.items[0].id')" --offline
    """
    from onboard.commands._common import finish
    from onboard.views import harvest as view
    from onboard.workflows.harvest import ShowRequest
    from onboard.workflows.harvest import show as run

    # Options given before `show` (`onboard harvest --json show ID`) count too.
    parent = ctx.parent.params if ctx.parent is not None else {}
    as_json = as_json or bool(parent.get("as_json"))
    verbose = verbose or bool(parent.get("verbose"))
    offline = offline or bool(parent.get("offline"))
    if api_url == options.GITHUB_API and parent.get("api_url"):
        api_url = parent["api_url"]
    request = ShowRequest(
        item_id=item_id,
        workspace=workspace or parent.get("workspace"),
        repo=repo or parent.get("repo"),
        enrich_results=not offline,
        api_url=api_url,
        searcher=searcher if searcher != "auto" else parent.get("searcher") or "auto",
        cache=not parent.get("no_cache"),
    )
    result = run(request, reporter(as_json, verbose))
    return finish(result, view.render_item, as_json, verbose)
