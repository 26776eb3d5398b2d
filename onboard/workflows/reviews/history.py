"""The landed pull requests behind files, from git history alone.

A clone `onboard setup` made holds one commit; the first `reviews` or `blame`
fetches its history back to ``--since`` the cheap way (commits and trees, no
file contents: ``git fetch --filter=blob:none --shallow-since``; blame then
fetches the contents of the blamed file's versions only). A clone of the
user's is used as it is. The reference tree rebuilt from the wheel has no
history: its files' commits come from the API (``GET /repos/{o}/{r}/commits?path=``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from onboard import cache, git
from onboard.errors import OnboardError
from onboard.jsonable import spec, to_json
from onboard.report import Reporter
from onboard.units import human_bytes
from onboard.workflows.reviews import trailers
from onboard.workflows.reviews.tree import Target, Tree

DEFAULT_YEARS = 2
_STATE = {"since": str, "shallow": str}


@dataclass
class HistoryState:
    kind: str  # full / fetched / shallow / none
    since: str | None = None  # how far back the history here goes, when bounded
    bytes_fetched: int = 0
    fetched_now: bool = False
    note: str | None = None


@dataclass(frozen=True)
class Landed:
    """A commit read as the pull request that landed it (and, for `reviews`, which of
    the files it changed)."""

    sha: str
    date: str
    author: str
    subject: str
    # In JSON its keys join the commit's (json_extra), after paths and names_then.
    trailers: trailers.Trailers = field(metadata=spec(omit=True))
    paths: tuple[str, ...] = ()  # the targets it touched, by today's names
    names: tuple[str, ...] = field(default=(), metadata=spec(key="names_then"))  # the same
    # files by their names in that commit
    message: str = field(default="", repr=False, compare=False, metadata=spec(omit=True))

    @classmethod
    def of(
        cls, sha: str, date: str, author: str, message: str, path: str = "", name: str = ""
    ) -> Landed:
        subject = message.split("\n", 1)[0].strip()
        paths, names = ((path,), (name or path,)) if path else ((), ())
        return cls(sha, date, author, subject, trailers.parse(message), paths, names, message)

    def row(self) -> list[Any]:
        return [self.sha, self.date, self.author, self.message, self.paths[0], self.names[0]]

    @property
    def pr(self) -> int | None:
        return self.trailers.pr

    @property
    def title(self) -> str:
        return trailers.title_of(self.subject)

    def json_extra(self) -> dict[str, Any]:
        return to_json(self.trailers)  # its keys join the commit's


@dataclass(frozen=True)
class Approval:
    login: str
    count: int = field(metadata=spec(key="approved"))
    last_date: str = field(metadata=spec(key="last"))
    last_pr: int | None


def default_since(tree: Tree) -> str:
    """Two years before the checkout's commit (fixed, so a second run fetches nothing)."""
    rev = tree.commit or "HEAD"
    when = dt.datetime.fromtimestamp(git.history.commit_time(tree.repo, rev), dt.timezone.utc)
    return (when - dt.timedelta(days=365 * DEFAULT_YEARS)).strftime("%Y-%m-%d")


def _state_file(tree: Tree) -> Any:
    key = cache.sha1_hex(str(git.repository.git_dir(tree.repo)).encode())
    return cache.cache_dir("reviews", f"history-{key}.json")


def ensure(
    tree: Tree, since: str | None, *, offline: bool, reporter: Reporter, need: bool = True
) -> HistoryState:
    """The history the checkout holds, fetched first when it is onboard's depth-1 clone."""
    if tree.is_reference:
        return HistoryState(
            "none",
            note="This workspace holds the reference tree rebuilt from the installed wheel: it "
            "has no git history, so blame is not possible here and the commits of each file "
            "come from GitHub's API (and the cache).",
        )
    boundary = git.repository.shallow_boundary(tree.repo)
    if not boundary:
        return HistoryState("full")
    digest = cache.sha1_hex(" ".join(boundary).encode())
    state_path = _state_file(tree)
    kept = cache.read_valid(state_path, _STATE)
    wanted = since or (kept["since"] if kept else None)
    if kept and kept["shallow"] == digest and (wanted is None or kept["since"] <= wanted):
        return HistoryState("fetched", since=kept["since"])
    if tree.kind != "clone":
        return HistoryState(
            "shallow",
            note=f"{tree.repo} is a shallow clone: lines older than its history show at its "
            "oldest commit. Deepen it with `git -C "
            f"{tree.repo} fetch --filter=blob:none --shallow-since=YYYY-MM-DD origin`.",
        )
    wanted = wanted or default_since(tree)
    if offline or not need:
        return HistoryState(
            "shallow",
            note="This clone holds only the installed commit and --offline fetches nothing: "
            "run once online to fetch its history (commits and trees, no file contents).",
        )
    fetched = _fetch(tree, wanted, reporter)
    boundary = git.repository.shallow_boundary(tree.repo)
    digest = cache.sha1_hex(" ".join(boundary).encode())
    cache.write_json(state_path, {"since": wanted, "shallow": digest})
    return HistoryState("fetched", since=wanted, bytes_fetched=fetched, fetched_now=True)


