"""`onboard harvest`: the tree's TODO/FIXME/XXX/HACK comments as ranked first tasks.

The flow: find the tree (``target``) -> every tagged comment, ranked
(``collect``: grep, lex, skip vendored and generated code, parse each
comment's form, score it; cached per tree state) -> filter -> enrich what is
shown (blame, linked issues; ``enrich``) -> a result with a rich table, JSON
and Markdown.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git, headstart
from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.workflows.harvest.tags import TAGS
from onboard.workflows.harvest.target import Target, resolve_target

# The rest of harvest is imported where it is used: a warm run starts `git status`
# first and imports it meanwhile.
if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.harvest.collect import Scan
    from onboard.workflows.harvest.rank import Item

DEFAULT_LIMIT = 20
DEFAULT_API_URL = "https://api.github.com"
DEFAULT_GITHUB_REPO = "pytorch/pytorch"
CONTEXT_LINES = 6

__all__ = ["HarvestResult", "Item", "Scan", "ShowResult", "Target", "harvest", "show"]


def __getattr__(name: str) -> Any:
    if name == "Item":
        from onboard.workflows.harvest.rank import Item

        return Item
    if name == "Scan":
        from onboard.workflows.harvest.collect import Scan

        return Scan
    raise AttributeError(name)


# --------------------------------------------------------------------------
# harvest


@dataclass
class HarvestResult:
    """What `onboard harvest` found (JSON keys: see ``to_json``)."""

    scan: Scan
    items: list[Item]  # the shown ones, ranked
    matched: int  # items passing the filters (before --limit)
    filters: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    issues: list[dict[str, Any]] | None = None  # --issues
    output: str = "table"  # table / markdown

    @property
    def total(self) -> int:
        return len(self.scan.items)

    @property
    def exit_code(self) -> int:
        return 0

    def summary(self) -> dict[str, Any]:
        s = self.scan
        tags, kinds, python = s.counts()
        return {
            "harvested": self.total,
            "matched": self.matched,
            "shown": len(self.items),
            "python_only": python,
            "by_tag": {t: tags.get(t, 0) for t in TAGS},
            "by_kind": dict(sorted(kinds.items())),
            "skipped_vendored": s.skipped_vendored,
            "skipped_vendored_files": s.skipped_vendored_files,
            "skipped_generated": s.skipped_generated,
            "skipped_generated_files": s.skipped_generated_files,
            "candidate_lines": s.candidate_lines,
            "files_with_hits": s.files_with_hits,
            "non_comment_hits": s.non_comment_hits,
            "unterminated_string_files": s.unterminated_files,
            "files_lexed": s.files_lexed,
            "files_cached": s.files_cached,
            "cache": s.cache,
            "changed_during_run": dict(s.changed_during_run),
        }

    def to_json(self) -> dict[str, Any]:
        t = self.scan.target
        return {
            "root": str(t.root),
            "tree": t.kind,
            "commit": t.ws.commit if t.ws else None,
            "searcher": self.scan.searcher,
            "summary": self.summary(),
            "filters": self.filters,
            "items": [i.to_json() for i in self.items],
            "issues": self.issues,
            "notes": self.notes,
            "seconds": self.scan.seconds,
        }

    def markdown(self) -> str:
        t = self.scan.target
        s = self.summary()
        out = ["# First tasks from TODO/FIXME comments", ""]
        where = f"`{t.root}`"
        if t.ws is not None:
            where += f" (torch {t.ws.torch_version}, {t.kind} tree"
            where += f" at {t.ws.commit[:12]})" if t.ws.commit else ")"
        out.append(
            f"{s['harvested']} tagged comments in {where}, found with {self.scan.searcher}; "
            f"skipped {s['skipped_vendored']} in vendored and {s['skipped_generated']} in "
            f"generated files. The {len(self.items)} best of {s['matched']} matching:"
        )
        out.append("")
        for n, item in enumerate(self.items, 1):
            loc = f"`{item.path}:{item.line}`"
            if item.url:
                loc = f"[{loc}]({item.url})"
            out.append(f"{n}. **{_md(item.text[:200])}**  ")
            out.append(f"   {loc} · `{item.id}` · score {item.score}")
            for r in item.reasons:
                out.append(f"   - {r.points:+d} {_md(r.why)}")
            if item.blame and item.blame.get("age_days") is not None:
                out.append(
                    f"   - last touched {item.blame['age_days']} days ago by {item.blame['author']}"
                )
        if self.issues:
            out += ["", "## Newcomer-labelled issues", ""]
            for issue in self.issues:
                labels = ", ".join(issue["labels"])
                out.append(
                    f"- [#{issue['number']} {_md(issue['title'])}]({issue['url']}) ({labels})"
                )
        if self.notes:
            out += [""] + [f"> {n}" for n in self.notes]
        return "\n".join(out) + "\n"

    def render(self, console: Console, verbose: bool) -> None:
        if self.output == "markdown":
            console.file.write(self.markdown())
            return
        from rich.table import Table
        from rich.text import Text

        s = self.summary()
        table = Table(show_lines=True, pad_edge=False, expand=False)
        table.add_column("id", style="cyan", no_wrap=True)
        table.add_column("score", justify="right", no_wrap=True)
        table.add_column("task", overflow="fold")
        for item in self.items:
            cell = Text()
            cell.append(f"{item.path}:{item.line}", style="bold")
            if item.blame and item.blame.get("age_days") is not None:
                cell.append(f"  ({item.blame['age_days']} days old)", style="dim")
            cell.append("\n" + (item.text if verbose else _shorten(item.text, 160)))
            reasons = item.reasons if verbose else [r for r in item.reasons if r.points]
            why = "; ".join(f"{r.points:+d} {r.why}" for r in reasons)
            if why:
                cell.append("\n" + why, style="dim")
            table.add_row(item.id, str(item.score), cell)
        if self.items:
            console.print(table)
        else:
            console.print("No tagged comment matches these filters.")
        cached = " (result cached for this commit)" if s["cache"] == "tree" else ""
        console.print(
            f"{s['harvested']} tagged comments ({s['python_only']} in Python) found with "
            f"{self.scan.searcher}{cached}; skipped {s['skipped_vendored']} in vendored code "
            f"({s['skipped_vendored_files']} files) and {s['skipped_generated']} in generated "
            f"files; {s['non_comment_hits']} hits were not comments. Showing {len(self.items)} "
            f"of {s['matched']}; `onboard harvest show ID` for one."
        )
        if self.issues is not None:
            if self.issues:
                issues = Table(title="Newcomer-labelled issues", pad_edge=False)
                issues.add_column("#", justify="right", style="cyan")
                issues.add_column("title", overflow="fold")
                issues.add_column("labels", overflow="fold")
                for issue in self.issues:
                    issues.add_row(str(issue["number"]), issue["title"], ", ".join(issue["labels"]))
                console.print(issues)
            elif not any(n.startswith("GitHub") for n in self.notes):
                console.print("No open newcomer-labelled issues.")
        for note in self.notes:
            console.print(f"[dim]{note}[/]", markup=True)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("`", "'")


def _filter(
    items: Sequence[Item],
    *,
    paths: Sequence[str],
    modules: Sequence[str],
    tags: Sequence[str],
    python_only: bool,
) -> Sequence[Item]:
    """The items that pass the filters (``items`` itself when there are none: a
    cached result's items are built only when used)."""
    wanted_tags = {t.upper() for t in tags}
    bad = wanted_tags - set(TAGS)
    if bad:
        raise BadInput(
            f"--tag {', '.join(sorted(bad))}: not a tag onboard harvests.",
            next_step=f"Use one of {', '.join(TAGS)}.",
        )
    if not (paths or modules or wanted_tags or python_only):
        return items
    norm_paths = [p.strip("/").removeprefix("./") for p in paths]

    def path_ok(path: str) -> bool:
        for want in norm_paths:
            if any(ch in want for ch in "*?["):
                if fnmatch.fnmatch(path, want) or fnmatch.fnmatch(path, want.rstrip("/") + "/*"):
                    return True
            elif path == want or path.startswith(want + "/"):
                return True
        return False

    from onboard.workflows.harvest import rank

    out = []
    for item in items:
        if python_only and not item.python_only:
            continue
        if wanted_tags and item.tag not in wanted_tags:
            continue
        if norm_paths and not path_ok(item.path):
            continue
        if modules and not any(rank.matches_module(item.module, m) for m in modules):
            continue
        out.append(item)
    return out


def harvest(
    *,
    workspace: str | None = None,
    repo: str | None = None,
    paths: Sequence[str] = (),
    modules: Sequence[str] = (),
    tags: Sequence[str] = (),
    python_only: bool = False,
    limit: int = DEFAULT_LIMIT,
    issues: bool = False,
    enrich_results: bool = True,
    api_url: str = DEFAULT_API_URL,
    github_repo: str = DEFAULT_GITHUB_REPO,
    searcher: str = "auto",
    cache: Path | None | bool = True,
    output: str = "table",
    reporter: Reporter | None = None,
    save_in_background: bool = False,
) -> HarvestResult:
    """Harvest the tree; ``limit=0`` shows every match.

    ``cache``: True for the user cache (XDG_CACHE_HOME/onboard/harvest), a
    path for another folder, False/None for none. ``save_in_background``: a
    new result is written to the cache after this returns (``collect.gather``).
    """
    reporter = reporter or Reporter()
    if limit < 0:
        raise BadInput(f"--limit {limit}: must be 0 (all) or more.")
    target = resolve_target(workspace, repo)
    cache_dir = _cache_dir(cache)
    # `git status` first: it runs in its own process while the rest is checked,
    # imported and read (a warm run's answer waits for it). The CLI may have
    # started it already, before Click was imported (``headstart``).
    ahead = headstart.take_tree_state(target.root)
    status = None
    if cache_dir is not None and searcher == "auto":
        status = ahead or git.status.start_tree_state(target.root)
    elif ahead is not None:
        ahead.stop()
    try:
        _check_paths(target, paths)
        from onboard.workflows.harvest.collect import gather

        s = gather(
            target,
            searcher=searcher,
            cache=cache_dir,
            reporter=reporter,
            status=status,
            save_in_background=save_in_background,
        )
    except BaseException:
        if status is not None:
            status.stop()
        raise
    from onboard.workflows.harvest import enrich, rank

    matched = _filter(s.items, paths=paths, modules=modules, tags=tags, python_only=python_only)
    notes: list[str] = []
    if s.changed_during_run:
        notes.append(_changed_note(s.changed_during_run))
    token = _token_once(api_url)
    github_problem: str | None = None
    github_skipped: list[str] = []
    if enrich_results:
        lookup = enrich.linked_issues(
            _linked_numbers(matched), token=token, api_url=api_url, repo=github_repo,
            cache=cache_dir,
        )  # fmt: skip
        if lookup.fetched:
            for item in _linking(matched):
                numbers = (*item.form.issues, *item.form.pulls)
                item.linked = [lookup.fetched[n] for n in numbers if n in lookup.fetched]
                if item.linked:
                    rank.score(item, None)
            matched = sorted(matched, key=rank.sort_key)
        if lookup.problem:
            github_problem = lookup.problem
            github_skipped.append(
                f"{lookup.unchecked} linked issue(s) ranked without state and labels"
            )
    shown = list(matched) if limit == 0 else list(matched[:limit])
    from onboard.workflows.harvest.links import local_changes

    changes = local_changes(target, s.head, cache_dir, reuse=s.cache == "tree") if shown else {}
    for item in shown:
        item.url = target.url(item.path, item.line, changes)
    if enrich_results and shown:
        hist = enrich.history(
            target.root, is_reference=target.kind == "reference", head=s.head, cache=cache_dir
        )
        if hist.note:
            notes.append(hist.note)
        enrich.blame(target.root, shown, hist, cache_dir)
    found_issues: list[dict[str, Any]] | None = None
    if issues:
        if github_problem and not token():
            found_issues = []
        else:
            found_issues, problem = enrich.newcomer_issues(
                token=token(), api_url=api_url, repo=github_repo, limit=limit or 50
            )
            github_problem = github_problem or problem
        if github_problem and not found_issues:
            github_skipped.append("--issues listed nothing")
    if github_problem:
        # ONE line, whatever was skipped.
        notes.append(f"GitHub not used: {github_problem}; {'; '.join(github_skipped)}.")
    filters = {
        "path": list(paths),
        "module": list(modules),
        "tag": sorted({t.upper() for t in tags}),
        "python_only": python_only,
        "limit": limit,
    }
    return HarvestResult(s, shown, len(matched), filters, notes, found_issues, output)


def _changed_note(changed: dict[str, str]) -> str:
    """One line for the files that changed while harvest read the tree."""
    shown = "; ".join(f"{path} {what}" for path, what in list(changed.items())[:5])
    more = f"; and {len(changed) - 5} more" if len(changed) > 5 else ""
    return (
        f"{len(changed)} file(s) changed while harvest read the tree (a checkout or an edit "
        f"elsewhere?): {shown}{more}. Run `onboard harvest` again for a settled tree."
    )


def _check_paths(target: Target, paths: Sequence[str]) -> None:
    for path in paths:
        # A typo'd --path would otherwise look like "no TODOs here".
        rel = path.strip("/").removeprefix("./")
        globbed = any(c in rel for c in "*?[")
        if not (next(target.root.glob(rel), None) if globbed else (target.root / rel).exists()):
            raise BadInput(
                f"--path {path}: there is no such file or folder in {target.root}.",
                next_step="Give a path relative to the checkout root, e.g. `--path torch/nn`.",
            )


def _linking(items: Sequence[Item]) -> list[Item]:
    """The items that name an issue or a PR (a cached result knows them unbuilt)."""
    from onboard.workflows.harvest.stored import StoredItems

    if isinstance(items, StoredItems):
        return items.linking()
    return [i for i in items if i.form.issues or i.form.pulls]


def _linked_numbers(items: Sequence[Item]) -> list[int]:
    """The issue and PR numbers the items name (a cached result: none built for them)."""
    from onboard.workflows.harvest.stored import StoredItems

    if isinstance(items, StoredItems):
        return items.linked_numbers()
    return list(dict.fromkeys(n for i in items for n in (*i.form.issues, *i.form.pulls)))


def _cache_dir(cache: Path | None | bool) -> Path | None:
    if cache is True:
        from onboard.cache import cache_dir

        return cache_dir("harvest")
    if cache is False or cache is None:
        return None
    return Path(cache)


def _token_once(api_url: str) -> Callable[[], str | None]:
    """The token, looked up on first use only (most runs need none: cached issues)."""
    found: list[str | None] = []

    def token() -> str | None:
        if not found:
            found.append(_token(api_url))
        return found[0]

    return token


def _token(api_url: str) -> str | None:
    from onboard.github_token import find_token

    found = find_token(api_url)
    return found.value if found is not None else None


# --------------------------------------------------------------------------
# harvest show


@dataclass
class ShowResult:
    item: Item
    context_start: int
    context: list[str]
    blame: list[dict[str, Any]]  # per line of the comment
    links: dict[str, Any]
    notes: list[str]
    root: Path

    @property
    def exit_code(self) -> int:
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            "item": self.item.to_json(),
            "root": str(self.root),
            "context": {"start_line": self.context_start, "lines": self.context},
            "blame": self.blame,
            "links": self.links,
            "notes": self.notes,
        }

    def render(self, console: Console, verbose: bool) -> None:
        from rich.syntax import Syntax

        item = self.item
        console.print(f"[bold]{item.id}[/]  {item.path}:{item.line}  score {item.score}")
        for r in item.reasons:
            console.print(f"  {r.points:+d} {r.why}", markup=False)
        lexer_name = "python" if item.python_only else "cpp"
        code = "\n".join(self.context)
        console.print(
            Syntax(
                code,
                lexer_name,
                line_numbers=True,
                start_line=self.context_start,
                highlight_lines=set(range(item.line, item.end_line + 1)),
                word_wrap=True,
                theme="ansi_dark",
            )
        )
        for b in self.blame:
            if b.get("age_days") is not None:
                console.print(
                    f"blame: line {b['line']}: {b['commit'][:12]} {b['author']}, "
                    f"{b['age_days']} days ago: {b['summary']}",
                    markup=False,
                )
        if self.links.get("source"):
            console.print(f"source: {self.links['source']}", markup=False)
        for issue in self.links.get("issues", []):
            state = (
                f" ({issue['state']}; {', '.join(issue['labels'])})" if issue.get("state") else ""
            )
            console.print(f"issue: {issue['url']}{state}", markup=False)
        for note in self.notes:
            console.print(f"[dim]{note}[/]")


