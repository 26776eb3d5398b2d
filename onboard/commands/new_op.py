"""`onboard new-op NAME`: scaffold a structured ATen op on a new branch of the checkout."""

from __future__ import annotations

import click

from onboard.commands._common import common_options, reporter, workspace_option


@click.command("new-op")
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice(["unary", "binary"]),
    default=None,
    help="unary: NAME(Tensor self); binary: NAME(Tensor self, Tensor other). Default unary, "
    "or the kind of --like.",
)
@click.option(
    "--like",
    "like",
    metavar="OP",
    default=None,
    help="Copy the family of an existing structured pointwise op: how integers are treated, "
    "the floating dtypes, the header of its stub, where the entries go (e.g. trunc, sin, hypot).",
)
@click.option("--dry-run", is_flag=True, help="Print the unified diff; write nothing.")
@click.option(
    "--reveal",
    is_flag=True,
    help="For an existing op: show how PyTorch itself writes it at the installed commit "
    "(the lines on a full checkout, links on a reference tree); writes nothing.",
)
@workspace_option
@common_options
def new_op(
    name: str,
    kind: str | None,
    like: str | None,
    dry_run: bool,
    reveal: bool,
    workspace: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Scaffold aten::NAME, a structured pointwise op (functional, in-place and
    out=), in the workspace checkout, on a new branch onboard/new-op-NAME.

    Writes the native_functions.yaml entries, the dispatch stub, meta/impl, CPU
    and CUDA kernels, the autograd formula, docs, overrides, an OpInfo entry and
    a reference test; files the checkout lacks are listed. Then check it with
    `nox -s verify` in the workspace (or `onboard verify`).

    When NAME is an op PyTorch already has (trunc, floor, sin, hypot, ...), this is
    practice mode: a branch onboard/practice-NAME with its CPU and CUDA kernels to
    write, judged by `onboard verify` against the installed torch.NAME.

    Exit status 0 when the scaffold was written (or printed with --dry-run or
    --reveal), 1 when it could not be, 2 for a refused name.
    """
    from onboard import workspace as ws_mod
    from onboard.commands._common import finish
    from onboard.views import new_op as view
    from onboard.workflows.newop import scaffold

    ws = ws_mod.require(workspace, writing=True)
    if reveal:
        from onboard.errors import BadInput
        from onboard.workflows.newop.reveal import reveal as reveal_op

        if like or dry_run:
            raise BadInput(
                "--reveal shows an existing op and writes nothing; it takes no --like or "
                "--dry-run.",
                next_step=f"Run `onboard new-op {name} --reveal`.",
            )
        return finish(reveal_op(ws, name), view.reveal, as_json, verbose)
    result = scaffold(
        ws, name, kind=kind, like=like, dry_run=dry_run, reporter=reporter(as_json, verbose)
    )
    return finish(result, view.render, as_json, verbose)
