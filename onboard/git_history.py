"""Reading a repository's history: log records, blame, the shallow boundary, and the
blobless fetch that gives a depth-1 clone the history it lacks.

Every call goes through ``proc`` (argument lists, no prompts). Plain types out.

A clone deepened with ``--filter=blob:none`` is a partial clone: git fetches a
missing object from the promisor remote the moment anything asks for it. Looking
up a commit that is not there (an old entry of ``.git-blame-ignore-revs``) would
then go to the network, so presence is decided from the commits the history
holds (``commits_in_history``), never by asking for an object.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from onboard import proc
from onboard.errors import OnboardError

# One record per commit: fields split by NUL, records by RS (0x1e); the message
# (%B) is last, so a NUL never occurs inside the fields before it.
_FIELDS = "%H%x00%an%x00%ae%x00%aI%x00%B"
_RECORD = "%x1e" + _FIELDS + "%x00"


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


@dataclass(frozen=True)
class BlameLine:
    """One line of ``git blame --porcelain``."""

    final_line: int  # in the file as it is now
    sha: str
    orig_line: int  # in the file as that commit left it
    orig_path: str  # the file's name in that commit (moves and copies followed)
    text: str
    boundary: bool = False  # the oldest commit of a shallow history: the line may be older
    previous: str | None = None  # "<sha> <path>" of the version before, when known


@dataclass(frozen=True)
class FetchReport:
    returncode: int
    bytes_fetched: int
    last_lines: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _git(repo: str | os.PathLike[str], *args: str, check: bool = True, timeout: float = 300) -> str:
    argv = ["git", "-C", os.fspath(repo), *args]
    return proc.run(argv, check=check, timeout=timeout, what=f"`git {args[0]}`").stdout


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
    repo: str | os.PathLike[str],
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
    return _parse_records(_git(repo, *args), with_paths=True)


def messages(repo: str | os.PathLike[str], shas: Iterable[str]) -> dict[str, LogEntry]:
    """Each commit's record (all present: blame named them), in one call."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    text = _git(repo, "log", "--no-walk=unsorted", f"--format={_RECORD}", *wanted)
    return {e.sha: e for e in _parse_records(text, with_paths=False)}


def grep_messages(
    repo: str | os.PathLike[str], text: str, *, fixed: bool = True, max_count: int = 20
) -> list[LogEntry]:
    """Commits whose message holds ``text`` (a fixed string, else a basic regex
    matched line by line), newest first."""
    args = ["log", f"--grep={text}", f"--max-count={max_count}", f"--format={_RECORD}"]
    if fixed:
        args.insert(1, "-F")
    return _parse_records(_git(repo, *args), with_paths=False)


def commits_in_history(repo: str | os.PathLike[str], rev: str = "HEAD") -> set[str]:
    """Every commit the history of ``rev`` holds here (a shallow history stops at its boundary)."""
    return set(_git(repo, "rev-list", rev).split())


def present_commits(repo: str | os.PathLike[str], shas: Sequence[str]) -> set[str]:
    """Which of ``shas`` are commits in this repository. A partial clone is answered
    from its history (see the module docstring); any other with ``cat-file``."""
    if not shas:
        return set()
    if is_partial(repo):
        return commits_in_history(repo) & set(shas)
    text = proc.run(
        ["git", "-C", os.fspath(repo), "cat-file", "--batch-check=%(objectname) %(objecttype)"],
        input="\n".join(shas) + "\n",
        check=False,
    ).stdout
    return {ln.split()[0] for ln in text.splitlines() if ln.endswith(" commit")}


def is_partial(repo: str | os.PathLike[str]) -> bool:
    """Whether git fetches missing objects on demand here: a promisor remote
    (``remote.NAME.promisor``, which a ``--filter`` fetch sets) or a partial clone."""
    pattern = r"^(extensions\.partialclone|remote\..*\.promisor)$"
    result = proc.run(
        ["git", "-C", os.fspath(repo), "config", "--get-regexp", pattern], check=False
    )
    return any(
        ln.split(" ", 1)[0].startswith("extensions.") or ln.endswith(" true")
        for ln in result.stdout.splitlines()
    )


