"""`onboard setup`'s output: the workspace it made or checked, and what to do next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard import workspace
from onboard.shell import quote
from onboard.units import human_bytes
from onboard.views import screen

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.setup import SetupResult


def render(result: SetupResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    title = {
        "created": "Workspace created",
        "resumed": "Workspace updated",
        "unchanged": "Workspace checked: already up to date",
    }[result.state]
    rows: list[tuple[str, str]] = []
    rows.append(("workspace", str(result.workspace)))
    kind = (
        "reference tree from the installed wheel (no .cpp/.cu)"
        if result.checkout_kind == workspace.REFERENCE
        else "git checkout (depth 1)"
    )
    rows.append(("checkout", f"{result.checkout}  [dim]{kind}[/]"))
    rows.append(("torch", f"{result.torch_version}  ({result.python})"))
    commit = result.commit or "unknown"
    tag = " " + result.tag if result.tag else ""
    rows.append(("commit", f"{commit}  [dim]{result.commit_kind}{tag}[/]"))
    if result.remote:
        rows.append(("remote", result.remote))
    rows.append(("build prefix", result.build_prefix or "not found in the libraries"))
    if result.fetch and (verbose or result.fetch.bytes_received):
        rows.append(
            (
                "fetched",
                f"{result.fetch.objects} objects, {human_bytes(result.fetch.bytes_received)}",
            )
        )
    if result.reference:
        rows.append(
            (
                "reference tree",
                f"{result.reference['files']} files; vendored headers under third_party/include: "
                f"{len(result.reference['vendored_includes'])} entries",
            )
        )
    for f in result.ide_files:
        rows.append(("ide", f"{f.path}  [dim]{f.action}[/]"))
    if result.gdb_file:
        rows.append(("gdb", f"{result.gdb_file}  [dim]gdb -x {result.gdb_file} -p <pid>[/]"))
    rows.append(("python debugging", result.debugging.get("python", "")))
    rows.append(("C++ debugging", result.debugging.get("cpp", "")))
    rows.append(("time", f"{result.seconds:.1f} s"))
    out.table(("", ""), rows, title=title, header=False, styles=("bold",))
    for f in result.ide_files:
        if f.message and (verbose or f.action == "side-file"):
            out.print(f"[yellow]note:[/] {f.message}")
    if verbose:
        for action in result.actions:
            out.print(f"[dim]- {action}[/]")
    for note in result.notes:
        out.print(f"[dim]note:[/] {note}")
    for problem in result.problems:
        out.print(f"[red]problem:[/] {problem}")
    out.print(f"Next: `cd {quote(result.workspace)} && nox -s verify` (or `onboard verify`).")
