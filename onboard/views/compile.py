"""Rendering a `compile` result with rich: the graph breaks first (each at the user's
line, then torch's reason, registry entry and deciding line), the recompilations per
function, the failures, then the cost per function and what was not checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape, printable
from onboard.views import Screen, screen
from onboard.workflows.compile import (
    CompileResult,
    Failure,
    GraphBreak,
    Place,
    Recompiled,
)

if TYPE_CHECKING:
    from rich.console import Console

HINTS_SHOWN = 2  # registry hints per break without -v
STACK_SHOWN = 0  # user frames above the break without -v


def _esc(text: str) -> str:
    return escape(printable(text))


def render(result: CompileResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    forced = f" (every graph on {result.backend})" if result.backend else ""
    out.print(f"\n[bold]{_esc(result.command)}[/]{_esc(forced)}: exit {result.program_exit}")
    out.print(
        f"[dim]{len(result.breaks)} distinct graph break(s), "
        f"{sum(r.recompiles for r in result.recompiles)} recompilation(s), "
        f"{len(result.failures)} failure(s), {len(result.frames)} function(s) compiled"
        + (f", torch {_esc(result.torch_version)}" if result.torch_version else "")
        + "[/]"
    )
    _breaks(out, result.breaks, verbose)
    _recompiles(out, result.recompiles)
    _failures(out, result.failures)
    _cost(out, result)
    for line in result.not_checked:
        out.print(f"[yellow]not checked:[/] {_esc(line)}")
    for note in result.notes:
        out.print(f"[yellow]Note:[/] {_esc(note)}")


def _place(out: Screen, place: Place, indent: str, what: str = "") -> None:
    label = f"{what} " if what else ""
    func = f" in {_esc(place.function)}" if place.function else ""
    out.print(f"{indent}{label}{out.location(place.path, place.line)}{func}")
    if place.code:
        out.print(f"{indent}  [dim]{_esc(place.code)}[/]")


def _breaks(out: Screen, breaks: list[GraphBreak], verbose: bool) -> None:
    if not breaks:
        out.print("\n[green]No graph breaks.[/]")
        return
    out.print("\n[bold cyan]Graph breaks[/]")
    for number, brk in enumerate(breaks, 1):
        times = f"{brk.count} time" + ("s" if brk.count != 1 else "")
        gb = f" [dim]({brk.registry.id})[/]" if brk.registry else ""
        out.print(f"\n[bold red]{number}. {_esc(brk.reason)}[/]{gb}, {times}")
        _place(out, brk.user, "   ")
        if verbose:
            for frame in brk.stack[:-1]:
                out.print(f"   [dim]called from {out.path(frame.path, frame.line)} in "
                          f"{_esc(frame.function)}[/]")  # fmt: skip
        if brk.explanation:
            out.print(f"   [bold]why[/]: {_esc(brk.explanation)}")
        # The run's own hints, with its names filled in; the registry's only where the
        # run gave none (they are templates there).
        hints = brk.hints or (brk.registry.hints if brk.registry else [])
        for hint in hints if verbose else hints[:HINTS_SHOWN]:
            out.print(f"   [bold]hint[/]: {_esc(hint)}")
        for site in brk.decided_by:
            _place(out, site, "   ", "decided at")
        if len(brk.decided_by) > 1:
            out.print("   [dim](each of these calls names this registry entry)[/]")
        out.print(f"   [bold]ran uncompiled[/]: {_esc(brk.uncompiled)}")


def _recompiles(out: Screen, groups: list[Recompiled]) -> None:
    if not groups:
        out.print("\n[green]No recompilations.[/]")
        return
    out.print("\n[bold cyan]Recompilations[/]")
    for group in groups:
        out.print(
            f"\n[bold]{_esc(group.function)}[/] ({out.path(group.path, group.line)}): "
            f"recompiled {group.recompiles} time(s)"
        )
        fixed: set[str] = set()
        for guard in group.guards:
            out.print(f"   [bold red]{_esc(guard.guard)}[/] [dim]({guard.kind}, {guard.count}x)[/]")
            if guard.at is not None:
                out.print(f"     from {out.path(guard.at.path, guard.at.line)}")
            if guard.kind not in fixed:  # one fix per kind of guard
                out.print(f"     [bold]fix[/]: {_esc(guard.fix)}")
            fixed.add(guard.kind)
        if group.limit_hit:
            out.print(f"   [yellow]{_esc(group.limit_note)}[/]")


def _failures(out: Screen, failures: list[Failure]) -> None:
    if not failures:
        return
    out.print("\n[bold cyan]Failures while compiling[/]")
    for failure in failures:
        out.print(
            f"\n[bold red]{_esc(failure.kind)}[/] compiling {_esc(failure.function)} "
            f"[dim]({_esc(failure.compile_id)})[/]: {_esc(' '.join(failure.message.split()))}"
        )
        if failure.user is not None:
            _place(out, failure.user, "   ", "at")
        if failure.raised_at is not None:
            _place(out, failure.raised_at, "   ", "raised at")
        if failure.minifier:
            out.print(f"   [bold]next[/]: {_esc(failure.minifier)}")


def _cost(out: Screen, result: CompileResult) -> None:
    if not result.frames:
        return
    out.print("")
    rows = [
        [
            _esc(f.function),
            str(f.compiles),
            str(f.graphs),
            _esc(", ".join(str(n) for n in f.ops_per_graph) or "-"),
            f"{f.compile_seconds:.2f}",
            f"{f.cache_hits}/{f.cache_hits + f.cache_misses}",
        ]
        for f in result.frames
    ]
    out.table(
        ["function", "compiles", "graphs", "ops per graph", "compile s", "cache hits"],
        rows,
        title="Cost per compiled function",
        justify=["left", "right", "right", "left", "right", "right"],
    )
