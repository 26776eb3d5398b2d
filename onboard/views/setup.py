"""`onboard setup`'s output: the workspace it made or checked, and what to do next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard import workspace
from onboard.shell import quote
from onboard.units import human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.setup import SetupResult


def render(result: SetupResult, console: Console, verbose: bool) -> None:
    from rich.table import Table

    title = {
        "created": "Workspace created",
        "resumed": "Workspace updated",
        "unchanged": "Workspace checked: already up to date",
    }[result.state]
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("workspace", str(result.workspace))
    kind = (
        "reference tree from the installed wheel (no .cpp/.cu)"
        if result.checkout_kind == workspace.REFERENCE
        else "git checkout (depth 1)"
    )
    table.add_row("checkout", f"{result.checkout}  [dim]{kind}[/]")
    table.add_row("torch", f"{result.torch_version}  ({result.python})")
    commit = result.commit or "unknown"
    tag = " " + result.tag if result.tag else ""
    table.add_row("commit", f"{commit}  [dim]{result.commit_kind}{tag}[/]")
    if result.remote:
        table.add_row("remote", result.remote)
    table.add_row("build prefix", result.build_prefix or "not found in the libraries")
    if result.fetch and (verbose or result.fetch.bytes_received):
        table.add_row(
            "fetched",
            f"{result.fetch.objects} objects, {human_bytes(result.fetch.bytes_received)}",
        )
    if result.reference:
        table.add_row(
            "reference tree",
            f"{result.reference['files']} files; vendored headers under third_party/include: "
            f"{len(result.reference['vendored_includes'])} entries",
        )
    for f in result.ide_files:
        table.add_row("ide", f"{f.path}  [dim]{f.action}[/]")
    if result.gdb_file:
        table.add_row("gdb", f"{result.gdb_file}  [dim]gdb -x {result.gdb_file} -p <pid>[/]")
    table.add_row("python debugging", result.debugging.get("python", ""))
    table.add_row("C++ debugging", result.debugging.get("cpp", ""))
    table.add_row("time", f"{result.seconds:.1f} s")
    console.print(table)
    for f in result.ide_files:
        if f.message and (verbose or f.action == "side-file"):
            console.print(f"[yellow]note:[/] {f.message}")
    if verbose:
        for action in result.actions:
            console.print(f"[dim]- {action}[/]")
    for note in result.notes:
        console.print(f"[dim]note:[/] {note}")
    for problem in result.problems:
        console.print(f"[red]problem:[/] {problem}")
    console.print(f"Next: `cd {quote(result.workspace)} && nox -s verify` (or `onboard verify`).")
