"""Rendering a `memory` result with rich: the memory per step as a line of blocks,
then what grows (each at the line that made it, with what holds it and the graph
it keeps), the known patterns with their fix, CUDA's allocator, and what was not
checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape, printable
from onboard.units import human_bytes as size
from onboard.views import Screen, screen
from onboard.workflows.memory import Census, Growth, MemoryResult

if TYPE_CHECKING:
    from rich.console import Console

BLOCKS = "▁▂▃▄▅▆▇█"
PEAK_SHOWN = 6  # peak groups shown without -v
SPARK_WIDTH = 60  # censuses shown at most on the line (spread over the run)


def _esc(text: str) -> str:
    return escape(printable(text))


def sparkline(values: list[int], width: int = SPARK_WIDTH) -> str:
    """One block per value (at most ``width``, evenly picked), its height between the
    smallest and the largest."""
    if not values:
        return ""
    if len(values) > width:
        values = [values[round(i * (len(values) - 1) / (width - 1))] for i in range(width)]
    low, high = min(values), max(values)
    if high == low:
        return BLOCKS[0] * len(values)
    return "".join(BLOCKS[(v - low) * (len(BLOCKS) - 1) // (high - low)] for v in values)


def render(result: MemoryResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    out.print(f"\n[bold]{_esc(result.command)}[/]: exit {result.program_exit}")
    out.print(
        f"[dim]{result.steps} step(s) ({_esc(result.step_kind)}), {len(result.censuses)} "
        f"census(es) in {result.census_seconds:.2f} s"
        + (f", torch {_esc(result.torch_version)}" if result.torch_version else "")
        + "[/]"
    )
    _series(out, result.censuses)
    if not result.grows and len(result.censuses) >= 3:
        out.print("\n[green]Nothing grows from step to step.[/]")
    for number, g in enumerate(result.growth, 1):
        _growth(out, number, g, verbose)
    shown = {(g.path, g.line, g.pattern) for g in result.growth}
    if result.patterns:
        out.print("\n[bold cyan]Known patterns[/]")
    for pattern in result.patterns:
        out.print(f"\n[bold red]{_esc(pattern.title)}[/]")
        if pattern.path and (pattern.path, pattern.line, pattern.id) not in shown:
            out.print(f"   {out.location(pattern.path, pattern.line)}")
        out.print(f"   {_esc(pattern.evidence)}")
        out.print(f"   [bold]fix[/]: {_esc(pattern.fix)}")
    if result.peak is not None:
        peak = result.peak
        out.print(
            f"\n[bold cyan]Peak[/] {size(peak.bytes)} live (torch.profiler's memory profile of "
            f"steps {peak.from_step + 1}-{peak.to_step})"
        )
        for group in peak.groups[:PEAK_SHOWN] if not verbose else peak.groups:
            where = (
                f" in {_esc(group.function or '?')} ({out.location(group.path, group.line)})"
                if group.path
                else ""
            )
            out.print(f"   {size(group.bytes):>10}  {_esc(group.category)}{where}")
    if result.cuda is not None:
        c = result.cuda
        out.print("\n[bold cyan]CUDA caching allocator[/] (at the end)")
        driver = f", the driver sees {size(c.driver_used)} used" if c.driver_used else ""
        out.print(
            f"   allocated {size(c.allocated)}, reserved {size(c.reserved)}{driver}; peak "
            f"allocated {size(c.peak_allocated)}"
        )
        out.print(
            f"   fragmentation {c.fragmentation:.0%} of reserved (inactive split blocks); "
            f"empty_cache() would give back {size(c.empty_cache_gain)}"
            + (f"; {c.ooms} out-of-memory error(s)" if c.ooms else "")
        )
        if c.snapshot:
            out.print(f"   snapshot for memory_viz: {out.path(c.snapshot)}")
    if result.plot:
        out.print(f"\nThe memory per step is drawn in {out.path(result.plot)}")
    for line in result.not_checked:
        out.print(f"[yellow]not checked:[/] {_esc(line)}")
    for note in result.notes:
        out.print(f"[yellow]Note:[/] {_esc(note)}")


def _series(out: Screen, censuses: list[Census]) -> None:
    if not censuses:
        return
    first, last = censuses[0], censuses[-1]
    out.print(
        f"\n[bold cyan]Live tensors per step[/] {sparkline([c.total for c in censuses])} "
        f"{size(first.total)} at step {first.step} -> {size(last.total)} at step {last.step}"
    )
    out.print(
        f"[dim]   {first.tensors} -> {last.tensors} tensors, graph nodes {first.graph_nodes} "
        f"-> {last.graph_nodes}, process RSS {size(first.rss)} -> {size(last.rss)}[/]"
    )


def _growth(out: Screen, number: int, g: Growth, verbose: bool) -> None:
    out.print(
        f"\n[bold red]{number}. +{g.count_per_step:g} tensor(s), {size(g.bytes_per_step)} a "
        f"step[/] [dim]({_esc(g.example)})[/]"
    )
    out.print(f"   made at {out.location(g.path, g.line)} in {_esc(g.function)}")
    if g.holder is not None:
        h = g.holder
        out.print(f"   held by {_esc(h.label)}, as [bold]{_esc(h.expression)}[/]")
    else:
        out.print("   [yellow]held by[/] no name of your code was found (a C++ owner?)")
    if g.with_graph:
        out.print(
            f"   keeps its autograd graph: {g.graph_nodes_per_step} node(s), "
            f"{size(g.saved_bytes_per_step)} of saved tensors a step"
        )
