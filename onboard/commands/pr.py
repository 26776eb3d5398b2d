"""`onboard pr`: the branch as a pull request draft that follows PyTorch's conventions."""

from __future__ import annotations

import click

from onboard.commands._common import (
    PathParam,
    check_api_url,
    common_options,
    reporter,
    workspace_option,
)


def _check_owner_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    owner, _, name = value.partition("/")
    if not owner or not name or "/" in name or any(c.isspace() for c in value):
        raise click.BadParameter(f"{value!r} is not OWNER/NAME (like pytorch/pytorch).")
    return value


@click.command("pr")
@click.option("--issue", type=int, default=None, help='Issue the PR fixes: adds "Fixes #N".')
@click.option(
    "--open",
    "open_pr",
    is_flag=True,
    help="Push the branch to your fork and open (or update) a draft PR. Default: dry run.",
)
@click.option(
    "--fork-remote",
    default=None,
    help="Remote of your fork (default: `fork`, else `origin` when it is not the upstream).",
)
@click.option(
    "--api-url",
    default="https://api.github.com",
    show_default=True,
    callback=check_api_url,
    help="GitHub API root (GitHub Enterprise: https://HOST/api/v3).",
)
@click.option(
    "--upstream-repo",
    default="pytorch/pytorch",
    show_default=True,
    callback=_check_owner_name,
    help="OWNER/NAME the PR is opened against.",
)
@click.option(
    "--base",
    default=None,
    help="What the change is measured against (default: origin/main, upstream/main, main).",
)
@click.option(
    "--push-timeout",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop `git push` when the fork remote sends nothing for this long.",
)
@click.option("--title", default=None, help="PR title (default: the first commit's subject).")
@click.option(
    "--repo",
    type=PathParam(file_okay=False),
    default=None,
    help="The PyTorch checkout (default: the workspace's, else the repo around the current "
    "folder).",
)
@workspace_option
@common_options
def pr(
    issue: int | None,
    open_pr: bool,
    fork_remote: str | None,
    api_url: str,
    upstream_repo: str,
    base: str | None,
    push_timeout: float,
    title: str | None,
    repo: str | None,
    workspace: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Turn the current branch into a pull request draft in PyTorch's form.

    Dry run (default): lint the changed files, name the tests that cover them,
    suggest the release-notes label, warn about binary-compatibility hazards,
    and write PR_DRAFT.md (in the workspace, or the repo's .git folder).
    With --open: push the branch to your fork and open a draft PR (or update
    the open one). The token comes from GITHUB_TOKEN / GH_TOKEN or gh's config.
    """
    from onboard.commands._common import finish
    from onboard.views import pr as view
    from onboard.workflows.pr import run

    result = run(
        repo=repo,
        workspace=workspace,
        base=base,
        issue=issue,
        title=title,
        open_pr=open_pr,
        fork_remote=fork_remote,
        api_url=api_url,
        upstream_repo=upstream_repo,
        push_timeout=push_timeout,
        reporter=reporter(as_json, verbose),
    )
    return finish(result, view.render, as_json, verbose)