def _fetch(tree: Tree, since: str, reporter: Reporter) -> int:
    from onboard import transaction  # (only here: a warm run needs none of it)

    rev = tree.commit or git.refs.head_sha(tree.repo) or ""  # a sha: `fetch origin HEAD` is theirs
    what = f"fetching history since {since} (commits and trees, no file contents)"
    with transaction.begin(
        transaction.scope_for_repo(tree.repo),
        command="reviews",
        what=f"the repository {tree.repo}",
        reporter=reporter,
        final=False,
    ) as tx:
        tx.watch(tree.repo)
        with reporter.task(what) as task:

            def progress(done: int, total: int) -> None:
                task.update(completed=done, total=total, detail="objects")

            report = git.remote.fetch_history(
                tree.repo, "origin", rev, since=since, on_progress=progress, on_line=reporter.detail
            )
    if not report.ok:
        told = "\n".join(report.last_lines)
        named = git.core.cause(told, what=f"Fetching the history of {tree.repo}", cwd=tree.repo)
        if named is not None:  # a lock file in the way, a repository another user owns
            message, next_step = named
            raise OnboardError(f"{message} Without it there is no blame.", next_step=next_step)
        last = git.core.said(told) if report.last_lines else f"exit {report.returncode}"
        raise OnboardError(
            f"Fetching the history of {tree.repo} failed ({last}); without it there is no "
            "blame and no list of the pull requests that changed a file.",
            next_step="Check the network (or the workspace's remote: `git -C "
            f"{tree.repo} remote -v`) and run the command again; with no network, "
            "`--offline` answers from what was fetched and cached before.",
        )
    reporter.step(f"fetched the history since {since}: {human_bytes(report.bytes_fetched)}")
    return report.bytes_fetched


_DONE = {"key": str}


def prefetch_contents(tree: Tree, path: str, *, offline: bool, reporter: Reporter) -> None:
    """Fetch the contents of every version of ``path`` in one request, before blame
    reads them (in a blobless history git fetches them one request each). Once per
    history and file; nothing offline, nothing outside onboard's own clone."""
    if offline or tree.kind != "clone" or not git.repository.is_partial(tree.repo):
        return
    head = git.refs.head_sha(tree.repo) or ""
    shallow = " ".join(git.repository.shallow_boundary(tree.repo))
    key = cache.sha1_hex(f"{git.repository.git_dir(tree.repo)}\0{head}\0{shallow}\0{path}".encode())
    state = cache.cache_dir("reviews", "contents", f"{key}.json")
    if cache.read_valid(state, _DONE).get("key") == key:
        return
    missing = git.remote.missing_blobs(tree.repo, path)
    if missing:
        reporter.step(f"fetching {len(missing)} version(s) of {path} (file contents, once)")
        before = git.repository.pack_bytes(tree.repo)
        if git.remote.fetch_objects(tree.repo, "origin", missing) != 0:
            return  # blame still gets each one on demand
        reporter.detail(f"{human_bytes(git.repository.pack_bytes(tree.repo) - before)}")
    cache.write_json(state, {"key": key})


# --- landed changes ------------------------------------------------------------


def landed_for(tree: Tree, target: Target, *, since: str | None, limit: int) -> list[Landed]:
    """The commits that changed ``target`` (newest first, at most ``limit``)."""
    entries = git.history.log_for_path(tree.repo, target.path, since=since, max_count=limit)
    return [
        Landed.of(e.sha, e.date, e.author, e.message, target.path, e.path or target.path)
        for e in entries
    ]


# Renames followed through the API's history, at most (each costs one request, kept).
MAX_API_RENAMES = 5


