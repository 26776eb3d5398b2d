"""`onboard compile`: what torch.compile did with a program: graph breaks,
recompilations, failures and cost, from torch's structured trace of one run."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, after_dashes, reporter


@click.command("compile", cls=DashDashCommand)
@click.option(
    "--backend",
    type=click.Choice(["eager", "aot_eager", "inductor"]),
    default=None,
    help="Compile every graph with this backend instead of the program's own (eager and "
    "aot_eager need no C++ compiler: a quick first look).",
)
@options.timeout(default=None, help="Stop the program after this long; the trace so far is read.")
@options.workspace()
@options.python(help="The interpreter for `python` in the command (default: the one named).")
@options.output()
def compile_(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Show what torch.compile did with a program: each graph break once (your line,
    how often, torch's reason, its graph break registry entry and the line in
    torch/_dynamo that decided it), the recompilations of each function (the guards
    that failed and the fix torch documents for them, the recompile limit), the
    exceptions raised while compiling (at their source, with the minifier command),
    and the cost (graphs, ops per graph, compile time, cache hits per function).

    The program runs as it is, with TORCH_TRACE set to a private folder that is read
    and removed afterwards; its output passes through (onto stderr with --json).
    torch's lines are shown in the workspace checkout when there is one, else in the
    installed torch. What needs a GPU (CUDA graphs, Triton kernels) is said to be not
    checked on a machine without one.

    Exit status: the program's own (128+N when signal N ended it).

    \b
    Examples:
      onboard compile -- python train.py                    # its own backend
      onboard compile --backend eager -- python train.py    # graph breaks only, fast
      onboard compile --json -- python train.py --steps 3 > compile.json
      onboard compile -v --backend aot_eager -- python -m mypkg.train
    """
    from onboard.commands._common import finish
    from onboard.views import compile as view
    from onboard.workflows.compile import CompileRequest, compile_program

    result = compile_program(
        CompileRequest(command=after_dashes(), **parsed),
        reporter(as_json, verbose),
        quiet_stdout=as_json,
    )
    return finish(result, view.render, as_json, verbose)