def git_dir(repo: str | os.PathLike[str]) -> Path:
    """The repository's git folder (``.git`` itself when it is a folder: no process)."""
    dot = Path(repo) / ".git"
    if dot.is_dir():
        return dot.resolve()
    return Path(_git(repo, "rev-parse", "--absolute-git-dir").strip())


def shallow_boundary(repo: str | os.PathLike[str]) -> list[str]:
    """The commits where a shallow history stops ([] for a full history)."""
    try:
        text = (git_dir(repo) / "shallow").read_text(encoding="ascii")
    except OSError:
        return []
    return text.split()


def head(repo: str | os.PathLike[str]) -> str:
    """HEAD's sha ("" in a repository without commits)."""
    result = proc.run(
        ["git", "-C", os.fspath(repo), "rev-parse", "-q", "--verify", "HEAD"], check=False
    )
    return result.stdout.strip()


def commit_time(repo: str | os.PathLike[str], rev: str) -> int:
    """The committer time (epoch seconds) of ``rev``."""
    return int(_git(repo, "show", "-s", "--format=%ct", rev).strip() or 0)


def toplevel(path: str | os.PathLike[str]) -> Path | None:
    """The top of the git repository around ``path`` (None outside one)."""
    result = proc.run(["git", "-C", os.fspath(path), "rev-parse", "--show-toplevel"], check=False)
    return Path(result.stdout.strip()) if result.returncode == 0 else None


def renamed_to(repo: str | os.PathLike[str], old: str) -> str | None:
    """Today's name of a file history renamed away from ``old`` (following each rename)."""
    argv = ["git", "-C", os.fspath(repo), "log", "-M", "--full-diff", "--diff-filter=R"]
    argv += ["--name-status", "--format=", "HEAD", "--", old]
    current = old
    for line in reversed(proc.run(argv, check=False).stdout.splitlines()):  # oldest first
        cells = line.split("\t")
        if len(cells) == 3 and cells[0].startswith("R") and cells[1] == current:
            current = cells[2]
    return current if current != old else None


def tracked_files(repo: str | os.PathLike[str]) -> list[str]:
    return _git(repo, "ls-files", "-z").split("\x00")[:-1]


def file_at(repo: str | os.PathLike[str], rev: str, path: str) -> str | None:
    """The file's text in ``rev`` (None when it is not there)."""
    result = proc.run(["git", "-C", os.fspath(repo), "show", f"{rev}:{path}"], check=False)
    return result.stdout if result.returncode == 0 else None


# --- blame -------------------------------------------------------------------

_HEADER = re.compile(r"^([0-9a-f]{40}) (\d+) (\d+)(?: (\d+))?$")


def blame(
    repo: str | os.PathLike[str],
    path: str,
    ranges: Sequence[tuple[int, int]],
    *,
    rev: str | None = None,
    ignore_revs: Iterable[str] = (),
    moves: bool = True,
    timeout: float = 600,
) -> list[BlameLine]:
    """``git blame --porcelain -M -C`` of the lines in ``ranges`` (1-based, inclusive),
    skipping ``ignore_revs`` as ``--ignore-rev`` does (their lines go to the commit
    before, where git can tell). A line of a shallow history's oldest commit is
    marked ``boundary`` (it may be older); ``--root`` keeps a real first commit unmarked."""
    args = ["blame", "--porcelain", "--root"]
    if moves:
        args += ["-M", "-C"]
    for sha in ignore_revs:
        args += ["--ignore-rev", sha]
    for start, end in ranges:
        args += ["-L", f"{start},{end}"]
    if rev:
        args.append(rev)
    args += ["--", path]
    result = proc.run(
        ["git", "-C", os.fspath(repo), *args],
        check=False,
        timeout=timeout,
        what=f"`git blame` of {path}",
    )
    if result.returncode != 0:
        raise OnboardError(
            f"`git blame` of {path} failed: {result.stderr.strip() or 'no output'}",
            next_step="Check that the file is tracked in this checkout (`git ls-files "
            f"{path}`) and run the command again.",
        )
    shallow = set(shallow_boundary(repo))
    return [
        replace(ln, boundary=True) if ln.sha in shallow else ln
        for ln in parse_porcelain(result.stdout)
    ]


