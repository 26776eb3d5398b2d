"""`onboard memory`: memory that grows every step, at the line that made it and the
name that holds it, from a census of live tensors at the program's step boundaries."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, PathParam, after_dashes, reporter


@click.command("memory", cls=DashDashCommand)
@click.option(
    "--step",
    metavar="FUNC|FILE:LINE",
    default=None,
    help="What ends a step: a function's return (train_step) or a line of your code "
    "(train.py:42). Default: every torch.optim optimizer's step().",
)
@click.option(
    "--every",
    type=options.Seconds(),
    metavar="SECONDS",
    default=None,
    help="A census every SECONDS instead, for a loop without an optimizer or step function.",
)
@click.option(
    "--lines-everywhere",
    is_flag=True,
    help="Record the line of every tensor made in every step (slower), not only in the "
    "two probe steps.",
)
@click.option(
    "--snapshot",
    type=PathParam(dir_okay=False),
    default=None,
    help="On CUDA: record the allocator's history and keep its snapshot here, for "
    "https://pytorch.org/memory_viz.",
)
@click.option(
    "--peak",
    is_flag=True,
    help="Also profile steps 2-3 with torch.profiler's memory profile and show its peak by "
    "torch's categories (parameter, gradient, optimizer state, activation, temporary), each "
    "at its line (slower while it profiles).",
)
@click.option(
    "--plot",
    type=PathParam(dir_okay=False),
    default=None,
    metavar="FILE.svg|png",
    help="Also draw the memory per step into this file (needs matplotlib: the plot extra).",
)
@options.timeout(
    default=None, help="Stop the program after this long; the censuses so far are read."
)
@options.workspace()
@options.python(help="The interpreter for `python` in the command (default: the one named).")
@options.output()
def memory(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Find memory that grows every step: a census of live tensors at each step
    boundary (each storage once, so a view and its base count once, plus the saved
    tensors of the autograd graphs they hold), what grows grouped by the line that
    made it (count and bytes a step), the name in your code that holds it ("list
    `losses` at train.py:12") and the graph it keeps alive; known causes named with
    their fix (history kept across the loop, outputs stored without .item(),
    evaluation without no_grad, hooks registered every step, a cache that only
    grows, DataLoader workers whose memory grows).

    The program runs as it is: its output and exit status pass through (its output
    onto stderr with --json). The census is written as it is taken, so a program that
    dies, out of memory included, still gets the last one. On a machine without CUDA
    the allocator's part says "not checked".

    Exit status: the program's own (128+N when signal N ended it).

    \b
    Examples:
      onboard memory -- python train.py
      onboard memory --step train_step -- python train.py --epochs 1
      onboard memory --every 0.5 -- python evaluate.py
      onboard memory --peak --plot memory.svg -- python train.py
    """
    from onboard.commands._common import finish
    from onboard.views import memory as view
    from onboard.workflows.memory import MemoryRequest, memory_program

    result = memory_program(
        MemoryRequest(command=after_dashes(), **parsed),
        reporter(as_json, verbose),
        quiet_stdout=as_json,
    )
    return finish(result, view.render, as_json, verbose)
