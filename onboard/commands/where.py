"""`onboard where OP`: an op's anatomy from the Python call to the kernel."""

from __future__ import annotations

import click

from onboard.commands._common import common_options, python_option, reporter, workspace_option


@click.command("where")
@click.argument("op")
@click.option(
    "--generated",
    is_flag=True,
    help="Regenerate build/aten/src/ATen (RegisterCPU_*.cpp ...) with torchgen, cached per "
    "commit (~30-60 s once), to show the generated registration lines.",
)
@click.option("--refresh", is_flag=True, help="Rebuild the cached indexes and live answers.")
@workspace_option
@python_option
@common_options
def where(
    op: str,
    generated: bool,
    refresh: bool,
    workspace: str | None,
    python: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Show where OP lives: Python entry points, native_functions.yaml entries, the live
    dispatch table, kernels, DispatchStub, derivative formula and OpInfo, each as
    path:line and a GitHub link at the installed commit.

    OP is an aten name (`trunc`, `aten::mm.out`) or a Python name
    (`torch.nn.functional.linear`, `Tensor.trunc`).
    """
    from onboard.commands._common import finish
    from onboard.views import where as view
    from onboard.workflows.where import where as run_where

    result = run_where(
        op,
        workspace=workspace,
        python=python,
        generated=generated,
        refresh=refresh,
        reporter=reporter(as_json, verbose),
    )
    return finish(result, view.render, as_json, verbose)
