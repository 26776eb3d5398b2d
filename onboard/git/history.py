"""History: commits and their messages, authors and files, the log of one path, diffs
between two commits, and making a commit of the index.

A clone deepened with ``--filter=blob:none`` (``remote.fetch_history``) is a
partial clone: git fetches a missing object from the promisor remote the moment
anything asks for it. Looking up a commit that is not there (an old entry of
``.git-blame-ignore-revs``) would then go to the network, so presence is decided
from the commits the history holds (``commits_in_history``), never by asking for
an object.

A path's log over a long history can take minutes: ``_read`` runs those reads
not whole (Ctrl-C stops them at once; they write nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from onboard.git import core, refs, repository
from onboard.git.core import PathLike

# One record per commit: fields split by NUL, records by RS (0x1e); the message
# (%B) is last, so a NUL never occurs inside the fields before it.
_FIELDS = "%H%x00%an%x00%ae%x00%aI%x00%B"
_RECORD = "%x1e" + _FIELDS + "%x00"


def _read(repo: PathLike, *args: str, check: bool = True, timeout: float | None = 300) -> str:
    """A read that may walk a long history: not whole (see the module docstring)."""
    return core.git(repo, *args, check=check, timeout=timeout, whole=False).stdout


@dataclass(frozen=True)
class LogEntry:
    """One commit as history tells it; ``path`` is the file's name in that commit
    (a rename followed with ``--follow`` gives the older name)."""

    sha: str
    author: str
    email: str
    date: str  # ISO 8601
    message: str
    path: str | None = None

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0].strip()


def _parse_records(text: str, with_paths: bool) -> list[LogEntry]:
    out: list[LogEntry] = []
    for record in text.split("\x1e"):
        if not record.strip():
            continue
        parts = record.split("\x00")
        if len(parts) < 5:
            continue
        sha, author, email, date, message = (p.strip("\n") for p in parts[:5])
        path = None
        if with_paths and len(parts) > 5:
            path = _last_name(parts[5])
        out.append(LogEntry(sha.strip(), author, email, date, message.strip(), path))
    return out


def _last_name(name_status: str) -> str | None:
    """The file's name in a commit, from its ``--name-status`` line (R100<TAB>old<TAB>new)."""
    for line in name_status.strip().splitlines():
        cells = line.split("\t")
        if len(cells) >= 2:
            return cells[-1]
    return None


def log_for_path(
    repo: PathLike,
    path: str,
    *,
    rev: str = "HEAD",
    since: str | None = None,
    max_count: int | None = None,
    follow: bool = True,
) -> list[LogEntry]:
    """The commits that changed ``path`` (renames followed), newest first."""
    args = ["log", f"--format={_RECORD}", "--name-status", "--no-color"]
    if follow:
        args.append("--follow")
    if since:
        args.append(f"--since={since}")
    if max_count:
        args.append(f"--max-count={max_count}")
    args += [rev, "--", path]
    return _parse_records(_read(repo, *args), with_paths=True)


def messages(repo: PathLike, shas: Iterable[str]) -> dict[str, LogEntry]:
    """Each commit's record (all present: blame named them), in one call."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    text = _read(repo, "log", "--no-walk=unsorted", f"--format={_RECORD}", *wanted)
    return {e.sha: e for e in _parse_records(text, with_paths=False)}


def grep_messages(
    repo: PathLike, text: str, *, fixed: bool = True, max_count: int = 20
) -> list[LogEntry]:
    """Commits whose message holds ``text`` (a fixed string, else a basic regex
    matched line by line), newest first."""
    args = ["log", f"--grep={text}", f"--max-count={max_count}", f"--format={_RECORD}"]
    if fixed:
        args.insert(1, "-F")
    return _parse_records(_read(repo, *args), with_paths=False)


def commits_in_history(repo: PathLike, rev: str = "HEAD") -> set[str]:
    """Every commit the history of ``rev`` holds here (a shallow history stops at its boundary)."""
    return set(_read(repo, "rev-list", rev).split())


def present_commits(repo: PathLike, shas: Sequence[str]) -> set[str]:
    """Which of ``shas`` are commits in this repository. A partial clone is answered
    from its history (see the module docstring); any other with ``cat-file``."""
    if not shas:
        return set()
    if repository.is_partial(repo):
        return commits_in_history(repo) & set(shas)
    text = core.git(
        repo, "cat-file", "--batch-check=%(objectname) %(objecttype)",
        input="\n".join(shas) + "\n", check=False, timeout=None, whole=False,
    ).stdout  # fmt: skip
    return {ln.split()[0] for ln in text.splitlines() if ln.endswith(" commit")}


def commit_time(repo: PathLike, rev: str) -> int:
    """The committer time (epoch seconds) of ``rev``."""
    return int(_read(repo, "show", "-s", "--format=%ct", rev).strip() or 0)


def renamed_to(repo: PathLike, old: str) -> str | None:
    """Today's name of a file history renamed away from ``old`` (following each rename)."""
    args = ["log", "-M", "--full-diff", "--diff-filter=R", "--name-status", "--format="]
    renames = _read(repo, *args, "HEAD", "--", old, check=False, timeout=None)
    current = old
    for line in reversed(renames.splitlines()):  # oldest first
        cells = line.split("\t")
        if len(cells) == 3 and cells[0].startswith("R") and cells[1] == current:
            current = cells[2]
    return current if current != old else None


