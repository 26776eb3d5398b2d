"""`onboard ab SCRIPT`: the same script on two torches, compared with its noise."""

from __future__ import annotations

import click

from onboard.commands._common import (
    PathParam,
    common_options,
    python_option,
    reporter,
    workspace_option,
)

_SIDE_HELP = (
    "installed (the interpreter's torch), workspace (the checkout's Python over the "
    "installed torch, or the workspace build), commit:REV (that commit's Python, in a "
    "temporary worktree) or the path of another Python interpreter."
)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("script", type=PathParam(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--a", "side_a", default="installed", show_default=True, help="Side A: " + _SIDE_HELP)
@click.option("--b", "side_b", default="workspace", show_default=True, help="Side B: " + _SIDE_HELP)
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
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds one run of the script may take; past it there is no verdict.",
)
@workspace_option
@python_option(
    help="The interpreter of `installed`, `workspace` and `commit:` (default: the "
    "workspace's, else the one running onboard)."
)
@common_options
def ab(
    script: str,
    script_args: tuple[str, ...],
    side_a: str,
    side_b: str,
    rounds: int | None,
    budget: float,
    timeout: float,
    workspace: str | None,
    python: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Run SCRIPT on A and B, each run a fresh process, in alternating rounds, and compare
    its output (first: a faster wrong answer is no improvement), its wall time, peak RSS and
    every `name=value` number it prints: medians, B/A with a 95% bootstrap interval, and a
    verdict (faster / slower / no change this noise can show). Arguments after SCRIPT go to
    the script.

    Exit status 0 when measured, 1 when the outputs differ or the script failed on a side
    (no verdict), 2 for bad arguments.
    """
    import sys
    from pathlib import Path

    from onboard import workspace as ws_mod
    from onboard.commands._common import finish
    from onboard.views import ab as view
    from onboard.workflows.ab import compare

    ws = ws_mod.find(workspace)
    result = compare(
        Path(script),
        ws=ws,
        python=python or (ws.python if ws is not None else sys.executable),
        a=side_a,
        b=side_b,
        args=list(script_args),
        rounds=rounds,
        budget=budget,
        timeout=timeout,
        reporter=reporter(as_json, verbose),
    )
    return finish(result, view.render, as_json, verbose)
