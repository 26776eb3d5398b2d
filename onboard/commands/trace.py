"""`onboard trace`: the ops your program ran, nested, each with its kernel's source."""

from __future__ import annotations

import click

from onboard.commands._common import common_options, python_option, reporter, workspace_option
from onboard.commands._program import ProgramCommand, program, program_options


@click.command("trace", cls=ProgramCommand)
@program_options
@click.option(
    "--depth",
    type=int,
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
@workspace_option
@python_option(help="The interpreter to run the program with (default: the command's own python).")
@common_options
def trace(
    code: str | None,
    timeout: float,
    workspace_build: bool,
    depth: int | None,
    filter_: str | None,
    workspace: str | None,
    python: str | None,
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
    from onboard.console import emit
    from onboard.workflows.trace.profile import trace as run_trace

    result = run_trace(
        program(),
        code=code,
        workspace=workspace,
        python=python,
        workspace_build=workspace_build,
        depth=depth,
        filter=filter_,
        timeout=timeout,
        reporter=reporter(as_json, verbose),
    )
    emit(result, as_json=as_json, verbose=verbose)
    return result.exit_code_for_cli
