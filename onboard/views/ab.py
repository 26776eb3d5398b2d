"""`onboard ab`'s output: what A and B are, whether they differ in more than the code,
whether the outputs agree, then each metric: medians, B/A, its interval, a verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape
from onboard.views import screen
from onboard.workflows.ab import stats

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.ab import ABResult


def render(result: ABResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    out.print(f"[bold]A[/] = {escape(result.a.what)}")
    out.print(f"[bold]B[/] = {escape(result.b.what)}")
    if result.differences:
        out.print(
            "[bold yellow]A and B differ in more than the code[/], and the numbers below "
            "measure that too:"
        )
        for line in result.differences:
            out.print(f"  [yellow]-[/] {escape(line)}")
    elif verbose:
        out.print(
            "[dim]A and B start alike: the same interpreter and flags, the same "
            "environment, the same number of files compiled from source per run.[/]"
        )
    if result.same_output is False:
        out.print(
            "[bold red]The script's output differs between A and B[/] (a faster wrong "
            "answer is not an improvement):"
        )
        out.print(result.output_diff, markup=False, highlight=False)
    elif result.output_note:
        out.print(f"[yellow]{escape(result.output_note)}[/]")
    rows = []
    style = {
        stats.FASTER: "green",
        stats.SLOWER: "bold red",
        stats.TOO_FEW: "yellow",
        stats.TOO_NOISY: "yellow",
    }
    for m in result.metrics:
        r = m.result
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        interval = f"{r.low:.3f} - {r.high:.3f}" if r.low is not None else "-"
        word = style.get(r.verdict)
        verdict = f"[{word}]{escape(r.detail)}[/]" if word else escape(r.detail)
        rows.append((escape(m.name), _num(r.median_a), _num(r.median_b), ratio, interval, verdict))
    out.table(
        ("metric", "median A", "median B", "B/A", "95% interval", "verdict"),
        rows,
        title=f"{result.rounds} rounds, A B / B A alternating",
    )
    for side in (result.a, result.b):
        for note in side.notes:
            out.print(f"[yellow]{side.label}:[/] {escape(note)}")
    if result.noise.get("warning"):
        out.print(f"[yellow]noise:[/] {escape(result.noise['warning'])}")
    for note in result.notes:
        out.print(f"[dim]note:[/] {escape(note)}")


def _num(value: float) -> str:
    return f"{value:.4g}"
