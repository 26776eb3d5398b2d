"""`onboard pr`'s output: the change, lint, the tests that cover it, the label, binary
compatibility warnings, what is still unwritten, and the draft (or the opened PR)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape
from onboard.views import screen

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.pr import PrResult


def render(result: PrResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    from rich.rule import Rule

    c = result.change
    out.print(
        f"[bold]{escape(c.branch)}[/]: {len(c.commits)} commit(s), {len(c.files)} file(s) "
        f"since {escape(c.base)} ({c.merge_base[:12]})"
    )
    if verbose:
        for k in c.commits:
            out.print(f"  {k.sha[:12]} {escape(k.subject)}")
        for f in c.files:
            out.print(f"  {f.status} {escape(f.path)}")
    out.print(f"Title: {escape(result.title)}")
    lint_style = "red" if result.lint.errors else ("green" if result.lint.ran else "yellow")
    out.print(f"Lint: [{lint_style}]{escape(result.lint.summary())}[/]")
    for m in result.lint.messages[: (None if verbose else 10)]:
        where = f"{m.path}:{m.line}" if m.line else m.path
        out.print(f"  {m.severity} {escape(where)} [{escape(m.code)}] {escape(m.description)}")
    if result.tests:
        out.print("Tests covering the change (not run by onboard):")
        for t in result.tests:
            missing = "" if t.present else " [dim](not in this checkout)[/]"
            out.print(f"  {escape(t.command)}{missing}")
    else:
        out.print(
            "[yellow]No test file maps to the changed paths[/]: "
            "say in the test plan how you tested it."
        )
    out.print(
        f"Label: [bold]{escape(result.label.label)}[/] ({escape(result.label.reason)}); "
        f"without label rights comment: {escape(result.label.bot_comment)}"
    )
    for h in result.hazards:
        out.print(
            f"[bold yellow]Binary compatibility warning[/] ({h.kind}) "
            f"{escape(h.path)}: {escape(h.message)}"
        )
        for line in h.lines:
            out.print(f"    {escape(line)}")
    if result.unwritten:
        out.print(
            f"[bold red]Not written yet[/]: {len(result.unwritten)} part(s) are still as "
            "`onboard new-op` wrote them, and the PR would carry them:"
        )
        for u in result.unwritten:
            out.print(f"    {escape(u.location)}: {escape(u.what)}")
    if c.uncommitted:
        out.print(
            f"[yellow]{len(c.uncommitted)} uncommitted change(s) are NOT in the pull "
            "request[/] (commit them and run `onboard pr` again):"
        )
        for line in c.uncommitted[:20]:
            out.print(f"    {escape(line)}")
    if result.reviewers:
        out.print("Reviewers to consider (suggested only; onboard requests no one):")
        for r in result.reviewers:
            out.print(f"  {escape(r.login)}: {escape(r.why())}")
    for note in result.notes:
        out.print(f"[yellow]Note:[/] {escape(note)}")
    if result.draft_backup:
        out.print(f"Your edited draft was kept as {result.draft_backup}.")
    if result.published is None:
        title = f"{result.draft_path} (dry run: nothing sent)"
        rule = min(out.width, max(100, len(title) + 8))  # a log has no width to fill
        out.print(Rule(title), width=rule)
        out.print(escape(result.draft_text), markup=True, highlight=False)
        out.print(Rule(), width=rule)
        issue = f" --issue {result.issue}" if result.issue else ""
        if result.open_blocked:
            out.print(f"Next: {escape(result.open_blocked)}")
        else:
            out.print(
                f"Next: `onboard pr --open{issue}` pushes the branch to your fork "
                "and opens this as a draft PR."
            )
    else:
        p = result.published
        verb = "Opened draft pull request" if p.action == "created" else "Updated pull request"
        out.print(f"Draft: {result.draft_path}")
        out.print(f"Pushed {escape(c.branch)} to {escape(p.remote)} ({escape(p.pushed)}).")
        out.print(f"[bold green]{verb} #{p.number}[/]: {escape(p.url)}")
        out.print(f"Add the label with a comment: {escape(result.label.bot_comment)}")
        for r in result.reminders:
            out.print(f"  - {escape(r)}")
