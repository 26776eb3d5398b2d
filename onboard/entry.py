"""The program's entry point (the `onboard` script and `python -m onboard`).

No Click here: the run starts, under its signal handlers and reaping, with
the child processes a command can begin from its bare arguments
(``onboard.headstart``), and only then imports Click and the command table,
which is most of a short command's start-up.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

_exit_code: list[int] = []  # the run's exit status, once it has one


def main(argv: list[str] | None = None) -> None:
    # A program's own run (not a caller's `main([...])`, such as a test's) ends
    # without the interpreter's teardown.
    if argv is None and _nothing_else_at_exit():
        atexit.register(_quick_exit)
    from onboard import headstart
    from onboard.crash import run_cli

    code = run_cli(_cli, argv, head_start=headstart.begin)
    _exit_code.append(code)
    sys.exit(code)


def _cli() -> click.Command:
    from onboard.cli import cli

    return cli


def _nothing_else_at_exit() -> bool:
    """Whether no exit handler came before onboard's (a coverage tool's, say): handlers
    run last-registered first, and ``_quick_exit`` would end the process before it."""
    count = getattr(atexit, "_ncallbacks", None)
    return count is not None and count() == 0


def _quick_exit() -> None:
    """The last exit handler: leave without the interpreter's teardown (freeing every
    module and object, ~7 ms, a tenth of a warm `onboard harvest`). By now the
    run is over: non-daemon threads are joined and every other exit handler has
    run (temporary folders' cleanups among them); onboard's files are written
    whole and closed as they are made. Only stdout and stderr may still hold
    output, and they are flushed here; if that fails, the usual exit reports it."""
    if not _exit_code:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            return
    os._exit(_exit_code[0])
