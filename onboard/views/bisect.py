"""`onboard bisect`'s output: the first new release and commit, with its pull request,
what was skipped or flaky, and how to replay the bisect."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape
from onboard.views import Screen, screen

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.bisect.model import BisectResult, CommitInfo, Step


def render(result: BisectResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)

    if result.wheels is not None:
        w = result.wheels
        if w.first_new:
            between = w.untestable_between
            out.print(
                f"[bold]Releases:[/] {w.package} {w.last_old} is the last {_old_word(result)}, "
                f"{w.first_new} the first {_new_word(result)}"
                + (f" (untestable in between: {', '.join(between)})" if between else "")
            )
        if verbose:
            _steps_table(out, w.steps, "release")
    c = result.commits
    if c is not None:
        if verbose:
            _steps_table(out, c.steps, "commit")
        if c.culprit is not None:
            _print_commit(out, c.culprit, f"first {c.term_new} commit")
        elif c.possible:
            out.print(
                f"[bold yellow]Could not pin one commit:[/] only skipped commits are left; the "
                f"first {c.term_new} commit is one of:"
            )
            for info in c.possible:
                pr = f"  #{info.pr}" if info.pr else ""
                out.print(f"  {info.sha[:12]}  {escape(info.subject)}{pr}")
        for s in c.skipped:
            out.print(f"[dim]skipped[/] {s.rev[:12]}: {escape(s.reason)}")
        for s in c.flaky:
            why = s.verdict.reason if s.verdict else ""
            out.print(f"[yellow]flaky[/] {s.rev[:12]}: {escape(why)}")
        each = f", {result.repeat} runs each" if result.repeat > 1 else ""
        facts = [
            ("repro runs", f"{c.executions} (about {c.expected_steps} steps + 2 checks{each})"),
            ("builds", str(c.builds)),
        ]
        if c.log:
            facts.append(("bisect log", escape(f"{c.log}  (replay: {c.replay})")))
        facts.append(("checkout", escape(f"back on {c.restored_to}")))
        out.table(("", ""), facts, header=False)
    for note in result.notes + (result.commits.notes if result.commits else []):
        out.print(f"[yellow]note:[/] {escape(note)}")


def _old_word(result: BisectResult) -> str:
    return result.commits.term_old if result.commits else "old (repro state at --good)"


def _new_word(result: BisectResult) -> str:
    return result.commits.term_new if result.commits else "new"


def _print_commit(out: Screen, info: CommitInfo, title: str) -> None:
    out.print(f"[bold green]{title}:[/] {info.sha}")
    out.print(f"  {escape(info.subject)}")
    if info.pr_url:
        out.print(f"  {out.link(f'PR #{info.pr}', info.pr_url)}: {escape(info.pr_url)}")
    elif info.pr:  # no GitHub remote: the number alone, linked to no one's repository
        out.print(f"  PR #{info.pr} (this repository has no GitHub remote to link it to)")
    out.print(f"  author: {escape(info.author)} <{escape(info.author_email)}>, {info.date}")
    if info.url:
        out.print(f"  commit: {info.url}")
    shown = list(info.files[:15])
    out.print("  files: " + ("; ".join(escape(f.replace("\t", " ")) for f in shown) or "(none)"))
    if len(info.files) > 15:
        out.print(f"  ... and {len(info.files) - 15} more")


def _steps_table(out: Screen, steps: list[Step], what: str) -> None:
    rows = []
    for i, s in enumerate(steps, 1):
        runs = s.verdict.summary() if s.verdict else "-"
        rows.append(
            (
                str(i),
                s.rev[:12] if what == "commit" else s.rev,
                s.phase,
                s.mark,
                runs,
                f"{s.seconds:.1f}",
                escape((s.reason or s.label)[:80]),
            )
        )
    out.table(("#", what, "phase", "mark", "runs", "seconds", "note"), rows, title=f"{what} steps")