def parse_porcelain(text: str) -> list[BlameLine]:
    """Blame's porcelain format: a header per line, commit details the first time a
    commit appears, then the line itself after a TAB."""
    details: dict[str, dict[str, str]] = {}
    out: list[BlameLine] = []
    current: tuple[str, int, int] | None = None
    for line in text.split("\n"):
        if current is None:
            mo = _HEADER.match(line)
            if mo:
                current = (mo.group(1), int(mo.group(2)), int(mo.group(3)))
                details.setdefault(current[0], {})
            continue
        if line.startswith("\t"):
            sha, orig, final = current
            info = details[sha]
            out.append(
                BlameLine(
                    final_line=final,
                    sha=sha,
                    orig_line=orig,
                    orig_path=info.get("filename", ""),
                    text=line[1:],
                    boundary=False,
                    previous=info.get("previous"),
                )
            )
            current = None
            continue
        key, _, value = line.partition(" ")
        details[current[0]][key] = value
    return out


# --- the blobless fetch ----------------------------------------------------------

_RECEIVING = re.compile(r"Receiving objects:\s+(\d+)% \((\d+)/(\d+)\)")


def pack_bytes(repo: str | os.PathLike[str]) -> int:
    """The size of the object store's packs and loose objects (what a fetch adds to)."""
    objects = git_dir(repo) / "objects"
    total = 0
    for root, _dirs, names in os.walk(objects):
        for name in names:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).stat().st_size
    return total


def fetch_history(
    repo: str | os.PathLike[str],
    remote: str,
    rev: str,
    *,
    since: str,
    on_progress: Callable[[int, int], None] | None = None,
    on_line: Callable[[str], None] | None = None,
    idle_timeout: float = 120,
) -> FetchReport:
    """``git fetch --filter=blob:none --shallow-since=SINCE REMOTE REV``: the commits
    and trees of ``rev``'s history back to ``since``, no file contents (git fetches
    those when blame first reads them). The repository becomes a partial clone of
    ``remote``; nothing else changes (no ref is written)."""
    before = pack_bytes(repo)
    tail: list[str] = []

    def line(text: str) -> None:
        mo = _RECEIVING.search(text)
        if mo and on_progress is not None:
            on_progress(int(mo.group(2)), int(mo.group(3)))
        if text.strip():
            tail.append(text.strip())
            del tail[:-5]
        if on_line is not None:
            on_line(text)

    argv = [
        "git", "-C", os.fspath(repo), "fetch", "--progress", "--no-tags",
        "--no-write-fetch-head", "--filter=blob:none", f"--shallow-since={since}", remote, rev,
    ]  # fmt: skip
    rc = proc.stream(argv, on_line=line, idle_timeout=idle_timeout)
    return FetchReport(rc, max(0, pack_bytes(repo) - before), tuple(tail))


def missing_blobs(repo: str | os.PathLike[str], path: str, rev: str = "HEAD") -> list[str]:
    """The versions of ``path`` in ``rev``'s history whose contents a partial clone
    lacks (``--missing=print`` lists them without fetching any)."""
    argv = ["git", "-C", os.fspath(repo), "rev-list", "--objects", "--missing=print", rev]
    out = proc.run([*argv, "--", path], check=False, timeout=600).stdout
    return [ln[1:].strip() for ln in out.splitlines() if ln.startswith("?")]


def fetch_objects(repo: str | os.PathLike[str], remote: str, oids: Sequence[str]) -> int:
    """Fetch these objects from the promisor remote in one request (what git does for
    one missing object at a time when blame reads it); the exit status."""
    argv = [
        "git", "-C", os.fspath(repo), "-c", "fetch.negotiationAlgorithm=noop", "fetch", remote,
        "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none",
        "--stdin",
    ]  # fmt: skip
    return proc.run(argv, input="\n".join(oids) + "\n", check=False, timeout=900).returncode
