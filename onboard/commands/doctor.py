"""`onboard doctor`: what torch is installed here, and what is wrong with the setup."""

from __future__ import annotations

import click

from onboard.commands._common import common_options, python_option, reporter, workspace_option


@click.command()
@python_option
@workspace_option
@common_options
def doctor(python: str | None, workspace: str | None, as_json: bool, verbose: bool) -> int:
    """Show what torch an interpreter has (version, commit, CUDA, C++ ABI, build
    prefix, debug info) and diagnose what is wrong with it.

    Exit status 0 when nothing needs action, 1 when a finding does (errors and
    warnings; info notes do not count).
    """
    from onboard import workspace as ws_mod
    from onboard.console import emit
    from onboard.workflows.doctor import diagnose

    ws = ws_mod.find(workspace)
    report = diagnose(python, ws, reporter(as_json, verbose))
    emit(report, as_json=as_json, verbose=verbose)
    return report.exit_code
