"""`onboard new-op NAME`: scaffold a structured ATen op on a new branch of the checkout."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import reporter


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
@options.workspace()
@options.output()
def new_op(as_json: bool, verbose: bool, **parsed: Any) -> int:
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

    \b
    Examples:
      onboard new-op my_frac                  # unary: functional, in-place and out=
      onboard new-op my_hypot2 --kind binary --dry-run   # the diff; nothing written
      onboard new-op my_trunc --like trunc    # trunc's family: integers copied, same dtypes
      onboard new-op trunc --reveal           # how PyTorch itself writes trunc
    """
    from onboard.commands._common import finish
    from onboard.views import new_op as view
    from onboard.workflows.newop import NewOpRequest
    from onboard.workflows.newop import new_op as run_new_op

    result = run_new_op(NewOpRequest(**parsed), reporter(as_json, verbose))
    from onboard.workflows.newop.reveal import RevealResult

    if isinstance(result, RevealResult):
        return finish(result, view.reveal, as_json, verbose)
    return finish(result, view.render, as_json, verbose)
