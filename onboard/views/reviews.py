"""`onboard reviews`'s output (and `reviews sync`'s): the files and who may approve
them, the landed pull requests, their approvers and the review comments by reviewer.
The pieces every review answer shows (a pull request's line, a thread) are
`onboard blame`'s too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape, printable
from onboard.units import human_bytes
from onboard.views import Screen, screen
from onboard.workflows.reviews.codeowners import NOTIFICATIONS_ONLY
from onboard.workflows.reviews.comments import Thread

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.reviews.results import (
        Checkout,
        PrView,
        ReviewsResult,
        SyncResult,
    )

_BODY_CHARS = 600


def esc(text: str) -> str:
    """Text from GitHub or git (a comment, a subject): escaped and printable."""
    return escape(printable(text))


def checkout_line(c: Checkout, history_since: str | None) -> str:
    at = f" at {c.commit[:12]}" if c.commit else ""
    since = f", history since {history_since}" if history_since else ""
    return f"{c.kind} checkout {c.path}{at}{since}"


def pr_line(p: PrView) -> str:
    t = p.change.trailers
    number = f"#{t.pr}" if t.pr else p.change.sha[:12]
    kind = "" if t.kind == "change" else f" [{t.kind}]"
    title = p.change.subject if t.kind == "revert" else p.change.title
    return f"{number}{kind}  {p.change.date[:10]}  {title}  ({p.change.author})"


def approved(p: PrView) -> str:
    t = p.change.trailers
    parts = []
    if t.approvers:
        parts.append("approved by " + ", ".join(t.approvers))
    elif t.kind == "change":
        parts.append("no `Approved by:` line")
    if t.kind == "revert" and t.reverted_by:
        why = f" ({t.revert_reason})" if t.revert_reason else ""
        parts.append(f"reverted on behalf of {t.reverted_by}{why}")
    if t.ghstack_deps:
        parts.append("ghstack, after " + ", ".join(f"#{n}" for n in t.ghstack_deps))
    states = p.states()
    asked = states.get("CHANGES_REQUESTED")
    if asked:
        parts.append("changes were asked by " + ", ".join(asked))
    return "; ".join(parts)


def thread(out: Screen, t: Thread, indent: str, verbose: bool) -> None:
    root = t.root
    where = t.path_now or root.path
    renamed = f" (then {root.path})" if root.path != where else ""
    if not t.checked:
        status = ""
    elif t.still_at is not None:
        status = f"  [green]still there: {esc(where)}:{t.still_at}[/]"
    else:
        status = "  [yellow]gone from the installed commit[/]"
    pr = out.link(f"[bold]#{root.pr}[/] {out.path(where)}{esc(renamed)}", root.url)
    out.print(f"{indent}{pr}{status}")
    hunk = root.anchor()
    for code in (root.context(2) if verbose else []) + hunk[-3:]:
        out.print(f"{indent}  [dim]| {esc(code)}[/]")
    if t.root_deleted:
        out.print(f"{indent}  [dim](the comment these reply to was deleted)[/]")
    for i, c in enumerate(t.comments):
        body = " ".join(c.body.split())
        if len(body) > _BODY_CHARS and not verbose:
            body = body[: _BODY_CHARS - 3] + "..."
        arrow = "" if i == 0 and not t.root_deleted else "-> "
        out.print(f"{indent}  {arrow}[cyan]{esc(c.user)}[/]: {esc(body)}")
    out.url(root.url, indent + "  ")


def footer(out: Screen, notes: list[str], api_summary: str | None) -> None:
    if api_summary:
        out.print(f"\n[dim]GitHub: {esc(api_summary)}[/]")
    for note in notes:
        out.print(f"[yellow]Note:[/] {esc(note)}")


def render(r: ReviewsResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    what = " ".join(r.query) if r.query else "the files this branch changes"
    out.print(
        f"[bold]Reviews of {esc(what)}[/]  ({esc(checkout_line(r.checkout, r.history.since))})"
    )
    if r.history.fetched_now:
        out.print(f"[dim]fetched history: {human_bytes(r.history.bytes_fetched)}[/]")
    out.print("\n[bold cyan]Files[/]")
    for f in r.files:
        lines = ", ".join(f"{a}-{b}" for a, b in f.target.ranges)
        only = f" (lines {lines}: the op's own entry)" if lines else ""
        out.print(f"  [bold]{esc(f.target.path)}[/]{esc(only)}  [dim]{esc(f.target.why)}[/]")
        specific = [rule for rule in f.rules if not rule.catch_all]
        for rule in specific:
            people = ", ".join(rule.approved_by)
            out.print(f"    may approve ({esc(rule.name)}, merge_rules): {esc(people)}")
        catch = [rule.name for rule in f.rules if rule.catch_all]
        if catch:
            out.print(f"    [dim]and, for every path: {esc(', '.join(catch))}[/]")
        if f.owners is not None and f.owners.owners:
            out.print(
                f"    [dim]notified (CODEOWNERS {esc(f.owners.pattern)}): "
                f"{esc(' '.join(f.owners.owners))}[/]"
            )
    if any(f.owners and f.owners.owners for f in r.files):
        out.print(f"  [dim]{esc(NOTIFICATIONS_ONLY)}[/]")
    limit = f"at most {r.limit}" + (f", since {r.since}" if r.since else "")
    out.print(f"\n[bold cyan]Landed pull requests, newest first ({esc(limit)})[/]")
    if not r.prs:
        out.print("  none in this history")
    for p in r.prs:
        here = f"  [dim]{p.comments_here} comment(s) here[/]" if p.comments_here else ""
        out.print(f"  {out.link(esc(pr_line(p)), p.url or p.commit_url)}{here}")
        detail = approved(p)
        if detail:
            out.print(f"      [dim]{esc(detail)}[/]")
        out.url(p.url or (p.commit_url if verbose else None), "      ")
    if r.approvals:
        out.print("\n[bold cyan]Who approved these (from the commits' Approved by: lines)[/]")
        for a in r.approvals[: None if verbose else 10]:
            last = f"#{a.last_pr}, " if a.last_pr else ""
            out.print(f"  {esc(a.login)}  {a.count}x  [dim](last {last}{a.last_date})[/]")
    _threads(r, out, verbose)
    summary = r.api.summary() if r.api and (r.api.requests or r.api.from_cache) else None
    footer(out, r.notes, summary)


def _threads(r: ReviewsResult, out: Screen, verbose: bool) -> None:
    title = "Review comments on these files, by reviewer"
    if r.reviewer:
        title += f" ({r.reviewer} only)"
    out.print(f"\n[bold cyan]{esc(title)}[/]")
    if not r.threads:
        out.print("  none (or not fetched: see the notes)")
        return
    by_user: dict[str, list[Thread]] = {}
    for t in r.threads:
        by_user.setdefault(t.root.user, []).append(t)
    shown = 0
    for user, items in sorted(by_user.items(), key=lambda kv: -len(kv[1])):
        out.print(f"  [bold]{esc(user)}[/] ({len(items)} thread(s))")
        for t in items:
            if not verbose and shown >= 12:
                break
            thread(out, t, "    ", verbose)
            shown += 1
    hidden = len(r.threads) - shown
    if hidden > 0:
        out.print(f"  [dim]... {hidden} more thread(s): -v shows all, --json lists them[/]")


def sync(r: SyncResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    what = " ".join(r.query) if r.query else "the files this branch changes"
    out.print(f"[bold]Synced reviews of {esc(what)}[/]  ({len(r.files)} file(s))")
    if r.history.fetched_now:
        out.print(
            f"fetched history since {r.history.since}: {human_bytes(r.history.bytes_fetched)}"
        )
    counts: dict[str, int] = {}
    for p in r.prs:
        key = "gone" if p.gone else p.source
        counts[key] = counts.get(key, 0) + 1
    words = {
        "api": "fetched",
        "cache": "already cached",
        "revalidated": "unchanged (304)",
        "gone": "not on GitHub (404)",
        "missing": "not fetched",
    }
    parts = [f"{n} {words.get(k, k)}" for k, n in sorted(counts.items())]
    out.print(f"{len(r.prs)} pull request(s): {', '.join(parts) or 'none'}")
    for p in r.prs:
        if verbose or p.problem or p.source == "missing":
            problem = f"  [yellow]{esc(p.problem)}[/]" if p.problem else ""
            out.print(f"  #{p.pr}: {p.comments} comment(s), {p.reviews} review(s){problem}")
    footer(out, r.notes, r.api.summary())
    if r.exit_code:
        out.print(
            "[yellow]Not everything was fetched;[/] what was is kept: run the same command "
            "again to go on."
        )
