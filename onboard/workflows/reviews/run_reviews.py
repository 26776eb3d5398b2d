"""`onboard reviews [OP | FILE ...]` and `onboard reviews sync`: the landed pull
requests behind some files, who approved them, who may approve them now, and
what reviewers said on those files."""

from __future__ import annotations

from typing import Any

from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.workflows.reviews import codeowners, history, merge_rules, trailers
from onboard.workflows.reviews.blame import blame as blame_lines
from onboard.workflows.reviews.comments import Thread, on_lines, threads
from onboard.workflows.reviews.context import Context
from onboard.workflows.reviews.history import Landed
from onboard.workflows.reviews.request import ReviewsRequest
from onboard.workflows.reviews.results import (
    FileFacts,
    ReviewsResult,
    SyncedPr,
    SyncResult,
)
from onboard.workflows.reviews.tree import Target, quote, resolve_targets

_NO_TARGETS = (
    "Name files or an op (`onboard reviews aten/src/ATen/native/UnaryOps.cpp`, "
    "`onboard reviews trunc`), or run it on the branch of your change."
)


def _targets(
    ctx: Context, names: list[str], workspace: str | None, base: str | None, reporter: Reporter
) -> tuple[str, list[Target]]:
    if names:

        def op_files(op: str) -> list[Target]:
            return _op_files(ctx, op, workspace, reporter)

        targets, ops = resolve_targets(ctx.tree, names, op_files=op_files)
        return ("op" if ops else "paths"), targets
    from onboard.workflows.pr.change import collect

    try:
        change = collect(ctx.tree.repo, base=base, fallback_commit=ctx.tree.commit)
    except OnboardError as exc:
        raise BadInput(
            f"No file or op was named, and the branch gives none: {exc.message}",
            next_step=_NO_TARGETS,
        ) from None
    edited = [ln[3:].split(" -> ")[-1] for ln in change.uncommitted if ln[:2].strip() == "M"]
    paths = list(dict.fromkeys(change.existing_paths + edited))
    return "branch", [Target(p, (), f"changed on {change.branch}") for p in paths]


def _op_files(ctx: Context, op: str, workspace: str | None, reporter: Reporter) -> list[Target]:
    from onboard.workflows.reviews.tree import closest_names, op_targets
    from onboard.workflows.where import WhereRequest, where

    try:
        answer = where(WhereRequest.parse(op, workspace=workspace), reporter)
    except BadInput as exc:
        from onboard import git

        files = closest_names(op, git.status.tracked_files(ctx.tree.repo), n=3)
        also = f" Files with a close name: {', '.join(files)}." if files else ""
        raise BadInput(
            f"{op!r} is not a file in the checkout, and as an op: {exc.message}{also}",
            next_step=exc.next_step,
        ) from None
    return op_targets(ctx.tree, answer.op, answer)


def _landed(
    ctx: Context, targets: list[Target], state: history.HistoryState, since: str | None, limit: int
) -> tuple[list[Landed], dict[str, set[str]], list[str]]:
    """The changes behind the targets, each ranged target's entry texts, and problems."""
    groups: list[list[Landed]] = []
    texts: dict[str, set[str]] = {}
    problems: list[str] = []
    for target in targets:
        if state.kind == "none":
            found, problem = history.landed_from_api(
                ctx.source.api, ctx.tree, target, since=since, limit=limit
            )
            groups.append(found)
            if problem:
                problems.append(f"{target.path}: {problem}")
            continue
        if target.ranges:
            texts[target.path] = _entry_texts(ctx, target)

        def compute(target: Target = target) -> list[Landed]:
            if not target.ranges:
                return history.landed_for(ctx.tree, target, since=since, limit=limit)
            return _blamed_entries(ctx, target, since)

        groups.append(history.kept_landed(ctx.tree, target, (since, limit), compute))
    return history.merge(groups, limit), texts, problems


def _check_answered(
    ctx: Context,
    targets: list[Target],
    state: history.HistoryState,
    changes: list[Landed],
    problems: list[str],
) -> None:
    """Without history here (the reference tree) the files' commits come from GitHub:
    when every one of those requests failed there is no answer, not an empty one
    ("none in this history" would say the files were never changed)."""
    if state.kind != "none" or changes or len(problems) < len(targets):
        return
    stats = ctx.source.stats
    if not stats.requests:
        return  # nothing was sent (--offline, an unknown commit): the notes say why
    raise OnboardError(
        f"Every request to GitHub for the files' history failed ({stats.requests} "
        f"request(s)), so there is nothing to show. The first error: {problems[0]}",
        next_step="Check the network and GitHub's status (https://www.githubstatus.com), or "
        "pass a reachable API with --api-url, then run the command again; what is fetched is "
        "kept. A clone (`onboard setup NEW_DIR`) reads the history from git instead.",
    )


