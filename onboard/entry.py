"""The program's entry point (the `onboard` script and `python -m onboard`)."""

from __future__ import annotations

import sys

from onboard.cli import cli
from onboard.crash import run_cli


def main(argv: list[str] | None = None) -> None:
    sys.exit(run_cli(cli, argv))
