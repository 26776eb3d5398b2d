"""`onboard doctor`: what torch is installed here, and what is wrong with the setup."""

from __future__ import annotations

import click

from onboard.commands._common import (
    DashDashCommand,
    after_dashes,
    common_options,
    python_option,
    reporter,
    workspace_option,
)


@click.command(cls=DashDashCommand, options_metavar="[OPTIONS] [-- COMMAND...]")
@click.option(
    "--import",
    "import_module",
    metavar="MODULE",
    default=None,
    help="Also import MODULE (after torch) in that interpreter and explain why a compiled "
    "extension will not load.",
)
@python_option
@workspace_option
@common_options
def doctor(
    import_module: str | None,
    python: str | None,
    workspace: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Show what torch an interpreter has (version, commit, CUDA, C++ ABI, build
    prefix, debug info) and diagnose what is wrong with it.

    \b
    onboard doctor                          the torch of this interpreter
    onboard doctor --import my_ext          ... and why `import my_ext` fails
    onboard doctor -- python use_ext.py     ... and why the script's import fails

    Exit status 0 when nothing needs action, 1 when a finding does (errors and
    warnings; info notes do not count).
    """
    from onboard import workspace as ws_mod
    from onboard.commands._common import finish
    from onboard.errors import BadInput
    from onboard.views import doctor as view
    from onboard.workflows.doctor import diagnose

    command = after_dashes()
    if command is not None and import_module is not None:
        raise BadInput(
            "Both --import and a command after `--` were given.",
            next_step="Run either `onboard doctor --import MODULE` or "
            "`onboard doctor -- python script.py`.",
        )
    ws = ws_mod.find(workspace)
    report = diagnose(
        python,
        ws,
        reporter(as_json, verbose),
        import_module=import_module,
        command=command,
    )
    return finish(report, view.render, as_json, verbose)
