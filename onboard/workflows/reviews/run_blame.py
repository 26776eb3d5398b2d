"""`onboard blame PATH:LINE[-END]`: the commit that last changed each line, its pull
request, who approved it, and what reviewers said on those lines."""

from __future__ import annotations

import re

from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.workflows.reviews import blame as blame_mod
from onboard.workflows.reviews import history
from onboard.workflows.reviews.comments import on_lines, threads
from onboard.workflows.reviews.context import Context
from onboard.workflows.reviews.history import Landed
from onboard.workflows.reviews.request import BlameRequest
from onboard.workflows.reviews.results import BlamedLine, BlameResult
from onboard.workflows.reviews.tree import line_count, quote, repo_path

_SPEC = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")


def parse_spec(spec: str) -> tuple[str, int, int]:
    mo = _SPEC.match(spec.strip())
    if not mo:
        raise BadInput(
            f"{spec!r} does not name lines of a file.",
            next_step="Give PATH:LINE or PATH:START-END, e.g. "
            "`onboard blame aten/src/ATen/native/UnaryOps.cpp:120`.",
        )
    start = int(mo.group("start"))
    end = int(mo.group("end") or start)
    if start < 1 or end < start:
        raise BadInput(
            f"{spec!r}: lines are counted from 1, and a range goes from its first line to a "
            "later one.",
            next_step=f"Give e.g. `{mo.group('path')}:{max(start, 1)}-{max(start, end, 1)}`.",
        )
    return mo.group("path"), start, end


def blame(request: BlameRequest, reporter: Reporter | None = None) -> BlameResult:
    reporter = reporter or Reporter()
    spec, since, offline, walk = request.spec, request.since, request.offline, request.walk
    name, start, end = parse_spec(spec)
    ctx = Context.open(
        workspace=request.workspace, repo=request.repo, api_url=request.api_url,
        upstream=request.upstream, offline=offline, refresh=request.refresh, reporter=reporter,
    )  # fmt: skip
    tree = ctx.tree
    path = repo_path(tree, name)
    # The range first: a line past the end is wrong in any tree, a reference tree too.
    total = line_count(tree, path)
    if end > total:
        raise BadInput(
            f"{path} has {total} line(s); line {end} is beyond its end.",
            next_step=f"Pick lines from 1 to {total}, e.g. `onboard blame {quote(path)}:{total}`.",
        )
    if tree.is_reference:
        raise OnboardError(
            "Blame needs git history, and this workspace holds the reference tree rebuilt "
            "from the installed wheel, which has none (its files were never committed there "
            "one change at a time).",
            next_step=f"`onboard reviews {quote(path)}` lists the pull requests that changed "
            "the file (from GitHub's API); for blame, make a clone: `onboard setup NEW_DIR`.",
        )
    state = history.ensure(tree, since, offline=offline, reporter=reporter)
    if state.kind == "shallow" and tree.kind == "clone":
        raise OnboardError(
            f"No history to blame with: this clone holds only the installed commit, and "
            f"{'--offline fetches nothing' if offline else 'its history was not fetched'}.",
            next_step=f"Run `onboard blame {quote(spec)}` once online: it fetches the history "
            "(commits and trees only, bounded by --since) and keeps it.",
        )
    history.prefetch_contents(tree, path, offline=offline, reporter=reporter)
    blamed = blame_mod.blame(tree, path, [(start, end)], walk=walk)
    result = BlameResult(
        path=path, start=start, end=end, walk=walk, checkout=ctx.checkout(), history=state,
        lines=[
            BlamedLine(ln.final_line, ln.text, ln.sha, ln.orig_line, ln.orig_path, ln.boundary)
            for ln in blamed.lines
        ],
        skipped=blamed.skipped, ignored_listed=blamed.ignored_listed, offline=offline,
    )  # fmt: skip
    numbers = [c.trailers.pr for c in blamed.commits.values() if c.trailers.pr]
    originals = [n for prs in blamed.originals.values() for n in prs]
    pulls = ctx.source.fetch(list(dict.fromkeys(numbers + originals)), reporter)
    for sha, info in blamed.commits.items():
        if not any(ln.sha == sha for ln in blamed.lines):
            continue
        pull = pulls.get(info.trailers.pr) if info.trailers.pr else None
        result.prs[sha] = ctx.pr_view(info, pull)
        mine = [ln for ln in blamed.lines if ln.sha == sha]
        texts = {ln.text for ln in mine}
        found = []
        for number in [info.trailers.pr, *blamed.originals.get(sha, [])]:
            got = pulls.get(number) if number else None
            if got is None:
                continue
            orig_lines = {ln.orig_line for ln in mine} if number == info.trailers.pr else set()
            names = {ln.orig_path for ln in mine} | {path}
            on_file = [c for c in got.comments if c.path in names and not c.user_is_bot]
            for t in threads(on_file):
                if on_lines(t.root, texts, orig_lines):
                    t.path_now = path
                    found.append(t)
        result.prs[sha].comments_here = sum(len(t.comments) for t in found)
        if found:
            result.threads[sha] = found
    known = blame_mod.original_commits(tree, originals)
    for sha, prs in blamed.originals.items():
        views = []
        for n in prs:
            before = f"Landed before this history (#{n})"
            info = known.get(n) or Landed.of("", "", "", before)
            views.append(ctx.pr_view(info, pulls.get(n)))
        if views:
            result.originals[sha] = views
    result.api = ctx.source.stats
    _notes(result, ctx, state)
    return result


def _notes(result: BlameResult, ctx: Context, state: history.HistoryState) -> None:
    if any(ln.boundary for ln in result.lines):
        since = f" (it goes back to {state.since})" if state.since else ""
        result.notes.append(
            "Lines marked 'older than this history' were last changed before the oldest "
            f"commit here{since}: pass an earlier --since to look further back."
        )
    if any(ln.sha == blame_mod.NOT_COMMITTED for ln in result.lines):
        result.notes.append("Lines marked 'not committed yet' are your own uncommitted edits.")
    if state.note:
        result.notes.append(state.note)
    result.notes += ctx.api_notes()