def show(
    item_id: str,
    *,
    workspace: str | None = None,
    repo: str | None = None,
    enrich_results: bool = True,
    api_url: str = DEFAULT_API_URL,
    github_repo: str = DEFAULT_GITHUB_REPO,
    searcher: str = "auto",
    cache: Path | None | bool = True,
    reporter: Reporter | None = None,
) -> ShowResult:
    """One item: the comment with its code around it, blame and links."""
    reporter = reporter or Reporter()
    want = item_id.strip().lower()
    if len(want) < 4 or any(c not in "0123456789abcdef" for c in want):
        raise BadInput(
            f"{item_id!r} is not a harvest id (ids are hex, like the first column of "
            "`onboard harvest`; 4 characters at least).",
            next_step="Run `onboard harvest` (or `onboard harvest --json`) and copy an id from "
            "its first column.",
        )
    target = resolve_target(workspace, repo)
    cache_dir = _cache_dir(cache)
    from onboard.workflows.harvest import enrich, rank
    from onboard.workflows.harvest.collect import gather

    s = gather(target, searcher=searcher, cache=cache_dir, reporter=reporter)
    found = [i for i in s.items if i.id.startswith(want)]
    if not found:
        raise OnboardError(
            f"No harvested comment has the id {item_id} in {target.root}. An id comes from the "
            "comment's path and text, so an edited or removed comment has a new id or none.",
            next_step="Run `onboard harvest` (add --json or --limit 0 for all) to list the "
            "current ids.",
        )
    if len(found) > 1:
        raise BadInput(
            f"The id prefix {item_id} matches {len(found)} comments "
            f"({', '.join(i.id for i in found[:5])}).",
            next_step="Give more characters of the id.",
        )
    item = found[0]
    item.url = target.url(item.path, item.line)
    try:
        text = (target.root / item.path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise OnboardError(
            f"{item.path} changed after harvest found the comment {item.id} in it and cannot "
            f"be read now ({exc.strerror}).",
            next_step="Run `onboard harvest` again for the current ids, then "
            "`onboard harvest show ID`.",
        ) from None
    source = text.splitlines()
    start = max(1, item.line - CONTEXT_LINES)
    end = min(len(source), item.end_line + CONTEXT_LINES)
    notes: list[str] = []
    blame_rows: list[dict[str, Any]] = []
    links: dict[str, Any] = {"source": item.url, "issues": []}
    if enrich_results:
        hist = enrich.history(target.root, is_reference=target.kind == "reference")
        if hist.note:
            limitation = (
                target.ws.limitation("How old this comment is (git blame)") if target.ws else None
            )
            notes.append(limitation or hist.note)
        elif hist.commit is not None:
            from onboard import git

            try:
                porcelain = git.blame.blame_porcelain(
                    target.root, item.path, [(item.line, item.end_line)]
                )
                now = time.time()
                for line, info in sorted(enrich.parse_porcelain(porcelain).items()):
                    blame_rows.append({"line": line, **enrich._with_age(info, now)})
                if blame_rows:
                    item.blame = blame_rows[0]
            except OnboardError as exc:
                notes.append(f"blame: {exc.message}")
        lookup = enrich.linked_issues(
            (*item.form.issues, *item.form.pulls), token=_token_once(api_url), api_url=api_url,
            repo=github_repo, cache=cache_dir,
        )  # fmt: skip
        numbers = (*item.form.issues, *item.form.pulls)
        item.linked = [lookup.fetched[n] for n in numbers if n in lookup.fetched]
        if item.linked:
            rank.score(item, None)
        if lookup.problem:
            notes.append(f"GitHub not used: {lookup.problem}; the linked issue's state is unknown.")
    for number in item.form.issues:
        known = [x for x in item.linked if x.get("number") == number]
        links["issues"].append(
            known[0]
            if known
            else {"number": number, "url": f"https://github.com/{github_repo}/issues/{number}"}
        )
    for number in item.form.pulls:
        links.setdefault("pulls", []).append(f"https://github.com/{github_repo}/pull/{number}")
    if item.form.other_links:
        links["other"] = list(item.form.other_links)
    return ShowResult(item, start, source[start - 1 : end], blame_rows, links, notes, target.root)
