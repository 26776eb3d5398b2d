"""The program's entry point (the `onboard` script and `python -m onboard`).

No Click here: the run starts, under its signal handlers and reaping, with
the child processes a command can begin from its bare arguments
(``onboard.headstart``), and only then imports Click and the command table,
which is most of a short command's start-up.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click


def main(argv: list[str] | None = None) -> None:
    from onboard import headstart
    from onboard.crash import run_cli

    sys.exit(run_cli(_cli, argv, head_start=headstart.begin))


def _cli() -> click.Command:
    from onboard.cli import cli

    return cli
