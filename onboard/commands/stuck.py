"""`onboard stuck`: where every thread of a hung PyTorch program waits, and why."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, after_dashes, reporter


@click.command("stuck", cls=DashDashCommand)
@click.argument("pid", required=False, metavar="[PID | -- PROGRAM...]")
@click.option(
    "--after",
    type=float,
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Take the snapshot once the program made no progress this long (no Python line "
    "changed and no CPU used).",
)
@options.timeout(
    default=None,
    help="Stop the program after this long (a snapshot is taken first). Default: no limit.",
)
@click.option("--kill", is_flag=True, help="Stop the program after the snapshot.")
@options.workspace()
@options.python(help="The interpreter for `python` in the command (default: the one named).")
@options.output()
def stuck(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Show where every thread of a hung PyTorch program waits: each process
    (DataLoader workers and ranks too), each thread's Python and C++ frames, torch's
    frames at their source lines in the workspace checkout, and the waits it recognises
    (a DataLoader waiting on its workers, a collective waiting on a peer, a GIL or lock
    deadlock with a C++ thread, a Python deadlock, a parent waiting on a child, a CUDA
    synchronize). Each thread's CPU is sampled first: a busy thread is named busy.

    While it runs: Ctrl-\\ (or `kill -USR1 ONBOARD_PID`) takes a snapshot now; the
    program goes on after a snapshot unless --kill; Ctrl-C stops it. The program's
    output passes through (onto stderr with --json). Stacks are read with pystack
    (py-spy or gdb where it cannot), which pause each process while they read it.

    Exit status: 0 when a snapshot was taken or the program ended cleanly, 1 when it
    failed before any snapshot, 130 on Ctrl-C.

    \b
    Examples:
      onboard stuck -- python train.py              # snapshot when it stops making progress
      onboard stuck --after 30 -- python train.py   # ... after 30 s without progress
      onboard stuck --kill --timeout 600 -- python train.py
      onboard stuck --json "$(pgrep -of train.py)"  # a process that is already hung
    """
    from onboard.commands._common import finish
    from onboard.console import stdout_console
    from onboard.views.stuck import render_result, render_snapshot
    from onboard.workflows.stuck import StuckRequest
    from onboard.workflows.stuck import stuck as run_stuck

    printed: list[int] = []

    def show(snapshot: object) -> None:
        if not as_json:
            render_snapshot(snapshot, stdout_console(), verbose)  # type: ignore[arg-type]
            printed.append(1)

    result = run_stuck(
        StuckRequest(command=after_dashes(), **parsed),
        reporter(as_json, verbose),
        quiet_stdout=as_json,
        on_snapshot=show,
    )
    result.printed = len(printed)
    return finish(result, render_result, as_json, verbose)
