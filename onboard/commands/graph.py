"""`onboard graph`: the autograd graph your program leaves behind, down to the formulas."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, PathParam, after_dashes, reporter


@click.command("graph", cls=DashDashCommand, options_metavar="[OPTIONS] [-- PROGRAM [ARGS]...]")
@options.launch()
@click.option(
    "--var",
    "variables",
    metavar="NAME",
    multiple=True,
    help="Draw the graph of this module global only (repeatable).",
)
@click.option("--dot", is_flag=True, help="Print a Graphviz digraph instead of the text view.")
@click.option(
    "--svg",
    metavar="FILE",
    type=PathParam(dir_okay=False),
    default=None,
    help="Also render the graph to FILE with Graphviz's `dot`.",
)
@options.output()
def graph(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Run a Python program, then walk the autograd graph (grad_fn / next_functions) of the
    tensors it leaves in its module globals: each node's class, the aten op and the
    derivatives.yaml formula behind it, the edges' input_nr, leaves, saved tensors and views.

    \b
    Examples:
      onboard graph -- python train_step.py
      onboard graph --var loss -- python train_step.py
      onboard graph --dot -- python train_step.py > g.dot
    """
    from onboard.commands._common import finish
    from onboard.views import graph as view
    from onboard.workflows.trace.autograd_graph import GraphRequest
    from onboard.workflows.trace.autograd_graph import graph as run_graph

    result = run_graph(GraphRequest(command=after_dashes(), **parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