def file_at(repo: PathLike, rev: str, path: str) -> str | None:
    """The file's text in ``rev`` (None when it is not there)."""
    result = core.git(repo, "show", f"{rev}:{path}", check=False, timeout=None, whole=False)
    return result.stdout if result.returncode == 0 else None


def log_subjects(repo: PathLike, revs: Sequence[str]) -> list[str]:
    return core.out(repo, "log", "--format=%s", *revs).splitlines()


def commit_message(repo: PathLike, rev: str = "HEAD") -> str:
    return core.out(repo, "log", "-1", "--format=%B", rev)


def commit_fields(repo: PathLike, rev: str) -> dict[str, str]:
    """sha, subject, body, author, author_email, date (ISO 8601) of one commit."""
    fmt = "%H%x00%s%x00%an%x00%ae%x00%aI%x00%b"
    sha, subject, author, email, date, body = core.out(
        repo, "show", "-s", f"--format={fmt}", rev
    ).split("\x00", 5)
    return {
        "sha": sha,
        "subject": subject,
        "author": author,
        "author_email": email,
        "date": date,
        "body": body,
    }


def subject_of(repo: PathLike, rev: str) -> str:
    return core.out(repo, "show", "-s", "--format=%s", rev)


def files_touched(repo: PathLike, rev: str) -> list[str]:
    """``STATUS<TAB>path`` lines against the first parent (``--root`` for the first commit)."""
    args = ["diff-tree", "-r", "--no-commit-id", "--name-status", "-m", "--first-parent"]
    text = core.out(repo, *args, "--root", rev)
    return [ln for ln in text.splitlines() if ln.strip()]


def count_range(repo: PathLike, old: str, new: str, *, first_parent: bool) -> int:
    """How many commits ``old..new`` holds (along first parents when asked)."""
    args = ["rev-list", "--count"] + (["--first-parent"] if first_parent else [])
    return int(core.out(repo, *args, f"{old}..{new}") or "0")


def commits_between(repo: PathLike, base: str, head: str) -> list[tuple[str, str, str, str]]:
    """(sha, subject, body, "Author <email>") of the commits in base..head, oldest first."""
    fmt = "--format=%H%x1f%s%x1f%an <%ae>%x1f%b%x1e"
    text = core.out(repo, "log", "--reverse", fmt, f"{base}..{head}")
    commits = []
    for record in text.split("\x1e"):
        record = record.strip("\n")
        if not record.strip():
            continue
        sha, subject, author, body = (record.split("\x1f") + ["", "", ""])[:4]
        commits.append((sha.strip(), subject.strip(), body.strip(), author.strip()))
    return commits


def changed_files(repo: PathLike, a: str, b: str) -> list[str]:
    return [p for p in core.out(repo, "diff", "--name-only", a, b).splitlines() if p]


def diff_name_status(repo: PathLike, a: str, b: str) -> list[tuple[str, str]]:
    """(status letter, path) for each file changed from a to b; renames give the new path."""
    rows = []
    for line in core.out(repo, "diff", "--name-status", "-M", a, b).splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            rows.append((parts[0][:1], parts[-1]))
    return rows


def diff_text(
    repo: PathLike, a: str, b: str, paths: Sequence[str] = (), *, context: int = 0
) -> str:
    args = ["diff", f"-U{context}", "--no-color", "--no-ext-diff", a, b]
    if paths:
        args += ["--", *paths]
    return core.git(repo, *args).stdout


def stage_paths(repo: PathLike, paths: Sequence[str]) -> None:
    core.git(repo, "add", "--", *paths, what="staging the scaffold")


def _identity_env(repo: PathLike) -> dict[str, str]:
    """onboard's identity for a checkout that has none configured."""
    if core.out(repo, "config", "user.email", check=False):
        return {}
    return {
        "GIT_AUTHOR_NAME": "onboard",
        "GIT_AUTHOR_EMAIL": "onboard@localhost",
        "GIT_COMMITTER_NAME": "onboard",
        "GIT_COMMITTER_EMAIL": "onboard@localhost",
    }


def commit_index(repo: PathLike, message: str) -> str:
    """A commit of the index on top of HEAD, without moving any ref (the caller does)."""
    tree = core.out(repo, "write-tree", what="writing the index as a tree")
    parent = refs.head_sha(repo)
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    return core.out(repo, *args, extra_env=_identity_env(repo), what="committing the scaffold")
