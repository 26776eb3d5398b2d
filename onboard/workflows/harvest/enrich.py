"""Enrichment, lazy and cached per commit: blame age, linked issues' state.

Blame runs only for the items a user is shown, one ``git blame --porcelain
-L a,b -L c,d -- file`` per file (never the whole tree: blaming every file of
PyTorch takes hours). Issue state and labels come from GitHub through
``onboard.github.issues`` with a token; without one, or without network, the result
says so in ONE line and carries on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard.cache import read_valid, sha1_hex, write_json
from onboard.errors import OnboardError
from onboard.jsonable import to_json
from onboard.workflows.harvest.rank import Item

ISSUE_TTL_S = 24 * 3600  # issue state changes; a day-old answer is good enough to rank
MAX_ISSUE_LOOKUPS = 40  # a run never makes more GitHub calls than this for linked issues


@dataclass(frozen=True)
class RepoHistory:
    """What blame can say in this checkout."""

    commit: str | None
    commits: int
    shallow: bool
    note: str | None  # why blame ages are missing or partial


def history(
    root: Path, *, is_reference: bool, head: str | None = None, cache: Path | None = None
) -> RepoHistory:
    """Whether blame can say anything here (none for a reference tree).

    ``head``: the HEAD commit `git status` just gave (the tree is a git work
    tree). With it and ``cache``, a warm run asks git nothing: whether the
    clone is shallow is git's own marker file, and whether HEAD has a parent
    is kept per HEAD (history does not change under a commit)."""
    if is_reference:
        return RepoHistory(None, 1, False, REFERENCE_NOTE)
    shallow = _shallow_marker(root) if head is not None else None
    # Kept only where shallowness can be checked on reading: git's marker file.
    path = None
    if cache is not None and head is not None and shallow is not None:
        path = _cache_path(cache, root, "history")
        known = read_valid(path, HISTORY_SHAPE)
        if known.get("head") == head and known.get("shallow") == shallow:
            return _history(known["head"], known["commits"], shallow)
    from onboard import git

    if head is None and not git.repository.is_repo(root):
        return RepoHistory(None, 0, False, "not a git repository: no blame")
    # `rev-list --count` walks all of PyTorch's history (~0.5 s); two commits are enough.
    result = git.core.git(root, "rev-list", "--max-count=2", "HEAD", check=False)
    shas = result.stdout.split()
    if not shas:
        return RepoHistory(None, 0, False, "no commit yet: no blame")
    if shallow is None:
        shallow = git.repository.is_shallow(root)
    if path is not None and shas[0] == head:
        _save(path, {"head": head, "shallow": shallow, "commits": len(shas)})
    return _history(shas[0], len(shas), shallow)


HISTORY_SHAPE = {"head": str, "shallow": bool, "commits": int}


def _shallow_marker(root: Path) -> bool | None:
    """Whether the clone is shallow, from git's ``.git/shallow`` (None: ``.git`` is a
    file, as in a worktree or a submodule, so ask git)."""
    dot_git = root / ".git"
    if not dot_git.is_dir():
        return None
    return (dot_git / "shallow").is_file()


def _history(commit: str, commits: int, shallow: bool) -> RepoHistory:
    note = None
    if commits == 1 and not shallow:
        note = REFERENCE_NOTE
    elif shallow:
        note = (
            "blame: a shallow clone; lines older than its first commit show that commit "
            "(`git fetch --unshallow` for real ages)"
        )
    return RepoHistory(commit, commits, shallow, note)


REFERENCE_NOTE = (
    "blame: this tree has a single commit (as the reference tree rebuilt from the wheel "
    "has), so it cannot say how old a comment is; a full clone can"
)


def _cache_path(directory: Path, root: Path, name: str) -> Path:
    key = sha1_hex(str(root.resolve()).encode())[:16]
    return directory / f"{name}-{key}.json"


_save = write_json

# The caches' shapes: a file of another shape is read as empty (and rewritten).
_BLAME_INFO = {
    "commit": str,
    "author": str,
    "author_time": (int, None),
    "summary": str,
    "boundary": bool,
    "note?": str,
}
BLAME_SHAPE = {"commit": str, "lines": {str: _BLAME_INFO}}
_ISSUE = {
    "number": int,
    "title": str,
    "state": str,
    "labels": [str],
    "url": str,
    "is_pull": bool,
}
ISSUES_SHAPE = {str: {"fetched_at": float, "issue": _ISSUE}}


def blame(
    root: Path,
    items: Iterable[Item],
    hist: RepoHistory,
    cache: Path | None,
    *,
    now: float | None = None,
) -> int:
    """Fill ``item.blame`` for ``items``; returns the number of git blame calls made.

    Cached per HEAD commit and file state (a dirty file is blamed again).
    """
    todo = [i for i in items if i.blame is None]
    if not todo or hist.commit is None or (hist.commits <= 1 and not hist.shallow):
        return 0
    now = time.time() if now is None else now
    path = _cache_path(cache, root, "blame") if cache is not None else None
    stored = read_valid(path, BLAME_SHAPE) if path is not None else {}
    if stored.get("commit") != hist.commit:
        stored = {"commit": hist.commit, "lines": {}}
    lines: dict[str, Any] = stored.setdefault("lines", {})
    by_file: dict[str, list[Item]] = {}
    for item in todo:
        key = _line_key(root, item)
        if key in lines:
            item.blame = _with_age(lines[key], now)
        else:
            by_file.setdefault(item.path, []).append(item)
    if not by_file:  # every one cached: no git at all
        return 0
    from onboard import git

    calls = 0
    for file, file_items in by_file.items():
        ranges = sorted({(i.line, i.line) for i in file_items})
        try:
            porcelain = git.blame.blame_porcelain(root, file, ranges)
        except OnboardError:
            continue  # untracked or unreadable: no blame for it, the rest goes on
        calls += 1
        found = parse_porcelain(porcelain)
        for item in file_items:
            info = found.get(item.line)
            if info is None:
                continue
            if hist.shallow and info.get("boundary"):
                info = {**info, "note": "boundary of a shallow clone: older than this"}
            lines[_line_key(root, item)] = info
            item.blame = _with_age(info, now)
    if path is not None and calls:
        _save(path, stored)
    return calls


def blame_ages(
    root: Path, items: Iterable[Item], *, is_reference: bool, head: str | None, cache: Path | None
) -> str | None:
    """Each item's blame (commit, author, age) where this checkout's history can say;
    the note when it cannot, or only in part (None: it can)."""
    hist = history(root, is_reference=is_reference, head=head, cache=cache)
    blame(root, items, hist, cache)
    return hist.note


def blame_comment(root: Path, item: Item, *, now: float | None = None) -> list[dict[str, Any]]:
    """Each line of one comment with its commit, author and age (``OnboardError``: git
    could not blame the file)."""
    from onboard import git

    porcelain = git.blame.blame_porcelain(root, item.path, [(item.line, item.end_line)])
    now = time.time() if now is None else now
    return [
        {"line": line, **_with_age(info, now)}
        for line, info in sorted(parse_porcelain(porcelain).items())
    ]


def _line_key(root: Path, item: Item) -> str:
    try:
        st = (root / item.path).stat()
        state = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        state = "?"
    return f"{item.path}:{item.line}:{state}"


def _with_age(info: dict[str, Any], now: float) -> dict[str, Any]:
    out = dict(info)
    when = info.get("author_time")
    if isinstance(when, int):
        out["age_days"] = max(0, int((now - when) // 86400))
    return out


def parse_porcelain(text: str) -> dict[int, dict[str, Any]]:
    """final line number -> commit, author, author_time, summary (``--porcelain``)."""
    commits: dict[str, dict[str, Any]] = {}
    out: dict[int, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    final_line = 0
    for row in text.splitlines():
        if row.startswith("\t"):
            if current is not None:
                out[final_line] = {
                    "commit": current["sha"],
                    "author": current.get("author", ""),
                    "author_time": current.get("author_time"),
                    "summary": current.get("summary", ""),
                    "boundary": bool(current.get("boundary")),
                }
            current = None
            continue
        parts = row.split(" ")
        if (
            len(parts) >= 3
            and len(parts[0]) == 40
            and all(c in "0123456789abcdef" for c in parts[0])
        ):
            current = commits.setdefault(parts[0], {"sha": parts[0]})
            final_line = int(parts[2])
        elif current is not None:
            key, _, value = row.partition(" ")
            if key == "author":
                current["author"] = value
            elif key == "author-time" and value.isdigit():
                current["author_time"] = int(value)
            elif key == "summary":
                current["summary"] = value
            elif key == "boundary":
                current["boundary"] = True
    return out


# --------------------------------------------------------------------------
# GitHub


NO_TOKEN = "no token (set GITHUB_TOKEN or GH_TOKEN; a read-only one is enough)"


@dataclass
class IssueLookup:
    """Linked issues fetched this run; ``problem`` says why some were not."""

    fetched: dict[int, dict[str, Any]]
    unchecked: int  # linked issues left without state and labels
    problem: str | None
    calls: int


def linked_issues(
    numbers: Iterable[int],
    *,
    token: Callable[[], str | None],
    api_url: str,
    repo: str,
    cache: Path | None,
    now: float | None = None,
) -> IssueLookup:
    """State and labels of these issues and PRs (cached a day per issue).

    ``token()`` is asked only when an issue is not in the cache.
    """
    wanted = list(dict.fromkeys(numbers))
    if not wanted:
        return IssueLookup({}, 0, None, 0)
    now = time.time() if now is None else now
    path = cache / f"issues-{repo.replace('/', '-')}.json" if cache is not None else None
    stored = read_valid(path, ISSUES_SHAPE) if path is not None else {}
    fetched: dict[int, dict[str, Any]] = {}
    missing = []
    for number in wanted:
        entry = stored.get(str(number))
        if isinstance(entry, dict) and now - float(entry.get("fetched_at", 0)) < ISSUE_TTL_S:
            fetched[number] = entry["issue"]
        else:
            missing.append(number)
    if not missing:
        return IssueLookup(fetched, 0, None, 0)
    value = token()
    if not value:
        return IssueLookup(fetched, len(missing), NO_TOKEN, 0)
    from onboard.github.client import GitHubUnavailable
    from onboard.github.issues import GitHub

    calls = 0
    problem = None
    asked = missing[:MAX_ISSUE_LOOKUPS]
    try:
        client = GitHub(value, api_url=api_url, repo=repo)
        for number in asked:
            calls += 1
            try:
                info = to_json(client.issue(number))
            except GitHubUnavailable as exc:
                if "(404" in exc.message:
                    continue  # a deleted or transferred issue: nothing to say about it
                raise
            fetched[number] = info
            stored[str(number)] = {"fetched_at": now, "issue": info}
    except GitHubUnavailable as exc:
        problem = exc.message.rstrip(".")
    if path is not None and calls:
        _save(path, stored)
    unchecked = sum(1 for n in wanted if n not in fetched)
    if problem is None and len(missing) > MAX_ISSUE_LOOKUPS:
        problem = f"only {MAX_ISSUE_LOOKUPS} issues are looked up per run (cached a day)"
    return IssueLookup(fetched, unchecked, problem, calls)


def newcomer_issues(
    *, token: str | None, api_url: str, repo: str, limit: int
) -> tuple[list[dict[str, Any]], str | None]:
    """Open issues labelled for newcomers, or why they could not be listed."""
    if not token:
        return [], NO_TOKEN
    from onboard.github.client import GitHubUnavailable
    from onboard.github.issues import NEWCOMER_LABELS, GitHub

    try:
        found = GitHub(token, api_url=api_url, repo=repo).issues_with_labels(
            NEWCOMER_LABELS, limit=limit
        )
    except GitHubUnavailable as exc:
        return [], exc.message.rstrip(".")
    return [to_json(i) for i in found], None
