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

    from onboard.workflows.tests.run import RunReport, SampleResult

REASONS_SHOWN = 3  # reasons per test without -v


def _esc(text: str) -> str:
    return escape(printable(text))


def render(result: TestsResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    render_selection(out, result.selection, verbose)
    if result.lint is not None:
        _lint(out, result.lint, verbose)
    if result.run is not None:
        render_run(result.run, out, verbose)


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
    if lint.result is not None and lint.result.ran:  # else "not checked" says why
        out.print(f"  {_esc(lint.result.summary())}")
        for msg in lint.result.messages if verbose else lint.result.messages[:10]:
            where = f"{msg.path}:{msg.line}" if msg.line else msg.path
            out.print(f"    {_esc(where)} [{_esc(msg.code)}] {_esc(msg.name)}")
    for what in lint.not_checked:
        out.print(f"  [yellow]not checked:[/] {_esc(what)}")


# --- `--run` (issue 35 B): what ran, each failure at its sample ---

FAILURES_SHOWN = 5  # failed samples listed without -v
NOT_RUN_SHOWN = 8


def render_run(report: RunReport, out: Screen, verbose: bool) -> None:
    """What `--run` ran (the test files, or the OpInfo samples per op and check), each
    failure at its sample with the first element that differs, then what did not run."""
    where = {
        "tests": "the selected test files, in the build's venv",
        "opinfo": "the changed ops' OpInfo samples, against the installed torch",
        "practice": "the OpInfo samples on your practice kernel (built out of tree), and "
        "the other changed ops against the installed torch",
        "none": "nothing could run",
    }.get(report.mode, report.mode)
    out.print(f"\n[bold]Run[/]: {_esc(where)}")
    if report.python:
        torch = f"torch {report.torch_version}, " if report.torch_version else ""
        out.print(f"  [dim]{_esc(torch)}{_esc(report.venv or report.python)}[/]")
    for test in report.tests:
        mark = "[green]passed[/]" if test.ok else "[red]failed[/]"
        out.print(
            f"  {mark} {_esc(test.test)}: {test.passed} passed, {test.failed} failed, "
            f"{test.skipped} skipped ({test.seconds:.1f} s)"
        )
        if verbose:
            out.print(f"    [dim]$ {_esc(' '.join(test.command))}[/]")
        if not test.ok:
            first = test.first_failure or f"exit {test.returncode}"
            out.print(f"    first failure: {_esc(first)}")
    _sample_groups(out, report, verbose)
    failures = report.failures
    shown = failures if verbose else failures[:FAILURES_SHOWN]
    for sample in shown:
        out.print(f"  [red]failed[/] {_esc(sample.label)}")
        out.print(f"    {_esc(sample.detail)}")
        if sample.mismatch is not None:
            m = sample.mismatch
            at = ", ".join(str(i) for i in m.index)
            given = f"input {m.input!r} -> " if m.input is not None else ""
            out.print(
                f"    first at [{_esc(at)}]: {_esc(given)}expected {_esc(repr(m.expected))}, "
                f"got {_esc(repr(m.got))}"
            )
    if len(failures) > len(shown):
        out.print(f"  [dim]... and {len(failures) - len(shown)} more failed sample(s) (-v)[/]")
    notes = report.not_run if verbose else report.not_run[:NOT_RUN_SHOWN]
    if notes:
        out.print("\n[bold]Not run[/]")
    for item in notes:
        op = "" if item.op == "*" else f"{item.op}: "
        out.print(f"  [yellow]{_esc(op + item.what)}[/]: {_esc(item.why)}")
    if len(report.not_run) > len(notes):
        out.print(f"  [dim]... and {len(report.not_run) - len(notes)} more (-v)[/]")
    counts = report.counts()
    verdict = "[green]ok[/]" if report.ok else "[red]failed[/]"
    if report.ok and not any(counts.values()):
        # Nothing ran: not a pass (the "Not run" list above says why).
        verdict = "[yellow]nothing run[/]"
    out.print(
        f"\n{verdict}: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped in {report.seconds:.1f} s"
    )


def _sample_groups(out: Screen, report: RunReport, verbose: bool) -> None:
    """A line per op and check: how many samples passed, over which dtypes."""
    groups: dict[tuple[str, str], list[SampleResult]] = {}
    for sample in report.samples:
        groups.setdefault((sample.op, sample.check), []).append(sample)
    for (op, check), samples in groups.items():
        passed = sum(s.status == "passed" for s in samples)
        failed = sum(s.status == "failed" for s in samples)
        skipped = len(samples) - passed - failed
        dtypes = sorted({s.dtype for s in samples if s.dtype})
        mark = "[red]failed[/]" if failed else "[green]passed[/]"
        kernel = next((s.kernel for s in samples if s.kernel), "")
        on = f" on {kernel}" if kernel else ""
        line = f"  {mark} {_esc(op + on)}: {_esc(check)}, {passed}/{len(samples)} samples"
        if skipped:
            line += f" ({skipped} skipped)"
        if dtypes and (verbose or len(dtypes) <= 4):
            line += f" [dim]({_esc(', '.join(dtypes))})[/]"
        elif dtypes:
            line += f" [dim]({len(dtypes)} dtypes)[/]"
        out.print(line)
