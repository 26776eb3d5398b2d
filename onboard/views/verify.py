"""`onboard verify`'s output (and `nox -s verify`'s): a table of the checks, then
the counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import STATUS_STYLE, escape
from onboard.views import screen

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.verify import VerifyResult


def render(result: VerifyResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    rows = [
        (
            escape(c.name),
            f"[{STATUS_STYLE.get(c.status, 'cyan')}]{escape(c.status)}[/]",
            escape(c.detail),
        )
        for c in result.checks
    ]
    out.table(("check", "result", "detail"), rows, title=f"onboard verify: {result.workspace}")
    n = result.counts()
    if result.tree_changed:
        out.print(
            f"The checkout changed while it was read ({result.tree_changed}), so nothing "
            "passed: run `nox -s verify` again once it stays put."
        )
        return
    out.print(
        f"{n['passed']} passed, {n['failed']} failed, {n['not_checked']} not checked"
        + ("" if result.ok else " - fix the failed checks and run `nox -s verify` again.")
    )
