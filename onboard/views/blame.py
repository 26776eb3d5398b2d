"""`onboard blame`'s output: each line with the commit that last changed it, then each
commit's pull request, its approvers and reviews, and the threads on those lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.units import human_bytes
from onboard.views import screen
from onboard.views.reviews import approved, checkout_line, esc, footer, pr_line, thread

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.reviews.results import BlameResult


_STATE_WORDS = {
    "APPROVED": "approved",
    "CHANGES_REQUESTED": "asked for changes",
    "COMMENTED": "commented",
    "DISMISSED": "dismissed",
}


def render(r: BlameResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    span = f"{r.start}" if r.start == r.end else f"{r.start}-{r.end}"
    out.print(f"[bold]{esc(r.path)}:{span}[/]  ({esc(checkout_line(r.checkout, r.history.since))})")
    if r.history.fetched_now:
        out.print(f"[dim]fetched history: {human_bytes(r.history.bytes_fetched)}[/]")
    for ln in r.lines:
        p = r.prs.get(ln.sha)
        if ln.sha == "0" * 40:
            who = "not committed yet"
        elif p is None:
            who = ln.sha[:12]
        else:
            number = f"#{p.change.trailers.pr} " if p.change.trailers.pr else ""
            who = f"{ln.sha[:12]} {number}{p.change.date[:10]}"
        old = "  older than this history" if ln.boundary else ""
        out.print(f"  {ln.line:>6}  {esc(ln.text)}")
        out.print(f"          [dim]<- {esc(who)}{old}[/]")
    out.print("\n[bold cyan]Commits[/]")
    for sha, p in r.prs.items():
        out.print(f"  [bold]{sha[:12]}[/]  {out.link(esc(pr_line(p)), p.url)}")
        detail = approved(p)
        if detail:
            out.print(f"      [dim]{esc(detail)}[/]")
        states = p.states()
        for state, users in states.items():
            if state != "CHANGES_REQUESTED":
                word = _STATE_WORDS.get(state, state)
                out.print(f"      [dim]review: {esc(', '.join(users))} {word}[/]")
        out.url(p.url, "      ")
        for orig in r.originals.get(sha, []):
            out.print(f"      relands {out.link(esc(pr_line(orig)), orig.url)}")
            detail = approved(orig)
            if detail:
                out.print(f"        [dim]{esc(detail)}[/]")
            out.url(orig.url, "        ")
            if orig.problem:
                out.print(f"        [yellow]review not shown: {esc(orig.problem)}[/]")
        if p.problem:
            out.print(f"      [yellow]review not shown: {esc(p.problem)}[/]")
        for t in r.threads.get(sha, []):
            thread(out, t, "      ", verbose)
    if r.skipped:
        out.print("\n[bold cyan]Stepped past (--walk)[/]")
        for s in r.skipped:
            pr = f" #{s.pr}" if s.pr else ""
            out.print(f"  {s.sha[:12]} [{esc(s.kind)}]{esc(pr)} {esc(s.subject)}")
    if r.ignored_listed:
        out.print(
            f"[dim]{r.ignored_listed} mass-reformat commit(s) of .git-blame-ignore-revs skipped.[/]"
        )
    summary = r.api.summary() if r.api and (r.api.requests or r.api.from_cache) else None
    footer(out, r.notes, summary)
