"""`onboard setup DIR`: PyTorch's source at the installed commit, ready to debug."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import PathParam, reporter


@click.command()
@click.argument("dest", metavar="DIR", type=PathParam(file_okay=False))
@click.option(
    "--from-wheel",
    is_flag=True,
    help="Offline, in seconds: a git-tracked reference tree rebuilt from the installed wheel "
    "(Python sources, headers, yaml at PyTorch's paths; no .cpp/.cu).",
)
@click.option(
    "--remote",
    metavar="URL",
    type=PathParam(),
    help="Where to fetch from (a mirror URL or a local clone; "
    "default https://github.com/pytorch/pytorch.git).",
)
@click.option(
    "--commit",
    metavar="SHA",
    help="Check out this full sha (or tag) instead of the installed torch's commit.",
)
@click.option(
    "--reference",
    metavar="LOCAL_CLONE",
    type=PathParam(file_okay=False),
    help="Borrow objects from a PyTorch clone you already have (git alternates).",
)
@click.option(
    "--with-submodules",
    is_flag=True,
    help="Also check out the submodules (shallow, parallel): only needed to build.",
)
@click.option(
    "--fetch-timeout",
    type=float,
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Give up when the remote sends nothing for this long.",
)
@click.option(
    "--build",
    "then_build",
    is_flag=True,
    help="Then build the checkout (`onboard build` with its defaults; needs a full checkout "
    "and --with-submodules).",
)
@options.python()
@options.output()
def setup(as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Create (or check and resume) a workspace in DIR: the source of the installed
    torch's exact commit, VS Code and gdb files that map the binary's build paths to it,
    and a noxfile whose `nox -s verify` checks it all.

    Exit status: 0 done, 1 failed (nothing half-made is left), 2 bad arguments.

    \b
    Examples:
      onboard setup ~/pt-ws --from-wheel      # offline, in seconds: a reference tree
      onboard setup ~/pt-ws                   # a depth-1 checkout of the installed commit
      onboard setup ~/pt-ws --reference ~/src/pytorch   # borrow a clone's objects
      onboard setup ~/pt-ws --with-submodules --build   # then `onboard build`
    """
    from onboard.commands._common import finish
    from onboard.console import emit_view
    from onboard.views import build as build_view
    from onboard.views import setup as view
    from onboard.workflows.setup import SetupRequest, SetupResult
    from onboard.workflows.setup import setup as run_setup

    def set_up(done: SetupResult) -> None:
        # `onboard setup DIR --build`: the setup is shown before the build starts.
        if not as_json:
            emit_view(done, view.render, as_json=False, verbose=verbose)

    result = run_setup(
        SetupRequest(**parsed),
        reporter(as_json, verbose),
        on_setup=set_up,
    )
    if isinstance(result, SetupResult):
        return finish(result, view.render, as_json, verbose)
    if as_json:
        return finish(result, build_view.setup_and_build, as_json, verbose)
    emit_view(result.build, build_view.result, as_json=False, verbose=verbose)
    return result.exit_code
