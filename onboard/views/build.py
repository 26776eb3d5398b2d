"""`onboard build`'s output: the plan (``--dry-run``), the build's result, and
`onboard setup DIR --build`'s pair of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.views import screen
from onboard.views import setup as setup_view

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.build import BuildPlan, BuildResult, SetupAndBuild


def plan(plan: BuildPlan, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    out.print(f"[bold]Build plan[/] for {plan.checkout} ({plan.build_type}, MAX_JOBS={plan.jobs})")
    out.print("[bold]environment[/] (set for the build; each with why):")
    for choice in plan.env:
        shown = (
            f"{choice.name}={choice.value}"
            if choice.value is not None
            else f"{choice.name} (removed)"
        )
        out.print(f"  [bold]{shown}[/]", highlight=False)
        out.print(f"      [dim]{choice.reason}[/]", highlight=False)
    out.print(f"[bold]cache[/] {plan.cache_tool or 'none'}: {plan.cache_reason}")
    if plan.cache_tool:
        out.print(f"  backend: {plan.cache_backend}")
    e = plan.estimate
    out.print(
        f"[bold]estimate[/] disk {e.disk_gib:g} GiB (free {e.free_disk_gib:.0f} GiB), "
        f"memory {e.compile_gib_per_job:g} GiB per compile job and {e.link_gib:g} GiB for "
        f"the link (available {e.available_memory_gib:.1f} GiB). {e.reason}"
    )
    out.print("[bold]commands[/] (the nox session `build`):")
    for cmd in plan.commands:
        out.print(f"  $ {cmd}")
    if plan.dropped:
        out.print(
            f"  not installed (the build must never replace torch): {', '.join(plan.dropped)}"
        )
    out.print("[bold]pre-flight[/]")
    for c in plan.preflight:
        mark = "[green]ok[/]" if c.ok else "[red]FAIL[/]"
        out.print(f"  {mark} {c.name}: {c.detail}" + (f" Fix: {c.fix}" if c.fix else ""))
    for note in plan.notes:
        out.print(f"[yellow]note[/] {note}")


def result(result: BuildResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    if result.returncode != 0:
        out.print(
            f"[bold red]The build failed[/] (exit {result.returncode}) after "
            f"{result.seconds:.0f} s."
        )
        if result.first_error:
            out.print(f"First error (log line {result.first_error.line_number}):")
            for line in result.first_error.lines:
                out.print(f"  {line}", markup=False)
        out.print(f"Full log: {result.log}")
        out.print("Fix the error, then run `onboard build` again (the build is incremental).")
        return
    state = "[bold green]Built[/]" if result.ok else "[bold yellow]Built, but a check failed[/]"
    out.print(f"{state} {result.plan.build_type} in {result.seconds:.0f} s (log: {result.log}).")
    for c in result.checks:
        mark = "[green]ok[/]" if c.ok else "[red]FAIL[/]"
        out.print(f"  {mark} {c.name}: {c.detail}", markup=True)
    if result.cache:
        out.print(
            f"  cache {result.cache.tool}: {result.cache.hits} hits, {result.cache.misses} misses"
            + (f" ({result.cache.location})" if result.cache.location else "")
        )
        if result.cache.note:
            out.print(f"  [yellow]note[/] {result.cache.note}")
    for change in result.ide:
        out.print(f"  {change.action}: {change.path} {change.detail}")
    for note in result.notes:
        out.print(f"[yellow]note[/] {note}")
    out.print(
        f"Use it: {result.plan.venv_python} your_script.py (VS Code: onboard's launch "
        "configurations now run this interpreter)."
    )


def setup_and_build(both: SetupAndBuild, console: Console, verbose: bool) -> None:
    setup_view.render(both.setup, console, verbose)
    result(both.build, console, verbose)
