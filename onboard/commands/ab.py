"""`onboard ab SCRIPT`: the same script on two torches, compared with its noise."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import PathParam, reporter

_SIDE_HELP = (
    "installed (the interpreter's torch), workspace (the checkout's Python over the "
    "installed torch, or the workspace build), commit:REV (that commit's Python, in a "
    "temporary worktree) or the path of another Python interpreter."
)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("script", type=PathParam(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--a", default="installed", show_default=True, help="Side A: " + _SIDE_HELP)
@click.option("--b", default="workspace", show_default=True, help="Side B: " + _SIDE_HELP)
@click.option(
    "--rounds",
    type=int,
    default=None,
    help="Exactly this many A/B rounds (default: as many as the verdicts need, within --budget).",
)
@click.option(
    "--budget",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    help="Seconds the rounds may take when --rounds is not given.",
)
@options.timeout(
    default=600.0,
    show_default=True,
    help="Seconds one run of the script may take; past it there is no verdict.",
)
@options.workspace()
@options.python(
    help="The interpreter of `installed`, `workspace` and `commit:` (default: the "
    "workspace's, else the one running onboard)."
)
@options.output()
def ab(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Run SCRIPT on A and B, each run a fresh process, in alternating rounds, and compare
    its output (first: a faster wrong answer is no improvement), its wall time, peak RSS and
    every `name=value` number it prints: medians, B/A with a 95% bootstrap interval, and a
    verdict (faster / slower / no change this noise can show). Arguments after SCRIPT go to
    the script.

    Exit status 0 when measured, 1 when the outputs differ or the script failed on a side
    (no verdict), 2 for bad arguments.

    \b
    Examples:
      onboard ab bench.py                                    # A: installed torch, B: the workspace
      onboard ab bench.py --a commit:HEAD~1 --b commit:HEAD  # two commits of a Python-only change
      onboard ab bench.py --rounds 20 -- --size 1024         # arguments after SCRIPT go to it
    """
    from onboard.commands._common import finish
    from onboard.views import ab as view
    from onboard.workflows.ab import ABRequest
    from onboard.workflows.ab import ab as run_ab

    result = run_ab(ABRequest(**parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
