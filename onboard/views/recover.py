"""`onboard recover`'s output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape
from onboard.views import screen

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.recover import RecoverResult


def render(result: RecoverResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    if result.nothing_to_do:
        out.print(
            "Nothing to recover: no interrupted onboard run left a journal in "
            f"{escape(str(result.scope))}, nor an `onboard ab` worktree, nor a program still "
            "running."
        )
        return
    for stopped in result.stopped:
        note = stopped.note()
        out.print(f"[green]stopped[/]: {escape(note[0].upper() + note[1:])}")
    for path in result.swept:
        out.print(f"[green]removed[/] {escape(str(path))}, left by an `onboard ab` killed outright")
    for run in result.runs:
        command = f"`onboard {escape(run.command)}` (pid {run.pid})"
        if run.set_aside:
            out.print(
                f"[yellow]unreadable journal[/] {escape(run.journal)}: kept as "
                f"{escape(run.set_aside)}; nothing was undone from it"
            )
        elif not run.undone:
            out.print(f"{command} had finished its work; only its journal was left")
        else:
            out.print(f"[green]recovered[/] {command}: undid what was still its own")
            for note in run.notes or ["nothing of yours was in its way: all of it is undone"]:
                out.print(f"  - {escape(note)}")
