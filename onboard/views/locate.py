"""`onboard locate`'s output: the line that raised and the chain down to it, or the
check sites whose message matches, with how sure the answer is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape, printable
from onboard.views import Screen, screen
from onboard.workflows.locate import MATCHED, NO_MATCH
from onboard.workflows.reviews import hint

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.locate import LocateResult

# The files named in the past-reviews line: the raising line, the chain, the best matches.
_REVIEWED = 3


def _esc(text: str) -> str:
    """Text from the input (a pasted log, the program's output): escaped and printable."""
    return escape(printable(text))


def render(result: LocateResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    if result.exc_type or result.message:
        head = f"{result.exc_type}: " if result.exc_type else ""
        first = (result.message or "").splitlines()[0] if result.message else ""
        out.print(f"[bold red]{_esc(head + first)}[/]")
    if result.explanation:
        out.print(_esc(result.explanation))
    if result.check is not None:
        func = f" in {result.check_function}" if result.check_function else ""
        verb = "Warned" if (result.exc_type or "").endswith("Warning") else "Raised"
        if result.confidence == "low":  # a torch frame whose line calls into C++
            out.print("\n[bold cyan]Raised by what this line calls, not by the line[/]")
        else:
            out.print(f"\n[bold cyan]{verb}{_esc(func)} at[/]")
        out.place(result.check, "    ")
    _chain(result, out, verbose)
    for finding in result.diagnosis:
        out.print(f"\n[bold red]{_esc(finding.id)}[/]: {_esc(finding.title)}")
        out.print(f"  [bold]why[/]: {_esc(finding.why)}")
        out.print(f"  [bold]fix[/]: {_esc(finding.fix)}")
    unsure = result.verdict not in (MATCHED, NO_MATCH) and result.confidence == "low"
    if result.mode != "command" and result.verdict in (MATCHED, NO_MATCH) or unsure:
        # How sure, first: a single candidate can still be the wrong one.
        out.print(f"\n[bold]Confidence: {_esc(result.confidence)}[/]")
        for spot in result.blind_spots:
            out.print(f"  - {_esc(spot)}")
    _compiled(result, out)
    _candidates(result, out)
    _warnings(result, out)
    for limit in result.limitations:
        out.print(f"\n[yellow]Limitation:[/] {_esc(limit)}")
    for note in result.notes:
        out.print(f"\n[yellow]Note:[/] {_esc(note)}")
    if result.next_step:
        out.print(f"\n[yellow]Next:[/] {_esc(result.next_step)}")
    locs = [result.check, *(layer.location for layer in result.chain)]
    locs += [c.location for c in result.candidates[:_REVIEWED]]
    reviews = hint.line(loc.path for loc in locs if loc is not None and loc.in_checkout)
    if reviews:
        out.print(f"\n[dim]{escape(reviews)}[/]")


def _chain(result: LocateResult, out: Screen, verbose: bool) -> None:
    if not result.chain:
        return
    out.print("\n[bold cyan]The chain, caller first[/]")
    shown: set[str] = set()
    for i, layer in enumerate(result.chain, 1):
        op = f" (aten::{layer.op})" if layer.op else ""
        out.print(f"  {i}. [bold]{_esc(layer.layer)}[/]: {_esc(layer.name)}{_esc(op)}")
        if layer.location is not None:
            out.place(layer.location, "     ")
        for rel in layer.related:
            if verbose or rel.label not in shown:
                out.place(rel, "     ")
            else:
                out.print(f"     [dim]{_esc(rel.label)} (above)[/]")
            shown.add(rel.label)
        if layer.note:
            out.print(f"     [dim]{_esc(layer.note)}[/]")
        if verbose and len(layer.frames) > 1:
            for frame in layer.frames:
                out.print(f"     [dim]frame: {_esc(frame)}[/]")


def _compiled(result: LocateResult, out: Screen) -> None:
    if not result.compiled:
        return
    out.print("\n[bold cyan]In the installed torch's compiled libraries[/]")
    for c in result.compiled:
        out.print(f"  [bold]{_esc(c.library)}[/] holds the text [dim]{_esc(repr(c.text))}[/]")
        if c.file:
            out.print(
                f"    probably from {out.location(c.file, None, c.url)} (the nearest build "
                "path on both "
                "sides of the text; the line is not in the binary)"
            )
            out.url(c.url, "    ")
        else:
            near = sorted({p for p in (c.before, c.after) if p})
            said = f" (the build paths next to it: {', '.join(near)})" if near else ""
            out.print(f"    its source file cannot be told from the binary{_esc(said)}")


def _candidates(result: LocateResult, out: Screen) -> None:
    if not result.candidates:
        return
    out.print("\n[bold cyan]Check sites whose message matches, best first[/]")
    for c in result.candidates:
        func = f" in {c.function}" if c.function else ""
        tie = ", tied with the best" if c.tied and len(result.candidates) > 1 else ""
        out.print(
            f"  {_esc(c.macro)}{_esc(func)} -> {_esc(c.raises)}  "
            f"[dim]({c.coverage:.0%} of the message is literal text of this site"
            f"{tie})[/]"
        )
        out.place(c.location, "    ")
        for reason in c.reasons:
            out.print(f"      [dim]ranked lower: {_esc(reason)}[/]")
    hidden = result.candidates_total - len(result.candidates)
    if hidden > 0:
        out.print(f"  [dim]... and {hidden} more matching sites, not shown[/]")


def _warnings(result: LocateResult, out: Screen) -> None:
    warned = [w for w in result.warnings if result.check is None or w.location != result.check]
    if not warned:
        return
    out.print("\n[bold cyan]Warnings raised inside torch[/]")
    for w in warned:
        said = f"{w.category}: " if w.category else ""
        if w.message:
            out.print(f"  [yellow]{_esc(said + w.message)}[/]")
        out.place(w.location, "    ")
