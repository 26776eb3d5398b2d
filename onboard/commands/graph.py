"""`onboard graph`: the autograd graph your program leaves behind, down to the formulas."""

from __future__ import annotations

import click

from onboard.commands._common import common_options, python_option, reporter, workspace_option
from onboard.commands._program import ProgramCommand, program, program_options


@click.command("graph", cls=ProgramCommand)
@program_options
@click.option(
    "--var",
    "variables",
    metavar="NAME",
    multiple=True,
    help="Draw the graph of this module global only (repeatable).",
)
@click.option(
    "--dot", "as_dot", is_flag=True, help="Print a Graphviz digraph instead of the text view."
)
@click.option(
    "--svg",
    metavar="FILE",
    default=None,
    help="Also render the graph to FILE with Graphviz's `dot`.",
)
@workspace_option
@python_option(help="The interpreter to run the program with (default: the command's own python).")
@common_options
def graph(
    code: str | None,
    timeout: float,
    workspace_build: bool,
    variables: tuple[str, ...],
    as_dot: bool,
    svg: str | None,
    workspace: str | None,
    python: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Run a Python program, then walk the autograd graph (grad_fn / next_functions) of the
    tensors it leaves in its module globals: each node's class, the aten op and the
    derivatives.yaml formula behind it, the edges' input_nr, leaves, saved tensors and views.

    \b
    onboard graph -- python train_step.py
    onboard graph --var loss -- python train_step.py
    onboard graph --dot -- python train_step.py > g.dot
    """
    from onboard.console import emit
    from onboard.workflows.trace.autograd_graph import graph as run_graph

    result = run_graph(
        program(),
        code=code,
        variables=variables,
        workspace=workspace,
        python=python,
        workspace_build=workspace_build,
        dot=as_dot,
        svg=svg,
        timeout=timeout,
        reporter=reporter(as_json, verbose),
    )
    emit(result, as_json=as_json, verbose=verbose)
    return result.exit_code_for_cli
