"""Rendering an `onboard tests` result with rich: the change and the ops it touches,
the selected tests (ranked, each with why and its command), the lint, and, with
``--run``, what ran (``render_run``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape, printable
from onboard.views import Screen, screen
from onboard.workflows.tests.result import LintReport, Selection, TestsResult

if TYPE_CHECKING:
    from rich.console import Console

REASONS_SHOWN = 3  # reasons per test without -v


def _esc(text: str) -> str:
    return escape(printable(text))


def render(result: TestsResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    render_selection(out, result.selection, verbose)
    if result.lint is not None:
        _lint(out, result.lint, verbose)
    if result.run is not None:
        # `--run`'s part of this view, `render_run`, is written below by its author.
        globals()["render_run"](result.run, out, verbose)


def render_selection(out: Screen, sel: Selection, verbose: bool) -> None:
    what = {
        "branch": f"the branch since {sel.base}",
        "paths": "the paths given",
        "op": "the op given",
    }.get(sel.source, sel.source)
    out.print(f"[bold]Change[/]: {len(sel.files)} file(s), {_esc(what)}")
    shown = sel.files if verbose else sel.files[:8]
    for path in shown:
        out.print(f"  {_esc(path)}")
    if len(sel.files) > len(shown):
        out.print(f"  [dim]... and {len(sel.files) - len(shown)} more (-v)[/]")
    if sel.changed:
        out.print("\n[bold]Ops it touches[/]")
        for op in sel.changed:
            infos = ", ".join(op.opinfos) if op.opinfos else "no OpInfo entry"
            out.print(f"  [cyan]{_esc(op.base)}[/] (OpInfo: {_esc(infos)})")
            for step in op.via if verbose else op.via[:1]:
                out.print(f"    [dim]{_esc(step)}[/]")
    if not sel.selected:
        out.print("\n[yellow]No test selected[/]: nothing in the change maps to a test.")
    else:
        out.print(f"\n[bold]Tests to run[/] ({len(sel.selected)}, most relevant first)")
    for item in sel.selected:
        absent = "" if item.present else " [yellow](not in this checkout)[/]"
        out.print(f"\n[bold]{item.rank}. {_esc(item.test)}[/]{absent}")
        out.print(f"   [green]$ {_esc(item.command_line)}[/]")
        reasons = item.reasons if verbose else item.reasons[:REASONS_SHOWN]
        for reason in reasons:
            out.print(f"   - {_esc(reason)}")
        if len(item.reasons) > len(reasons):
            out.print(f"   [dim]- and {len(item.reasons) - len(reasons)} more reason(s) (-v)[/]")
    for note in sel.notes:
        out.print(f"\n[yellow]Note:[/] {_esc(note)}")


def _lint(out: Screen, lint: LintReport, verbose: bool) -> None:
    out.print("\n[bold]Lint[/]")
    if lint.executable is None:
        out.print("  lintrunner: [yellow]not installed[/]")
    else:
        state = {True: "initialised", False: "[yellow]not initialised[/]", None: "unknown"}
        out.print(f"  lintrunner: {_esc(lint.executable)}, {state[lint.initialised]}")
    missing = [x for x in lint.linters if not x.ready]
    if lint.linters:
        out.print(
            f"  linters in .lintrunner.toml: {len(lint.linters)}, "
            f"{len(missing)} missing their tools"
        )
        for linter in missing if verbose else missing[:6]:
            out.print(f"    [yellow]{_esc(linter.name)}[/]: {_esc(linter.missing)}")
    if lint.result is not None:
        out.print(f"  {_esc(lint.result.summary())}")
        for msg in lint.result.messages if verbose else lint.result.messages[:10]:
            where = f"{msg.path}:{msg.line}" if msg.line else msg.path
            out.print(f"    {_esc(where)} [{_esc(msg.code)}] {_esc(msg.name)}")
    for what in lint.not_checked:
        out.print(f"  [yellow]not checked:[/] {_esc(what)}")
