"""Rendering a `stuck` result with rich: each snapshot's diagnoses first, then
every process and thread, the frames that matter (Python frames, torch's own
native frames with their source, and the innermost native frame: the wait)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.views import Screen, screen
from onboard.workflows.stuck.model import HOLDS_GIL, NATIVE, WAITS_GIL, Frame, Picture, Thread
from onboard.workflows.stuck.result import Snapshot, StuckResult

if TYPE_CHECKING:
    from rich.console import Console

PYTHON_SHOWN = 6  # the innermost Python frames shown per thread without -v


def _esc(text: str) -> str:
    from rich.markup import escape

    from onboard.console import printable

    return escape(printable(text))


def render_result(result: StuckResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    for snap in result.snapshots[result.printed :]:
        render_snapshot(snap, console, verbose)
    out.print(f"\n[bold]{_esc(result.target)}[/]: {_esc(result.ended or '')}")
    for note in result.notes:
        out.print(f"[yellow]Note:[/] {_esc(note)}")


def render_snapshot(snap: Snapshot, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    paused = (
        f"; each process was paused at most {snap.paused:.2f} s while it was read"
        if snap.paused is not None
        else "; no pause was seen"
    )
    out.print(
        f"\n[bold cyan]Snapshot[/] after {snap.after:.1f} s: {_esc(snap.reason)}\n"
        f"[dim]{len(snap.pictures)} process(es) read by {_esc(', '.join(snap.tools) or 'no tool')}"
        f" in {snap.seconds:.2f} s{paused}[/]"
    )
    if not snap.diagnoses:
        out.print(
            "\n[yellow]No known wait was recognised[/] (DataLoader, collective, GIL, busy "
            "thread, callback lock, Python deadlock, child process, CUDA): read the threads "
            "below."
        )
    for number, diag in enumerate(snap.diagnoses, 1):
        out.print(f"\n[bold red]{number}. {_esc(diag.title)}[/]")
        if not diag.checked:
            out.print(f"   [yellow]not checked:[/] {_esc(diag.unchecked_why)}")
        for line in diag.evidence:
            out.print(f"   {_esc(line)}")
        out.print(f"   [bold]what it means[/]: {_esc(diag.meaning)}")
        for step in diag.try_next:
            out.print(f"   [bold]try[/]: {_esc(step)}")
        shown: set[str] = set()
        for site in diag.sites:
            if site.label not in shown:  # two workers blocked on one line: shown once
                out.place(site, "   ")
            shown.add(site.label)
    for picture in snap.pictures:
        _process(out, picture, verbose)
    for skipped in snap.skipped:
        out.print(f"[dim]process {_esc(skipped)}[/]")


def _process(out: Screen, picture: Picture, verbose: bool) -> None:
    kind = "" if picture.python else " [dim](not Python: threads from /proc)[/]"
    # A terminal gets the first 400 characters (a few wrapped lines, not a screenful of
    # arguments); a pipe and -v the whole command line.
    command = picture.command
    if out.is_terminal and not verbose and len(command) > 400:
        command = command[:400] + " ..."
    out.print(f"\n[bold]{_esc(picture.role)}[/] pid {picture.pid}: {_esc(command)}" + kind)
    if picture.error:
        out.print(f"  [yellow]{_esc(picture.error)}[/]")
        return
    for thread in picture.threads:
        _thread(out, thread, verbose)


def _thread(out: Screen, thread: Thread, verbose: bool) -> None:
    gil = {HOLDS_GIL: " [holds the GIL]", WAITS_GIL: " [waits for the GIL]"}.get(
        thread.gil or "", ""
    )
    name = f" '{thread.name}'" if thread.name else ""
    state = ""
    if thread.cpu_seconds is not None and thread.sampled_seconds:
        share = thread.cpu_seconds / thread.sampled_seconds
        state = f" {'busy: ' if thread.busy else ''}{share:.0%} CPU"
    if thread.syscall is not None:
        state += f", in {thread.syscall.label}"
    out.print(f"  thread {thread.tid}{_esc(name)}{_esc(gil)}[dim]{_esc(state)}[/]")
    frames = thread.frames if verbose else _worth_showing(thread)
    if not frames and thread.syscall is None:
        out.print("    [dim](no Python frames and no frame of torch's)[/]")
    for frame in frames:
        _frame(out, frame, verbose)


def _worth_showing(thread: Thread) -> list[Frame]:
    python = thread.python_frames[-PYTHON_SHOWN:]
    keep = [f for f in thread.frames if f in python or (f.kind == NATIVE and f.where is not None)]
    natives = [f for f in thread.frames if f.kind == NATIVE]
    if not keep and not natives:
        return []
    if natives and natives[-1] not in keep and (keep or thread.python_frames):
        keep.append(natives[-1])  # the innermost: what it waits in
    return keep


def _frame(out: Screen, frame: Frame, verbose: bool) -> None:
    if frame.kind == NATIVE:
        lib = (frame.library or "").rsplit("/", 1)[-1]
        name = (
            frame.function if verbose or len(frame.function) < 140 else frame.function[:137] + "..."
        )
        out.print(f"    [magenta]{_esc(name)}[/] [dim]{_esc(lib)}[/]")
        if frame.where is not None:
            out.print(f"      -> {out.loc(frame.where)}")
            out.url(frame.where.url, "         ")
        if frame.note and (verbose or frame.where is not None):
            out.print(f"      [dim]{_esc(frame.note)}[/]")
        return
    where = frame.where.label if frame.where is not None else f"{frame.file}:{frame.line}"
    out.print(f"    {_esc(where)} in {_esc(frame.function)}")
    text = frame.text or (frame.where.text.strip() if frame.where and frame.where.text else "")
    if text:
        out.print(f"      [dim]{_esc(text)}[/]")
