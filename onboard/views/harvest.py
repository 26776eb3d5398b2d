"""`onboard harvest`'s output: the ranked table (or a Markdown list to share), and
`onboard harvest show ID`'s one comment with its code, blame and links."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.harvest.rank import Item
    from onboard.workflows.harvest.result import HarvestResult, ShowResult


# Item.language -> the highlighter's name for it.
_PYGMENTS = {"python": "python", "yaml": "yaml", "javascript": "javascript", "jinja": "jinja"}


def render(result: HarvestResult, console: Console, verbose: bool) -> None:
    """The shown items as a table, the totals in one paragraph, then the notes."""
    from rich.table import Table
    from rich.text import Text

    s = result.summary()
    table = Table(show_lines=True, pad_edge=False, expand=False)
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("task", overflow="fold")
    for item in result.items:
        cell = Text()
        cell.append(f"{item.path}:{item.line}", style="bold")
        if item.blame and item.blame.get("age_days") is not None:
            cell.append(f"  ({item.blame['age_days']} days old)", style="dim")
        cell.append("\n" + (item.text if verbose else _shorten(item.text, 160)))
        reasons = item.reasons if verbose else [r for r in item.reasons if r.points]
        why = "; ".join(f"{r.points:+d} {r.why}" for r in reasons)
        if why:
            cell.append("\n" + why, style="dim")
        if item.same_issue:
            cell.append("\n" + _same_issue(item), style="dim")
        table.add_row(item.id, str(item.score), cell)
    if result.items:
        console.print(table)
    else:
        console.print("No tagged comment matches these filters.")
    cached = " (result cached for this commit)" if s["cache"] == "tree" else ""
    console.print(
        f"{s['harvested']} tagged comments ({s['python_only']} in Python) found with "
        f"{result.scan.searcher}{cached}; skipped {s['skipped_vendored']} in vendored code "
        f"({s['skipped_vendored_files']} files) and {s['skipped_generated']} in generated "
        f"files; {s['non_comment_hits']} hits were not comments. Showing {len(result.items)} "
        f"of {s['matched']}; `onboard harvest show ID` for one."
    )
    if result.issues is not None:
        if result.issues:
            issues = Table(title="Newcomer-labelled issues", pad_edge=False)
            issues.add_column("#", justify="right", style="cyan")
            issues.add_column("title", overflow="fold")
            issues.add_column("labels", overflow="fold")
            for issue in result.issues:
                issues.add_row(str(issue["number"]), issue["title"], ", ".join(issue["labels"]))
            console.print(issues)
        elif not any(n.startswith("GitHub") for n in result.notes):
            console.print("No open newcomer-labelled issues.")
    for note in result.notes:
        console.print(f"[dim]{note}[/]", markup=True)


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
    from rich.syntax import Syntax

    item = result.item
    console.print(f"[bold]{item.id}[/]  {item.path}:{item.line}  score {item.score}")
    for r in item.reasons:
        console.print(f"  {r.points:+d} {r.why}", markup=False)
    lexer_name = _PYGMENTS.get(item.language, "cpp")
    code = "\n".join(result.context)
    console.print(
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
            console.print(
                f"blame: line {b['line']}: {b['commit'][:12]} {b['author']}, "
                f"{b['age_days']} days ago: {b['summary']}",
                markup=False,
            )
    if result.links.get("source"):
        console.print(f"source: {result.links['source']}", markup=False)
    for issue in result.links.get("issues", []):
        state = f" ({issue['state']}; {', '.join(issue['labels'])})" if issue.get("state") else ""
        console.print(f"issue: {issue['url']}{state}", markup=False)
    for note in result.notes:
        console.print(f"[dim]{note}[/]")


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("`", "'")
