"""`onboard recover`: undo what an interrupted onboard run left, keep the rest."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import reporter


@click.command("recover")
@options.repo(
    help="A checkout outside any workspace where `onboard bisect` or `onboard pr` was "
    "interrupted (default: the workspace).",
)
@options.workspace()
@options.output()
def recover(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Undo what an interrupted onboard run (killed, or its terminal closed) left,
    where it is still exactly onboard's, and say what was kept.

    A file goes back only while it holds what onboard wrote; HEAD goes back only
    while it is where onboard put it with no change of yours in the tree; a branch
    onboard made is deleted only while nothing of yours is on it. Commands that
    only read (where, doctor, ...) never do this; the next writing command does
    it first anyway. A bisect onboard started is ended (`git bisect reset` back
    to the branch it began on) while it is still onboard's, and what a killed
    run's program left running is stopped and named.

    \b
    Examples:
      onboard recover                    # in (or under) a workspace
      onboard recover --repo ~/pytorch   # after an interrupted bisect/pr in a clone
      onboard recover --json
    """
    from onboard.commands._common import finish
    from onboard.views import recover as view
    from onboard.workflows.recover import RecoverRequest
    from onboard.workflows.recover import recover as run_recover

    result = run_recover(RecoverRequest(**parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
