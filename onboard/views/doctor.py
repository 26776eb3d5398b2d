"""`onboard doctor`'s output: the facts about the torch in a table, then each finding
with why it matters and what to run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.workflows.doctor.report import ERROR, INFO, WARNING

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.doctor.report import DoctorReport

_STYLES = {ERROR: "bold red", WARNING: "bold yellow", INFO: "bold blue"}


def render(report: DoctorReport, console: Console, verbose: bool) -> None:
    from rich.table import Table

    table = Table(title="torch in this interpreter", show_header=False, title_justify="left")
    table.add_column("fact", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in report.rows():
        table.add_row(name, value)
    console.print(table)
    if verbose and report.facts.get("sys_path"):
        console.print("[bold]sys.path[/] (import order):")
        for entry in report.facts["sys_path"]:
            console.print(f"  {entry}")
    if not report.findings:
        console.print("[green]No problems found.[/]")
        return
    for f in report.findings:
        console.print()
        console.print(f"[{_STYLES[f.severity]}]{f.severity}[/] [bold]{f.title}[/] [dim]({f.id})[/]")
        console.print(f"  [bold]why:[/] {f.why}")
        console.print(f"  [bold]fix:[/] {f.fix}")
        if verbose:
            for line in f.details:
                console.print(f"    [dim]{line}[/]")
    console.print()
    acting = [f for f in report.findings if f.needs_action]
    if acting:
        console.print(f"[bold red]{len(acting)} finding(s) need action.[/]")
    else:
        console.print("[green]Nothing needs action[/] (the notes above are for information).")
