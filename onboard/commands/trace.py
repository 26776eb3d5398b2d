"""`onboard trace`: the ops your program ran, nested, each with its kernel's source."""

from __future__ import annotations

import click

from onboard.commands._common import DashDashCommand, common_options
from onboard.commands._program import ProgramOptions, program_options, run_program


@click.command("trace", cls=DashDashCommand, options_metavar="[OPTIONS] [-- PROGRAM [ARGS]...]")
@program_options
@click.option(
    "--depth",
    type=int,
    metavar="N",
    default=None,
    help="Show ops nested at most N deep (1: the ops your code called).",
)
@click.option(
    "--filter",
    "filter_",
    metavar="REGEX",
    default=None,
    help="Show only ops whose name matches REGEX (with their callers).",
)
@common_options
def trace(
    program: ProgramOptions,
    depth: int | None,
    filter_: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Run a Python program under torch's profiler and show the aten ops it ran, nested,
    with the dispatch key whose kernel ran, where each kernel is registered and written,
    the memory the allocator handed out and the slowest kernels.

    \b
    onboard trace -- python repro.py ARGS
    onboard trace -c "torch.zeros(3, 4)"      (torch is imported for the code)
    onboard trace --json -- python -m mypkg.train
    """
    from onboard.views import trace as view
    from onboard.workflows.trace.profile import trace as run_trace

    return run_program(
        run_trace,
        view.render,
        program,
        as_json,
        verbose,
        depth=depth,
        filter=filter_,
    )