def _entry_texts(ctx: Context, target: Target) -> set[str]:
    """The lines of an op's entries in a registry file, as the file is now."""
    try:
        lines = (ctx.tree.repo / target.path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    every = lines.splitlines()
    return {every[n - 1] for a, b in target.ranges for n in range(a, b + 1) if n <= len(every)}


def _blamed_entries(ctx: Context, target: Target, since: str | None) -> list[Landed]:
    """The commits that last changed an op's entries (every op's PR touches the file)."""
    history.prefetch_contents(ctx.tree, target.path, offline=ctx.offline, reporter=ctx.reporter)
    blamed = blame_lines(ctx.tree, target.path, target.ranges, walk=False)
    out = []
    for ln in blamed.lines:
        info = blamed.commits.get(ln.sha)
        if info is None or (since and info.date[:10] < since):
            continue
        out.append(
            Landed.of(info.sha, info.date, info.author, info.message, target.path, ln.orig_path)
        )
    return list({c.sha: c for c in out}.values())


def _rules(ctx: Context) -> tuple[merge_rules.Matcher | None, list[Any], str | None, list[str]]:
    notes: list[str] = []
    text, where = _read_upstream_file(ctx, merge_rules.PATH)
    matcher = None
    if text is not None:
        try:
            matcher = merge_rules.Matcher(merge_rules.parse(text))
        except merge_rules.Unreadable as exc:
            notes.append(f"{merge_rules.PATH} could not be read: it is {exc}.")
        if matcher and matcher.unreadable():
            notes.append(
                f"Rules the merge bot could not read either: {', '.join(matcher.unreadable())}."
            )
    else:
        notes.append(f"{merge_rules.PATH} is not in this checkout (nor in the cache): who may "
                     "approve is not shown.")  # fmt: skip
    owners: list[Any] = []
    for path in codeowners.PATHS:
        found, _where = _read_upstream_file(ctx, path)
        if found is not None:
            owners = codeowners.parse(found)
            break
    return matcher, owners, where, notes


def _read_upstream_file(ctx: Context, path: str) -> tuple[str | None, str | None]:
    local = ctx.tree.repo / path
    if local.is_file():
        return local.read_text(encoding="utf-8", errors="replace"), str(local)
    if ctx.tree.is_reference and ctx.tree.commit:
        text = ctx.source.file_text(path, ctx.tree.commit)
        if text is not None:
            return text, f"{ctx.tree.upstream}@{ctx.tree.commit[:12]} (GitHub API, cached)"
    return None, None


def reviews(
    request: ReviewsRequest, reporter: Reporter | None = None
) -> ReviewsResult | SyncResult:
    """The answer for ``request.targets``; with ``request.sync``, the fetch that keeps it."""
    reporter = reporter or Reporter()
    if request.sync:
        return sync(request, reporter)
    names, since, limit = list(request.targets), request.since, request.limit
    offline, reviewer = request.offline, request.reviewer
    ctx = Context.open(
        workspace=request.workspace, repo=request.repo, api_url=request.api_url,
        upstream=request.upstream, offline=offline, refresh=request.refresh, reporter=reporter,
    )  # fmt: skip
    mode, targets = _targets(ctx, names, request.workspace, request.base, reporter)
    if not targets:
        raise BadInput("The branch changes no file that is still there.", next_step=_NO_TARGETS)
    state = _history(ctx, since, offline, reporter, names)
    changes, texts, problems = _landed(ctx, targets, state, since, limit)
    _check_answered(ctx, targets, state, changes, problems)
    result = ReviewsResult(
        mode=mode, query=names, checkout=ctx.checkout(), history=state, reviewer=reviewer,
        since=since, limit=limit, offline=offline,
    )  # fmt: skip
    matcher, owners, result.rules_source, notes = _rules(ctx)
    result.notes += notes
    for target in targets:
        facts = FileFacts(target)
        if matcher is not None:
            facts.rules = matcher.rules_for(target.path)
        facts.owners = codeowners.owners_for(owners, target.path) if owners else None
        result.files.append(facts)
    result.approvals = history.approvals(changes, reviewer=reviewer)
    wanted = list(dict.fromkeys(c.pr for c in changes if c.pr))
    pulls = ctx.source.fetch(wanted, reporter)
    for change in changes:
        pull = pulls.get(change.pr) if change.pr else None
        view = ctx.pr_view(change, pull)
        if pull is not None and change.trailers.kind != trailers.REVERT:
            found = _threads(ctx, change, pull.comments, texts, reviewer)
            view.comments_here = sum(len(t.comments) for t in found)
            result.threads += found
        result.prs.append(view)
    result.threads.sort(key=lambda t: t.root.created_at, reverse=True)
    result.api = ctx.source.stats
    _notes(result, ctx, state, problems)
    return result


def _history(
    ctx: Context, since: str | None, offline: bool, reporter: Reporter, names: list[str]
) -> history.HistoryState:
    state = history.ensure(ctx.tree, since, offline=offline, reporter=reporter)
    if state.kind == "shallow" and ctx.tree.kind == "clone":
        command = " ".join(["onboard reviews sync", *(quote(n) for n in names)])
        raise OnboardError(
            "No history to read: this clone holds only the installed commit, and --offline "
            "fetches nothing.",
            next_step=f"Run `{command}` once online: it fetches the history (commits and "
            "trees only) and the review comments, and keeps both for offline use.",
        )
    return state


def _threads(
    ctx: Context,
    change: Landed,
    comments: list[Any],
    texts: dict[str, set[str]],
    reviewer: str | None,
) -> list[Thread]:
    names = dict(zip(change.names, change.paths, strict=False))
    names.update({p: p for p in change.paths})
    mine = [c for c in comments if c.path in names and not c.user_is_bot]
    out = []
    for t in threads(mine):
        now = names[t.root.path]
        if now in texts and not on_lines(t.root, texts[now], set()):
            continue  # a registry file: only the op's own entry counts
        if reviewer and not any(c.user.lower() == reviewer.lower() for c in t.comments):
            continue
        t.path_now = now
        ctx.check_still_there(t)
        out.append(t)
    return out


def _notes(
    result: ReviewsResult, ctx: Context, state: history.HistoryState, problems: list[str]
) -> None:
    if state.note:
        result.notes.append(state.note)
    if state.kind in ("fetched", "shallow") and state.since:
        result.notes.append(f"History here goes back to {state.since} (pass --since to change).")
    result.notes += problems
    missing = [p for p in result.prs if p.problem]
    if missing:
        how = "run `onboard reviews sync` online" if ctx.offline else "see below"
        result.notes.append(
            f"The review of {len(missing)} pull request(s) is not shown ({how}): "
            + "; ".join(f"#{p.change.trailers.pr}: {p.problem}" for p in missing[:3])
        )
    result.notes += ctx.api_notes()


def sync(request: ReviewsRequest, reporter: Reporter | None = None) -> SyncResult:
    """Fill the cache for the files (history, then each PR's comments and reviews): what is
    kept serves every reviewer, and it is fetched whatever ``offline`` says."""
    reporter = reporter or Reporter()
    names, since, limit = list(request.targets), request.since, request.limit
    ctx = Context.open(
        workspace=request.workspace, repo=request.repo, api_url=request.api_url,
        upstream=request.upstream, offline=False, refresh=request.refresh, reporter=reporter,
    )  # fmt: skip
    _mode, targets = _targets(ctx, names, request.workspace, request.base, reporter)
    state = history.ensure(ctx.tree, since, offline=False, reporter=reporter)
    changes, _texts, problems = _landed(ctx, targets, state, since, limit)
    _check_answered(ctx, targets, state, changes, problems)
    if ctx.tree.is_reference and ctx.tree.commit:
        for path in (merge_rules.PATH, *codeowners.PATHS[:1]):
            ctx.source.file_text(path, ctx.tree.commit)
    result = SyncResult(names, ctx.checkout(), state, targets)
    wanted = list(dict.fromkeys(c.pr for c in changes if c.pr))
    for number, pull in ctx.source.fetch(wanted, reporter).items():
        result.prs.append(
            SyncedPr(
                number, pull.source, len(pull.comments), len(pull.reviews), pull.problem, pull.gone
            )
        )
    result.api = ctx.source.stats
    result.notes += problems
    if state.note:
        result.notes.append(state.note)
    result.notes += ctx.api_notes()
    return result
