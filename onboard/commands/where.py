"""`onboard where OP`: an op's anatomy from the Python call to the kernel."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import reporter


@click.command("where")
@click.argument("op")
@click.option(
    "--generated",
    is_flag=True,
    help="Regenerate build/aten/src/ATen (RegisterCPU_*.cpp ...) with torchgen, cached per "
    "commit (~30-60 s once), to show the generated registration lines.",
)
@click.option("--refresh", is_flag=True, help="Rebuild the cached indexes and live answers.")
@options.workspace()
@options.python()
@options.output()
def where(op: str, as_json: bool, verbose: bool, **parsed: Any) -> int:
    """Show where OP lives: Python entry points, native_functions.yaml entries, the live
    dispatch table, kernels, DispatchStub, derivative formula and OpInfo, each as
    path:line and a GitHub link at the installed commit.

    OP is an aten name (`trunc`, `aten::mm.out`) or a Python name
    (`torch.nn.functional.linear`, `Tensor.trunc`).

    \b
    Examples:
      onboard where trunc                     # the op's whole anatomy
      onboard where aten::mm.out --json
      onboard where torch.nn.functional.linear
      onboard where trunc --generated         # also the generated registration lines
    """
    from onboard.commands._common import finish
    from onboard.views import where as view
    from onboard.workflows.where import WhereRequest
    from onboard.workflows.where import where as run_where

    result = run_where(WhereRequest.parse(op, **parsed), reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)
