"""`onboard verify`: run the workspace's `nox -s verify`."""

from __future__ import annotations

import click

from onboard.commands._common import common_options, reporter, workspace_option


@click.command()
@workspace_option
@common_options
def verify(workspace: str | None, as_json: bool, verbose: bool) -> int:
    """Check the workspace by running its `nox -f WS/noxfile.py -s verify`: the
    checkout's commit, the IDE/debugger files, the build-prefix mapping, and every
    check other commands added (e.g. a scaffolded op).

    Exit status: 0 all checks passed or could not be run here (said so), 1 a check
    failed.
    """
    from onboard import transaction
    from onboard import workspace as ws_mod
    from onboard.commands._common import finish
    from onboard.views import verify as view
    from onboard.workflows.verify import verify_via_nox

    ws = ws_mod.require(workspace, writing=True)
    report = reporter(as_json, verbose)
    # One writer at a time: verify compiles into the workspace's cache and
    # writes its report there; the nox session it starts shares this lock.
    with transaction.in_workspace(
        ws.root,
        command="verify",
        reporter=report,
    ) as tx:
        tx.watch(ws.checkout_path)
        result = verify_via_nox(ws, reporter=report)
    return finish(result, view.render, as_json, verbose)