def landed_from_api(
    api: Any, tree: Tree, target: Target, *, since: str | None, limit: int
) -> tuple[list[Landed], str | None]:
    """The reference tree's stand-in for ``git log --follow``: the API's commits for a
    path at the installed commit (cached; they do not change), and, where the oldest of
    them made the file by a rename (``/commits/{sha}``'s ``previous_filename``), the
    commits of its old name before that. Returns (commits, problem)."""
    if not tree.commit:
        return [], "the installed torch's commit is unknown"
    out: list[Landed] = []
    seen: set[str] = set()
    path, sha, problem = target.path, tree.commit, None
    for _ in range(MAX_API_RENAMES + 1):
        params = {"path": path, "sha": sha}
        if since:
            params["since"] = f"{since}T00:00:00Z"
        answer = api.get_pages(
            f"/repos/{tree.upstream}/commits", params, final=True,
            max_pages=max(1, limit // 100 + 1),
        )  # fmt: skip
        problem = problem or answer.problem
        found = [c for c in _api_commits(answer.data, target.path, path) if c.sha not in seen]
        seen.update(c.sha for c in found)
        out += found
        if answer.problem or not found or len(out) >= limit:
            break
        older = _renamed_from(api, tree, found[-1].sha, path)
        if older is None:
            break
        path, sha = older, found[-1].sha
    return out[:limit], problem


def _api_commits(data: Any, path_now: str, name: str) -> list[Landed]:
    out = []
    for item in data or []:
        commit = item.get("commit") if isinstance(item, dict) else None
        if not isinstance(commit, dict) or not isinstance(item.get("sha"), str):
            continue
        author: dict[str, Any] = commit.get("author") or {}
        if not isinstance(author, dict):
            author = {}
        message = str(commit.get("message") or "")
        date, who = str(author.get("date") or ""), str(author.get("name") or "")
        out.append(Landed.of(item["sha"], date, who, message, path_now, name))
    return out


def _renamed_from(api: Any, tree: Tree, sha: str, path: str) -> str | None:
    """The name ``path`` had before commit ``sha`` when that commit renamed it."""
    answer = api.get(f"/repos/{tree.upstream}/commits/{sha}", final=True)
    files = answer.data.get("files") if isinstance(answer.data, dict) else None
    for entry in files if isinstance(files, list) else []:
        if (
            isinstance(entry, dict)
            and entry.get("filename") == path
            and entry.get("status") == "renamed"
            and isinstance(entry.get("previous_filename"), str)
        ):
            return str(entry["previous_filename"])
    return None


def merge(groups: list[list[Landed]], limit: int) -> list[Landed]:
    """One list, newest first, each commit once (with every target it touched)."""
    by_sha: dict[str, Landed] = {}
    for group in groups:
        for item in group:
            old = by_sha.get(item.sha)
            if old is None:
                by_sha[item.sha] = item
            else:
                by_sha[item.sha] = replace(
                    old,
                    paths=tuple(dict.fromkeys(old.paths + item.paths)),
                    names=tuple(dict.fromkeys(old.names + item.names)),
                )
    ordered = sorted(by_sha.values(), key=lambda c: c.date, reverse=True)
    return ordered[:limit]


def approvals(changes: list[Landed], *, reviewer: str | None = None) -> list[Approval]:
    """Who approved these changes (from ``Approved by:``), most first, bots left out."""
    counts: Counter[str] = Counter()
    last: dict[str, Landed] = {}
    for change in changes:
        for login in change.trailers.approvers:
            if trailers.is_bot(login) or (reviewer and login.lower() != reviewer.lower()):
                continue
            counts[login] += 1
            if login not in last or change.date > last[login].date:
                last[login] = change
    return [
        Approval(login, n, last[login].date[:10], last[login].pr)
        for login, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].lower()))
    ]


_KEPT = {"key": str, "rows": [cache.Row(str, str, str, str, str, str)]}


def kept_landed(
    tree: Tree, target: Target, parts: tuple[object, ...], compute: Any
) -> list[Landed]:
    """``compute()``, kept per history, file and question: the same question about
    the same history is answered from the cache (a `git log --follow` over years
    of PyTorch takes seconds per file)."""
    head = git.refs.head_sha(tree.repo) or ""
    shallow = " ".join(git.repository.shallow_boundary(tree.repo))
    content = ""
    if target.ranges:  # blame reads the working tree: its edits change the answer
        try:
            content = cache.sha1_hex((tree.repo / target.path).read_bytes())
        except OSError:
            content = "-"
    text = f"{git.repository.git_dir(tree.repo)}\0{head}\0{shallow}\0{target}\0{parts}\0{content}"
    key = cache.sha1_hex(text.encode())
    path = cache.cache_dir("reviews", "landed", key[:2], f"{key}.json")
    kept = cache.read_valid(path, _KEPT)
    if kept and kept["key"] == key:
        return [Landed.of(*row) for row in kept["rows"]]
    found: list[Landed] = compute()
    rows = [c.row() for c in found if len(c.paths) == 1 and len(c.names) == 1]
    if len(rows) == len(found):
        cache.write_json(path, {"key": key, "rows": rows}, compact=True)
    return found
