"""`onboard doctor`: what torch is installed here, and what is wrong with the setup."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import DashDashCommand, after_dashes, reporter


@click.command(cls=DashDashCommand, options_metavar="[OPTIONS] [-- COMMAND...]")
@click.option(
    "--import",
    "import_module",
    metavar="MODULE",
    default=None,
    help="Also import MODULE (after torch) in that interpreter and explain why a compiled "
    "extension will not load.",
)
@options.python()
@options.workspace()
@options.output()
def doctor(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Show what torch an interpreter has (version, commit, CUDA, C++ ABI, build
    prefix, debug info) and diagnose what is wrong with it.

    Exit status 0 when nothing needs action, 1 when a finding does (errors and
    warnings; info notes do not count).

    \b
    Examples:
      onboard doctor                          # the torch of this interpreter
      onboard doctor --import my_ext          # ... and why `import my_ext` fails
      onboard doctor -- python use_ext.py     # ... and why the script's import fails
    """
    from onboard.commands._common import finish
    from onboard.views import doctor as view
    from onboard.workflows.doctor import DoctorRequest
    from onboard.workflows.doctor import doctor as run_doctor

    report = run_doctor(DoctorRequest(command=after_dashes(), **parsed), reporter(as_json, verbose))
    return finish(report, view.render, as_json, verbose)
