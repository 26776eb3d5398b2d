"""`onboard doctor`'s output: the facts about the torch in a table, then each finding
with why it matters and what to run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.views import screen
from onboard.workflows.doctor.report import ERROR, INFO, WARNING

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.doctor.report import DoctorReport

_STYLES = {ERROR: "bold red", WARNING: "bold yellow", INFO: "bold blue"}


def render(report: DoctorReport, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    out.table(
        ("fact", "value"),
        list(report.rows()),
        title="torch in this interpreter",
        header=False,
        styles=("bold",),
    )
    if verbose and report.facts.get("sys_path"):
        out.print("[bold]sys.path[/] (import order):")
        for entry in report.facts["sys_path"]:
            out.print(f"  {entry}")
    if not report.findings:
        out.print("[green]No problems found.[/]")
        return
    for f in report.findings:
        out.print()
        out.print(f"[{_STYLES[f.severity]}]{f.severity}[/] [bold]{f.title}[/] [dim]({f.id})[/]")
        out.print(f"  [bold]why:[/] {f.why}")
        out.print(f"  [bold]fix:[/] {f.fix}")
        if verbose:
            for line in f.details:
                out.print(f"    [dim]{line}[/]")
    out.print()
    acting = [f for f in report.findings if f.needs_action]
    if acting:
        out.print(f"[bold red]{len(acting)} finding(s) need action.[/]")
    else:
        out.print("[green]Nothing needs action[/] (the notes above are for information).")
