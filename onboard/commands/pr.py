"""`onboard pr`: the branch as a pull request draft that follows PyTorch's conventions."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import reporter


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
@options.api_url(help="GitHub API root (GitHub Enterprise: https://HOST/api/v3).")
@click.option(
    "--upstream-repo",
    default="pytorch/pytorch",
    show_default=True,
    callback=options.owner_name,
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
@options.repo(
    help="The PyTorch checkout (default: the workspace's, else the repo around the current "
    "folder).",
)
@options.workspace()
@options.output()
def pr(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Turn the current branch into a pull request draft in PyTorch's form.

    Dry run (default): lint the changed files, name the tests that cover them,
    suggest the release-notes label, warn about binary-compatibility hazards,
    and write PR_DRAFT.md (in the workspace, or the repo's .git folder).
    With --open: push the branch to your fork and open a draft PR (or update
    the open one). The token comes from GITHUB_TOKEN / GH_TOKEN or gh's config.

    \b
    Examples:
      onboard pr                              # dry run: PR_DRAFT.md written, nothing sent
      onboard pr --issue 12345                # adds "Fixes #12345"
      onboard pr --open --fork-remote myfork  # push to your fork, open a draft PR
    """
    from onboard.commands._common import finish
    from onboard.views import pr as view
    from onboard.workflows.pr import run
    from onboard.workflows.pr.request import PrRequest

    result = run(PrRequest(**parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
