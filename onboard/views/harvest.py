"""`onboard harvest`'s output: the ranked table (or a Markdown list to share), and
`onboard harvest show ID`'s one comment with its code, blame and links."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape, printable
from onboard.views import Screen, screen

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.harvest.rank import Item
    from onboard.workflows.harvest.result import HarvestResult, ShowResult


# Item.language -> the highlighter's name for it.
_PYGMENTS = {"python": "python", "yaml": "yaml", "javascript": "javascript", "jinja": "jinja"}


def render(result: HarvestResult, console: Console, verbose: bool) -> None:
    """The shown items as a table (plain rows, one item per line, in a pipe or a log),
    the totals in one paragraph, then the notes."""
    out = screen(console, verbose)
    s = result.summary()
    if result.items:
        _items(result, out, verbose)
    else:
        out.print("No tagged comment matches these filters.")
    cached = " (result cached for this commit)" if s["cache"] == "tree" else ""
    out.print(
        f"{s['harvested']} tagged comments ({s['python_only']} in Python) found with "
        f"{result.scan.searcher}{cached}; skipped {s['skipped_vendored']} in vendored code "
        f"({s['skipped_vendored_files']} files) and {s['skipped_generated']} in generated "
        f"files; {s['non_comment_hits']} hits were not comments. Showing {len(result.items)} "
        f"of {s['matched']}; `onboard harvest show ID` for one."
    )
    if result.issues is not None:
        if result.issues:
            out.table(
                ("#", "title", "labels"),
                [
                    (
                        out.link(str(issue["number"]), issue.get("url")),
                        _esc(issue["title"]),
                        _esc(", ".join(issue["labels"])),
                    )
                    for issue in result.issues
                ],
                title="Newcomer-labelled issues",
                styles=("cyan",),
                justify=("right",),
            )
        elif not any(n.startswith("GitHub") for n in result.notes):
            out.print("No open newcomer-labelled issues.")
    for note in result.notes:
        out.print(f"[dim]{note}[/]", markup=True)


def _items(result: HarvestResult, out: Screen, verbose: bool) -> None:
    rows, plain = [], []
    for item in result.items:
        where = f"{item.path}:{item.line}"
        age = item.blame.get("age_days") if item.blame else None
        text = item.text if verbose else _shorten(item.text, 160)
        reasons = item.reasons if verbose else [r for r in item.reasons if r.points]
        why = "; ".join(f"{r.points:+d} {r.why}" for r in reasons)
        cell = out.location(item.path, item.line, item.url)
        if age is not None:
            cell += f"  [dim]({age} days old)[/]"
        cell += "\n" + _esc(text)
        if why:
            cell += f"\n[dim]{_esc(why)}[/]"
        if item.same_issue:
            cell += f"\n[dim]{_esc(_same_issue(item))}[/]"
        rows.append((item.id, str(item.score), cell))
        # A pipe's row: the task's words last, whatever they hold; the reasons with -v.
        # The URL is a column of its own there (a terminal links the path to it).
        url = item.url or "-"
        plain.append([item.id, str(item.score), where, url, *([why] if verbose else []), text])
    columns = ("id", "score", "where", "url", *(["why"] if verbose else []), "task")
    if out.is_terminal:
        columns = ("id", "score", "task")
    out.table(
        columns,
        rows,
        styles=("cyan",),
        justify=("left", "right"),
        show_lines=True,
        plain_rows=plain,
    )


def _esc(text: str) -> str:
    return escape(printable(text))


def render_markdown(result: HarvestResult, console: Console, verbose: bool) -> None:
    """`--markdown`: the list as Markdown text, as it is (no rich markup)."""
    console.file.write(markdown(result))


def markdown(result: HarvestResult) -> str:
    t = result.scan.target
    s = result.summary()
    out = ["# First tasks from TODO/FIXME comments", ""]
    where = f"`{t.root}`"
    if t.ws is not None:
        where += f" (torch {t.ws.torch_version}, {t.kind} tree"
        where += f" at {t.ws.commit[:12]})" if t.ws.commit else ")"
    out.append(
        f"{s['harvested']} tagged comments in {where}, found with {result.scan.searcher}; "
        f"skipped {s['skipped_vendored']} in vendored and {s['skipped_generated']} in "
        f"generated files. The {len(result.items)} best of {s['matched']} matching:"
    )
    out.append("")
    for n, item in enumerate(result.items, 1):
        loc = f"`{item.path}:{item.line}`"
        if item.url:
            loc = f"[{loc}]({item.url})"
        out.append(f"{n}. **{_md(item.text[:200])}**  ")
        out.append(f"   {loc} · `{item.id}` · score {item.score}")
        for r in item.reasons:
            out.append(f"   - {r.points:+d} {_md(r.why)}")
        if item.same_issue:
            out.append(f"   - {_md(_same_issue(item))}")
        if item.blame and item.blame.get("age_days") is not None:
            out.append(
                f"   - last touched {item.blame['age_days']} days ago by {item.blame['author']}"
            )
    if result.issues:
        out += ["", "## Newcomer-labelled issues", ""]
        for issue in result.issues:
            labels = ", ".join(issue["labels"])
            out.append(f"- [#{issue['number']} {_md(issue['title'])}]({issue['url']}) ({labels})")
    if result.notes:
        out += [""] + [f"> {n}" for n in result.notes]
    return "\n".join(out) + "\n"


def _same_issue(item: Item) -> str:
    """The comments that are one task with ``item`` (they name its issue), in one line."""
    where = ", ".join(f"{i.path}:{i.line}" for i in item.same_issue[:3])
    more = f" and {len(item.same_issue) - 3} more" if len(item.same_issue) > 3 else ""
    return f"the same issue, also at: {where}{more}"


def render_item(result: ShowResult, console: Console, verbose: bool) -> None:
    """One comment: its score and reasons, the code around it, blame, links, notes."""
    out = screen(console, verbose)
    from rich.syntax import Syntax

    item = result.item
    out.print(f"[bold]{item.id}[/]  {item.path}:{item.line}  score {item.score}")
    for r in item.reasons:
        out.print(f"  {r.points:+d} {r.why}", markup=False)
    lexer_name = _PYGMENTS.get(item.language, "cpp")
    code = "\n".join(result.context)
    out.print(
        Syntax(
            code,
            lexer_name,
            line_numbers=True,
            start_line=result.context_start,
            highlight_lines=set(range(item.line, item.end_line + 1)),
            word_wrap=True,
            theme="ansi_dark",
        )
    )
    for b in result.blame:
        if b.get("age_days") is not None:
            out.print(
                f"blame: line {b['line']}: {b['commit'][:12]} {b['author']}, "
                f"{b['age_days']} days ago: {b['summary']}",
                markup=False,
            )
    if result.links.get("source"):
        out.print(f"source: {result.links['source']}", markup=False)
    for issue in result.links.get("issues", []):
        state = f" ({issue['state']}; {', '.join(issue['labels'])})" if issue.get("state") else ""
        out.print(f"issue: {issue['url']}{state}", markup=False)
    for note in result.notes:
        out.print(f"[dim]{note}[/]")


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("`", "'")
