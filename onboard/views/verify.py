"""`onboard verify`'s output (and `nox -s verify`'s): a table of the checks, then
the counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import status_table

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.verify import VerifyResult


def render(result: VerifyResult, console: Console, verbose: bool) -> None:
    rows = [(c.name, c.status, c.detail) for c in result.checks]
    console.print(status_table(f"onboard verify: {result.workspace}", rows))
    n = result.counts()
    if result.tree_changed:
        console.print(
            f"The checkout changed while it was read ({result.tree_changed}), so nothing "
            "passed: run `nox -s verify` again once it stays put."
        )
        return
    console.print(
        f"{n['passed']} passed, {n['failed']} failed, {n['not_checked']} not checked"
        + ("" if result.ok else " - fix the failed checks and run `nox -s verify` again.")
    )
