"""`onboard verify`: run the workspace's `nox -s verify`."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import reporter


@click.command()
@options.workspace()
@options.output()
def verify(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Check the workspace by running its `nox -f WS/noxfile.py -s verify`: the
    checkout's commit, the IDE/debugger files, the build-prefix mapping, and every
    check other commands added (e.g. a scaffolded op).

    Exit status: 0 all checks passed or could not be run here (said so), 1 a check
    failed.

    \b
    Examples:
      onboard verify                          # in (or under) a workspace
      onboard verify --workspace ~/pt-ws --json
    """
    from onboard.commands._common import finish
    from onboard.views import verify as view
    from onboard.workflows.verify import VerifyRequest
    from onboard.workflows.verify import verify as run_verify

    result = run_verify(VerifyRequest(**parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
