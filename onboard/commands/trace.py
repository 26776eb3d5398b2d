"""`onboard trace`: the ops your program ran, nested, each with its kernel's source."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, after_dashes, reporter


@click.command("trace", cls=DashDashCommand, options_metavar="[OPTIONS] [-- PROGRAM [ARGS]...]")
@options.launch()
@click.option(
    "--depth",
    type=int,
    metavar="N",
    default=None,
    help="Show ops nested at most N deep (1: the ops your code called).",
)
@click.option(
    "--filter",
    metavar="REGEX",
    default=None,
    help="Show only ops whose name matches REGEX (with their callers).",
)
@options.output()
def trace(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Run a Python program under torch's profiler and show the aten ops it ran, nested,
    with the dispatch key whose kernel ran, where each kernel is registered and written,
    the memory the allocator handed out and the slowest kernels.

    \b
    Examples:
      onboard trace -- python repro.py
      onboard trace -c "torch.zeros(3, 4)"      # torch is imported for the code
      onboard trace --depth 1 --filter 'aten::(mm|addmm)' -- python repro.py
      onboard trace --json -- python -m mypkg.train
    """
    from onboard.commands._common import finish
    from onboard.views import trace as view
    from onboard.workflows.trace.profile import TraceRequest
    from onboard.workflows.trace.profile import trace as run_trace

    result = run_trace(TraceRequest(command=after_dashes(), **parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
