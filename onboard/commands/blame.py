"""`onboard blame PATH:LINE`: who changed these lines, in which pull request, approved
by whom, and what reviewers said there."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import reporter
from onboard.commands.reviews import check_modes, show


@click.command("blame")
@click.argument("spec", metavar="PATH:LINE[-END]")
@click.option(
    "--walk",
    is_flag=True,
    help="Step back past reverts, relands and commits whose diff there changes only "
    "whitespace (as .git-blame-ignore-revs does for mass reformats) to the change that "
    "meant the line.",
)
@options.history()
@options.output()
def blame(md: bool, as_json: bool, verbose: bool, **parsed: Any) -> int:
    """The commit that last changed each line (moves and copies followed, the mass
    reformats of .git-blame-ignore-revs skipped), its pull request, title, date and
    approvers, and the review comments anchored on those lines (threads shown as
    threads), with links.

    A clone made by `onboard setup` fetches its history the first time (commits and
    trees only, back to --since); file contents come when blame reads them.

    Exit status: 0 answered, 1 no history to blame with, 2 bad arguments (a path
    not in the checkout, a line beyond the file's end).

    \b
    Examples:
      onboard blame aten/src/ATen/native/UnaryOps.cpp:120
      onboard blame aten/src/ATen/native/UnaryOps.cpp:120-140 --walk
      onboard blame torch/_refs/__init__.py:88 --offline --json
    """
    check_modes(as_json, md)
    from onboard.views import blame as view
    from onboard.workflows.reviews.request import BlameRequest
    from onboard.workflows.reviews.run_blame import blame as run

    result = run(BlameRequest(**parsed), reporter(as_json or md, verbose))
    return show(result, view.render, md=md, as_json=as_json, verbose=verbose)
