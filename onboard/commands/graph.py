"""`onboard graph`: the autograd graph your program leaves behind, down to the formulas."""

from __future__ import annotations

import click

from onboard.commands._common import DashDashCommand, PathParam, common_options
from onboard.commands._program import ProgramOptions, program_options, run_program


@click.command("graph", cls=DashDashCommand, options_metavar="[OPTIONS] [-- PROGRAM [ARGS]...]")
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
    type=PathParam(dir_okay=False),
    default=None,
    help="Also render the graph to FILE with Graphviz's `dot`.",
)
@common_options
def graph(
    program: ProgramOptions,
    variables: tuple[str, ...],
    as_dot: bool,
    svg: str | None,
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
    from onboard.views import graph as view
    from onboard.workflows.trace.autograd_graph import graph as run_graph

    return run_program(
        run_graph,
        view.render,
        program,
        as_json,
        verbose,
        variables=variables,
        dot=as_dot,
        svg=svg,
    )
