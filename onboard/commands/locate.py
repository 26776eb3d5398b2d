"""`onboard locate`: from an error to the PyTorch line that raised it."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, after_dashes, reporter


@click.command("locate", cls=DashDashCommand)
@click.argument("message", required=False)
@options.timeout(default=600.0, show_default=True, help="Seconds the command after `--` may run.")
@click.option("--refresh", is_flag=True, help="Rebuild the cached check index.")
@options.workspace()
@options.python()
@options.output()
def locate(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Find the PyTorch source line behind an error.

    Exit status: 0 for a sure answer (the line the binary or the traceback named, or
    one message match of high confidence); 1 when nothing matched or the answer is
    uncertain (the candidates are shown with their confidence and blind spots).

    \b
    Examples:
      onboard locate -- python repro.py       # run it; walk the raised error down to the check
      onboard locate "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
      python repro.py 2>&1 | onboard locate -  # read a traceback or log from stdin
    """
    from onboard.commands._common import finish
    from onboard.views import locate as view
    from onboard.workflows.locate import LocateRequest
    from onboard.workflows.locate import locate as run_locate

    result = run_locate(LocateRequest(command=after_dashes(), **parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
