"""`onboard new-op`'s output: the files a scaffold or practice branch wrote (or, with
--dry-run, would write), the next steps; with --reveal, how PyTorch writes the op."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape, markdown
from onboard.views import Screen, screen
from onboard.workflows.newop.practice import PracticeResult

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.newop import NewOpResult
    from onboard.workflows.newop.reveal import RevealResult


def render(result: NewOpResult | PracticeResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    if isinstance(result, PracticeResult):
        _practice(result, out, verbose)
    else:
        _scaffold(result, out, verbose)


def _dry_run(out: Screen, diff: str, files: int) -> None:
    """The unified diff of a dry run, and that nothing was written."""
    out.print(diff, markup=False, highlight=False, end="")
    out.print(f"[dim]Dry run: nothing was written ({files} files).[/]")


def _scaffold(result: NewOpResult, out: Screen, verbose: bool) -> None:
    if result.dry_run:
        _dry_run(out, result.diff, len(result.plan.changes))
    fam = result.plan.family
    like = f", like {fam.like}" if fam.like else ""
    at = f" at {result.commit[:12]}" if result.commit else ""
    verb = "would write" if result.dry_run else "wrote"
    out.print(
        f"[bold]aten::{result.name}[/] ({fam.kind}{like}): {verb} {len(result.plan.changes)} "
        f"files on branch {escape(result.branch)}{at} in {escape(str(result.checkout))}"
    )
    for c in result.plan.changes:
        action = "new " if c.created else ""
        out.print(f"  {escape(c.path)}:{c.line}  {action}{c.role} [dim]({c.where})[/]")
    if result.plan.unplaced:
        out.print("[bold yellow]Not placed[/] (this checkout lacks them):")
        for u in result.plan.unplaced:
            out.print(f"  {escape(u.path)}: {u.role}: {escape(u.reason)}")
    for note in result.plan.notes:
        out.print(f"[dim]note:[/] {escape(note)}")
    if verbose:
        out.print(
            f"family: meta builder {fam.meta_builder}, integers: {fam.int_path}, floating "
            f"dtypes: {', '.join(fam.float_dtypes)}, stub {fam.stub_type} in {fam.header}"
        )
    for step in result.next_steps:
        out.print(f"next: {escape(step)}")


def _practice(result: PracticeResult, out: Screen, verbose: bool) -> None:
    if result.dry_run:
        _dry_run(out, result.diff, len(result.plan.changes))
    verb = "would make" if result.dry_run else "made"
    at = f" at {result.commit[:12]}" if result.commit else ""
    out.print(
        f"[bold]Practice on aten::{result.name}[/]: {verb} branch {escape(result.branch)}{at} "
        f"in {escape(str(result.checkout))}; the judge is torch.{result.name} "
        f"(torch {escape(result.torch_version)})"
    )
    for c in result.plan.changes:
        action = c.action or ("new" if c.created else "edit")
        out.print(f"  {escape(c.path)}:{c.line}  {action} {c.role} [dim]({c.where})[/]")
    for note in result.plan.notes:
        out.print(f"[dim]note:[/] {escape(note)}")
    if result.guide and (verbose or not result.dry_run):
        markdown(out, result.guide.split("\n", 1)[1])
    for step in result.next_steps:
        out.print(f"next: {escape(step)}")


def reveal(result: RevealResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    from rich.syntax import Syntax

    at = f" at {result.commit[:12]}" if result.commit else ""
    out.print(f"[bold]How PyTorch writes aten::{result.name}[/]{at}")
    for s in result.snippets:
        out.print(f"\n[bold]{escape(s.what)}[/]  {escape(s.path)}:{s.line}")
        lexer = "yaml" if s.path.endswith(".yaml") else "cpp"
        out.print(Syntax(s.text, lexer, line_numbers=True, start_line=s.line))
    for what, url in result.links:
        out.print(f"{escape(what)}: {escape(url)}")
    for note in result.notes:
        out.print(f"[dim]note:[/] {escape(note)}")
