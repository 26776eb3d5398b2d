"""The git adapter: small named functions, plain types out.

Plumbing goes through ``proc.run(["git", ...])`` (argument lists, no prompts);
GitPython is used where it adds something (fetch progress) and is imported
lazily so the CLI starts without it. Each command's helpers are grouped under
a header comment.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard import gitlock, proc, signals
from onboard.errors import BadInput, OnboardError, ProcError, ProcTimeout

# The open transactions' names for git's reflog (innermost last), and what
# watches every git command onboard runs (the transaction journals those that
# delete refs or stash entries): see onboard/transaction/.
acting_as: list[str] = []
observers: list[Callable[[str | os.PathLike[str] | None, list[str]], None]] = []


def git(
    repo: str | os.PathLike[str] | None,
    *args: str,
    check: bool = True,
    timeout: float | None = 120,
    extra_env: Mapping[str, str] | None = None,
    what: str | None = None,
    next_step: str | None = None,
) -> proc.Result:
    """One git command, run whole: Ctrl-C and SIGTERM wait until it ends
    (``signals.critical``), because a git killed halfway through a checkout
    leaves ``index.lock`` and a half-written tree. Network commands that can
    hang go through ``proc.stream`` with an idle timeout instead.

    A command that only reads takes no optional lock, and one refused for a lock
    file says which file and who holds it (``gitlock``)."""
    argv: list[str] = ["git"]
    if repo is not None:
        argv += ["-C", os.fspath(repo)]
    if acting_as:
        # Every ref this run moves carries onboard's name in its reflog (porcelain
        # commands read GIT_REFLOG_ACTION; plumbing's update-ref takes -m): the
        # transaction's audit tells onboard's moves from the user's by it.
        extra_env = {"GIT_REFLOG_ACTION": acting_as[-1], **(extra_env or {})}
        if args and args[0] == "update-ref" and "-m" not in args:
            args = ("update-ref", "-m", acting_as[-1], *args[1:])
    argv += list(args)
    for observer in observers:
        observer(repo, list(args))
    env = {**gitlock.read_only_env(args), **(extra_env or {})}
    what = what or f"`git {args[0] if args else ''}`"
    with signals.critical():
        try:
            return proc.run(
                argv, check=check, timeout=timeout, extra_env=env, what=what,
                next_step=next_step,
            )  # fmt: skip
        except ProcTimeout:
            raise
        except ProcError as exc:
            raise gitlock.locked(exc, what=what, cwd=repo) from None


def out(repo: str | os.PathLike[str] | None, *args: str, **kwargs: object) -> str:
    return git(repo, *args, **kwargs).stdout.strip()  # type: ignore[arg-type]


def get_root(path: str | os.PathLike[str]) -> Path:
    result = git(path, "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0:
        raise OnboardError(
            f"{path} is not inside a git repository.",
            next_step="Pass --repo with the path of your PyTorch checkout, or run "
            "`onboard setup DIR` to make one.",
        )
    return Path(result.stdout.strip())


def named_root(repo: str | os.PathLike[str], *, next_step: str) -> Path:
    """The top of the repository a user named with ``--repo``.

    Named by the user, so a wrong path is bad input (exit 2), like a bad sha.
    """
    path = Path(repo).expanduser()
    if not path.is_dir() or not is_repo(path):
        state = "does not exist" if not path.exists() else "is not inside a git repository"
        raise BadInput(f"--repo {path} {state}.", next_step=next_step)
    return get_root(path)


def is_repo(path: str | os.PathLike[str]) -> bool:
    return Path(path).is_dir() and git(path, "rev-parse", "--git-dir", check=False).returncode == 0


def head_sha(repo: str | os.PathLike[str]) -> str | None:
    result = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return result.stdout.strip() or None


def current_branch(repo: str | os.PathLike[str]) -> str | None:
    """The branch name, or None when HEAD is detached."""
    result = git(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    return result.stdout.strip() or None


def status_porcelain(repo: str | os.PathLike[str], *, untracked: bool = True) -> list[str]:
    """`git status --porcelain=v1` lines, each ``XY path`` with its two status columns
    intact (not `out()`: stripping the output would eat the first line's leading space
    and shift its path by one character)."""
    args = ["status", "--porcelain=v1"]
    if not untracked:
        args.append("--untracked-files=no")
    return [ln for ln in git(repo, *args).stdout.splitlines() if ln.strip()]


def porcelain_path(line: str) -> str:
    """The path of one `status_porcelain` line (the new name of a rename)."""
    path = line[3:]
    return path.split(" -> ", 1)[-1]


def changes_since(repo: str | os.PathLike[str], base: str) -> dict[str, str]:
    """Paths that differ from ``base`` in the working tree: ``added`` or ``modified``
    (committed since, staged, unstaged or untracked alike).

    One scan of the working tree (`git status`) plus, when HEAD moved past
    ``base``, a tree-to-tree diff that reads no files.
    """
    changes: dict[str, str] = {}
    head = head_sha(repo)
    if head and head != base:
        diff = git(repo, "diff", "--name-status", "--no-renames", base, head, check=False)
        for line in diff.stdout.splitlines():
            kind, _, path = line.partition("\t")
            if kind[:1] == "A":
                changes[path] = "added"
            elif kind[:1] in ("M", "T"):
                changes[path] = "modified"
    worktree = git(repo, "status", "--porcelain=v1", "--untracked-files=all", "--no-renames",
                   check=False)  # fmt: skip
    for line in worktree.stdout.splitlines():
        code, path = line[:2], line[3:]
        if code == "??" or "A" in code:
            changes[path] = "added"
        elif code.strip() and "D" not in code and changes.get(path) != "added":
            changes[path] = "modified"
    return changes


def refresh_index(repo: str | os.PathLike[str]) -> None:
    """Bring git's stat cache up to date (a writer's `git update-index --refresh`); a
    failure only leaves it as it was."""
    git(repo, "update-index", "-q", "--refresh", check=False)


def rev_parse(repo: str | os.PathLike[str], rev: str) -> str | None:
    result = git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    return result.stdout.strip() or None


def changed_files(repo: str | os.PathLike[str], a: str, b: str) -> list[str]:
    return [p for p in out(repo, "diff", "--name-only", a, b).splitlines() if p]


def log_subjects(repo: str | os.PathLike[str], revs: Sequence[str]) -> list[str]:
    return out(repo, "log", "--format=%s", *revs).splitlines()


# --- setup ---
# `onboard setup`: a fresh repository holding exactly one commit (docs/pytorch-facts.md:
# "GitHub serves fetch-by-sha", the way tools/nightly.py checks out a commit).

_SIZE_RE = re.compile(r"([\d.]+)\s*([KMGT]?i?B)\b")
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}


@dataclass(frozen=True)
class FetchProgress:
    """One progress event of a fetch: the stage, objects and bytes so far."""

    stage: str  # "counting", "compressing", "receiving", "resolving", ...
    objects: int
    total_objects: int | None
    bytes_received: int | None  # only known while receiving


@dataclass(frozen=True)
class FetchOutcome:
    returncode: int
    error_lines: tuple[str, ...]
    other_lines: tuple[str, ...]
    objects: int
    bytes_received: int | None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def last_error(self) -> str:
        if self.error_lines:
            line = self.error_lines[-1].strip()
            # "fatal: unable to connect to host:" is followed by the reason.
            rest = [ln.strip() for ln in self.other_lines if ln.strip()]
            return f"{line} {rest[-1]}" if line.endswith(":") and rest else line
        lines = [ln for ln in self.other_lines if ln.strip()]
        return lines[-1].strip() if lines else "(git printed nothing)"


def init_repo(path: str | os.PathLike[str]) -> None:
    Path(path).mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", what="`git init`")


def add_remote(repo: str | os.PathLike[str], name: str, url: str) -> None:
    git(repo, "remote", "add", name, url, what="`git remote add`")


def remote_url(repo: str | os.PathLike[str], name: str = "origin") -> str | None:
    result = git(repo, "remote", "get-url", name, check=False)
    return result.stdout.strip() or None


def objects_dir(repo: str | os.PathLike[str]) -> Path:
    """The absolute object store of a repository (what alternates point at)."""
    rel = out(repo, "rev-parse", "--git-path", "objects", what="Reading the object store path")
    path = Path(rel)
    return path if path.is_absolute() else (Path(repo) / path).resolve()


def add_alternate(repo: str | os.PathLike[str], reference: str | os.PathLike[str]) -> Path:
    """Borrow objects from another clone (``git clone --reference``'s alternates file)."""
    source = objects_dir(reference)
    info = objects_dir(repo) / "info"
    info.mkdir(parents=True, exist_ok=True)
    alternates = info / "alternates"
    lines = alternates.read_text().splitlines() if alternates.exists() else []
    if str(source) not in lines:
        lines.append(str(source))
        alternates.write_text("\n".join(lines) + "\n")
    return source


def fetch_with_progress(
    repo: str | os.PathLike[str],
    remote: str,
    refspec: str,
    *,
    depth: int | None = 1,
    on_progress: Callable[[FetchProgress], None] | None = None,
    idle_timeout: float | None = None,
) -> FetchOutcome:
    """``git fetch --progress`` parsed by GitPython's ``RemoteProgress``.

    Runs through ``proc.stream`` so a silent server is stopped after
    ``idle_timeout`` seconds without output (``ProcTimeout``).
    """
    from git import RemoteProgress  # GitPython, lazily: not needed at CLI start-up

    stages = {
        RemoteProgress.COUNTING: "counting",
        RemoteProgress.COMPRESSING: "compressing",
        RemoteProgress.RECEIVING: "receiving",
        RemoteProgress.RESOLVING: "resolving",
        RemoteProgress.FINDING_SOURCES: "finding sources",
        RemoteProgress.CHECKING_OUT: "checking out",
    }
    state = {"objects": 0, "bytes": None}

    class _Progress(RemoteProgress):
        def update(
            self,
            op_code: int,
            cur_count: str | float,
            max_count: str | float | None = None,
            message: str = "",
        ) -> None:
            stage = stages.get(op_code & RemoteProgress.OP_MASK, "working")
            size = _SIZE_RE.search(message or "")
            if stage == "receiving":
                state["objects"] = int(float(cur_count or 0))
                if size:
                    state["bytes"] = int(float(size.group(1)) * _UNITS.get(size.group(2), 1))
            if on_progress is not None:
                on_progress(
                    FetchProgress(
                        stage,
                        int(float(cur_count or 0)),
                        int(float(max_count)) if max_count else None,
                        state["bytes"] if stage == "receiving" else None,
                    )
                )

    progress = _Progress()
    handler = progress.new_message_handler()
    args = ["git", "-C", os.fspath(repo), "fetch", "--progress", "--no-tags"]
    if depth is not None:
        args += ["--depth", str(depth)]
    args += [remote, refspec]
    rc = proc.stream(args, on_line=handler, idle_timeout=idle_timeout)
    return FetchOutcome(
        rc,
        tuple(progress.error_lines),
        tuple(progress.other_lines),
        int(state["objects"] or 0),
        state["bytes"],
    )


def checkout_detached(repo: str | os.PathLike[str], rev: str) -> None:
    git(repo, "checkout", "-q", "--detach", rev, timeout=600, what=f"Checking out {rev[:12]}")


def checkout_branch(repo: str | os.PathLike[str], branch: str) -> None:
    git(repo, "checkout", "-q", "-f", branch, timeout=600, what=f"Checking out {branch}")


def fast_import(repo: str | os.PathLike[str], stream: bytes) -> None:
    """Feed a ``git fast-import`` stream (blobs inline) into ``repo``."""
    # Level-1 zlib and no delta search: ~2x faster than the defaults on ~90 MB
    # of sources for a pack ~20% larger (measured for the 2.13.0 wheel).
    proc.run(
        [
            "git",
            "-C",
            os.fspath(repo),
            "-c",
            "core.compression=1",
            "fast-import",
            "--quiet",
            "--done",
            "--depth=0",
        ],
        input=stream,
        timeout=600,
        what="Writing the reference tree with `git fast-import`",
    )


def commit_message(repo: str | os.PathLike[str], rev: str = "HEAD") -> str:
    return out(repo, "log", "-1", "--format=%B", rev)


def is_shallow(repo: str | os.PathLike[str]) -> bool:
    return out(repo, "rev-parse", "--is-shallow-repository") == "true"


def add_exclude(repo: str | os.PathLike[str], pattern: str) -> bool:
    """Add a line to ``.git/info/exclude`` (local, never committed); True if added."""
    rel = out(repo, "rev-parse", "--git-path", "info/exclude")
    path = Path(rel) if Path(rel).is_absolute() else Path(repo) / rel
    lines = path.read_text().splitlines() if path.exists() else []
    if pattern in lines:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        if lines and not path.read_text().endswith("\n"):
            fh.write("\n")
        fh.write(pattern + "\n")
    return True


def submodule_update(
    repo: str | os.PathLike[str],
    *,
    depth: int | None = 1,
    jobs: int = 4,
    paths: Sequence[str] = (),
    on_line: Callable[[str], None] | None = None,
    idle_timeout: float | None = None,
) -> int:
    """``git submodule update --init --recursive [--depth 1] --jobs N [-- paths]``."""
    args = ["git", "-C", os.fspath(repo), "submodule", "update", "--init", "--recursive"]
    if depth is not None:
        args += ["--depth", str(depth)]
    args += ["--jobs", str(jobs)]
    if paths:
        args += ["--", *paths]
    return proc.stream(args, on_line=on_line or (lambda _line: None), idle_timeout=idle_timeout)


def submodule_status(repo: str | os.PathLike[str]) -> list[tuple[str, str, str]]:
    """Top-level submodules as (state, sha, path); state '-' uninitialized, '+' wrong
    commit, 'U' conflict, ' ' checked out at the pinned sha."""
    result = git(repo, "submodule", "status", check=False, timeout=300)
    rows = []
    for line in result.stdout.splitlines():
        if len(line) < 42:
            continue
        state, rest = line[0], line[1:].split()
        if len(rest) >= 2:
            rows.append((state, rest[0], rest[1]))
    return rows


# --- onboard pr ---


def remotes(repo: str | os.PathLike[str]) -> dict[str, str]:
    """Remote name -> fetch URL (as configured; may carry userinfo: redact before showing)."""
    names = [n for n in out(repo, "remote").splitlines() if n.strip()]
    found: dict[str, str] = {}
    for name in names:
        result = git(repo, "remote", "get-url", name, check=False)
        if result.returncode == 0:
            found[name] = result.stdout.strip()
    return found


def remote_head_branch(repo: str | os.PathLike[str], remote: str) -> str | None:
    """The branch `refs/remotes/<remote>/HEAD` points at (the remote's default), if recorded."""
    result = git(repo, "symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD", check=False)
    ref = result.stdout.strip()
    prefix = f"refs/remotes/{remote}/"
    return ref[len(prefix) :] if ref.startswith(prefix) else None


def merge_base(repo: str | os.PathLike[str], a: str, b: str) -> str | None:
    result = git(repo, "merge-base", a, b, check=False)
    return result.stdout.strip() or None


def is_ancestor(repo: str | os.PathLike[str], ancestor: str, rev: str) -> bool:
    return git(repo, "merge-base", "--is-ancestor", ancestor, rev, check=False).returncode == 0


def commits_between(
    repo: str | os.PathLike[str], base: str, head: str
) -> list[tuple[str, str, str, str]]:
    """(sha, subject, body, "Author <email>") of the commits in base..head, oldest first."""
    fmt = "--format=%H%x1f%s%x1f%an <%ae>%x1f%b%x1e"
    text = out(repo, "log", "--reverse", fmt, f"{base}..{head}")
    commits = []
    for record in text.split("\x1e"):
        record = record.strip("\n")
        if not record.strip():
            continue
        sha, subject, author, body = (record.split("\x1f") + ["", "", ""])[:4]
        commits.append((sha.strip(), subject.strip(), body.strip(), author.strip()))
    return commits


def diff_name_status(repo: str | os.PathLike[str], a: str, b: str) -> list[tuple[str, str]]:
    """(status letter, path) for each file changed from a to b; renames give the new path."""
    rows = []
    for line in out(repo, "diff", "--name-status", "-M", a, b).splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            rows.append((parts[0][:1], parts[-1]))
    return rows


def diff_text(
    repo: str | os.PathLike[str], a: str, b: str, paths: Sequence[str] = (), *, context: int = 0
) -> str:
    args = ["diff", f"-U{context}", "--no-color", "--no-ext-diff", a, b]
    if paths:
        args += ["--", *paths]
    return git(repo, *args).stdout


def absolute_git_dir(repo: str | os.PathLike[str]) -> Path:
    return Path(out(repo, "rev-parse", "--absolute-git-dir"))


def push_branch(
    repo: str | os.PathLike[str],
    remote: str,
    branch: str,
    *,
    idle_timeout: float,
    on_line: Callable[[str], None] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> proc.Result:
    """`git push --progress --porcelain <remote> HEAD:refs/heads/<branch>` (no force;
    the caller reads a rejection in the output).

    Streamed, so each progress line reaches ``on_line`` and a remote that
    accepts the connection and then says nothing is stopped after
    ``idle_timeout`` seconds without output (``ProcTimeout``) instead of
    holding the terminal for as long as the OS keeps the socket open.
    The result's ``stdout`` holds stdout and stderr interleaved.
    """
    argv = ["git", "-C", os.fspath(repo), "push", "--progress", "--porcelain", remote]
    argv.append(f"HEAD:refs/heads/{branch}")
    return _stream_collect(argv, idle_timeout=idle_timeout, on_line=on_line, extra_env=extra_env)


def _stream_collect(
    argv: list[str],
    *,
    idle_timeout: float,
    on_line: Callable[[str], None] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> proc.Result:
    """``proc.stream`` that also keeps every line (stdout and stderr interleaved)
    as the result's ``stdout``."""
    lines: list[str] = []

    def take(line: str) -> None:
        lines.append(line)
        if on_line is not None:
            on_line(line)

    start = time.monotonic()
    rc = proc.stream(argv, on_line=take, env=proc.environ(extra_env), idle_timeout=idle_timeout)
    return proc.Result(tuple(argv), rc, "\n".join(lines), "", time.monotonic() - start)


# --- bisect ---


def git_dir(repo: str | os.PathLike[str]) -> Path:
    return Path(out(repo, "rev-parse", "--absolute-git-dir"))


# A work tree's git folder does not move while onboard runs: ask git once per folder.
_GIT_DIRS: dict[str, Path] = {}


def _cached_git_dir(repo: str | os.PathLike[str]) -> Path:
    key = os.path.realpath(repo)
    found = _GIT_DIRS.get(key)
    if found is None or not found.is_dir():
        found = _GIT_DIRS[key] = git_dir(repo)
    return found


def bisect_in_progress(repo: str | os.PathLike[str]) -> bool:
    # git itself decides "bisecting" from BISECT_START (git-bisect.sh / builtin/bisect.c),
    # kept in the work tree's own git folder (per worktree, like HEAD).
    return (_cached_git_dir(repo) / "BISECT_START").exists()


def head_state(repo: str | os.PathLike[str]) -> tuple[str | None, str | None]:
    """(HEAD's sha, its branch or None when detached) in one git call."""
    result = git(repo, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD", check=False)
    lines = result.stdout.split()
    if result.returncode != 0 or len(lines) != 2:
        return head_sha(repo), current_branch(repo)  # no commit yet: ask the long way
    sha, ref = lines
    return sha, ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None


def bisect_start(
    repo: str | os.PathLike[str],
    new: str | None = None,
    old: str | None = None,
    *,
    first_parent: bool,
    term_old: str | None = None,
    term_new: str | None = None,
) -> proc.Result:
    """``git bisect start``; without bounds it waits for them (marked one by one later)."""
    args = ["bisect", "start"]
    if term_old and term_new:
        args += [f"--term-old={term_old}", f"--term-new={term_new}"]
    if first_parent:
        args.append("--first-parent")
    args += [r for r in (new, old) if r]
    return git(repo, *args, check=False, timeout=None)


def bisect_mark(repo: str | os.PathLike[str], term: str, rev: str | None = None) -> proc.Result:
    """``git bisect <term> [rev]``: the answer (next commit, or the result) is in stdout."""
    return git(repo, "bisect", term, *([rev] if rev else []), check=False, timeout=None)


def bisect_log(repo: str | os.PathLike[str]) -> str:
    return git(repo, "bisect", "log", check=False).stdout


def bisect_reset(repo: str | os.PathLike[str], target: str) -> proc.Result:
    return git(repo, "bisect", "reset", target, check=False, timeout=None)


def checkout_quiet(repo: str | os.PathLike[str], target: str, *, detach: bool = False) -> None:
    args = ["checkout", "-q"] + (["--detach"] if detach else []) + [target]
    git(repo, *args, timeout=None, what=f"`git checkout {target}`")


SUBMODULE_SYNC_IDLE_S = 300.0


def submodule_sync(
    repo: str | os.PathLike[str], *, idle_timeout: float = SUBMODULE_SYNC_IDLE_S
) -> proc.Result:
    """Check out the submodule commits the current commit pins (docs/pytorch-facts.md: Bisect).

    A pinned commit that is not local is fetched, so this waits on the
    network: ``--progress`` keeps output coming while git works, and a remote
    silent for ``idle_timeout`` seconds ends it as a failed result (exit 124).
    """
    argv = ["git", "-C", os.fspath(repo), "submodule", "update", "--init", "--recursive"]
    argv.append("--progress")
    try:
        result = _stream_collect(argv, idle_timeout=idle_timeout)
    except ProcTimeout as exc:
        why = f"{exc.message} (a submodule remote that never answers?)"
        return proc.Result(tuple(argv), 124, "", why, idle_timeout)
    # Callers read git's complaint from stderr, as with a captured run.
    return proc.Result(result.args, result.returncode, "", result.stdout, result.seconds)


def count_range(repo: str | os.PathLike[str], old: str, new: str, *, first_parent: bool) -> int:
    """How many commits ``old..new`` holds (along first parents when asked)."""
    args = ["rev-list", "--count"] + (["--first-parent"] if first_parent else [])
    return int(out(repo, *args, f"{old}..{new}") or "0")


def commit_fields(repo: str | os.PathLike[str], rev: str) -> dict[str, str]:
    """sha, subject, body, author, author_email, date (ISO 8601) of one commit."""
    fmt = "%H%x00%s%x00%an%x00%ae%x00%aI%x00%b"
    sha, subject, author, email, date, body = out(repo, "show", "-s", f"--format={fmt}", rev).split(
        "\x00", 5
    )
    return {
        "sha": sha,
        "subject": subject,
        "author": author,
        "author_email": email,
        "date": date,
        "body": body,
    }


def subject_of(repo: str | os.PathLike[str], rev: str) -> str:
    return out(repo, "show", "-s", "--format=%s", rev)


def files_touched(repo: str | os.PathLike[str], rev: str) -> list[str]:
    """``STATUS<TAB>path`` lines against the first parent (``--root`` for the first commit)."""
    args = ["diff-tree", "-r", "--no-commit-id", "--name-status", "-m", "--first-parent"]
    text = out(repo, *args, "--root", rev)
    return [ln for ln in text.splitlines() if ln.strip()]


# --- harvest ---
# `onboard harvest`: the `git grep` fallback when ripgrep is not installed, the
# status that keys its per-commit cache,
# and blame limited to the lines a user is shown (never the whole tree).


def grep_null(
    repo: str | os.PathLike[str], pattern: str, pathspecs: Sequence[str], *, timeout: float = 300
) -> str:
    """``git grep -n -z -I -E`` over tracked and untracked (not ignored) files.

    Output lines are ``path NUL line NUL text``; no match is an empty string.
    """
    result = git(
        repo,
        "grep",
        "--untracked",
        "-n",
        "-z",
        "-I",
        "--no-color",
        "-E",
        "-e",
        pattern,
        "--",
        *pathspecs,
        check=False,
        timeout=timeout,
    )
    if result.returncode not in (0, 1):
        raise OnboardError(
            f"`git grep` failed in {repo} (exit {result.returncode}): {result.stderr.strip()}",
            next_step="Check that the folder is a readable git checkout, or install ripgrep "
            "(`pip install ripgrep`), which onboard prefers.",
        )
    return result.stdout


def blame_porcelain(
    repo: str | os.PathLike[str],
    path: str,
    ranges: Sequence[tuple[int, int]],
    *,
    timeout: float = 120,
) -> str:
    """``git blame --porcelain -L a,b -L c,d -- path`` (one call per file)."""
    args = ["blame", "--porcelain"]
    for start, end in ranges:
        args += ["-L", f"{start},{end}"]
    args += ["--", path]
    return git(repo, *args, timeout=timeout, what=f"`git blame` of {path}").stdout


# --- transactions (onboard/transaction.py) ---


def snapshot(repo: str | os.PathLike[str]) -> dict[str, Any]:
    """HEAD (branch or detached sha), every ref and every stash entry."""
    refs: dict[str, str] = {}
    for line in out(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines():
        name, _, sha = line.partition(" ")
        if name and sha and name != "refs/stash":  # the stash's entries are listed below
            refs[name] = sha
    stash = git(repo, "log", "-g", "--format=%H", "refs/stash", check=False)
    return {
        "branch": current_branch(repo),
        "head": head_sha(repo),
        "refs": refs,
        "stash": stash.stdout.split() if stash.ok else [],
    }


def ref_value(repo: str | os.PathLike[str], ref: str) -> str | None:
    result = git(repo, "rev-parse", "--verify", "-q", ref, check=False)
    return result.stdout.strip() or None


def update_ref(repo: str | os.PathLike[str], ref: str, new: str, *, old: str | None = None) -> None:
    """Point ``ref`` at ``new``; with ``old``, only if it is there now (all zeros: absent)."""
    # --create-reflog: a tag or refs/onboard/* gets a reflog too, naming onboard.
    message = acting_as[-1] if acting_as else "onboard"
    args = ["update-ref", "--create-reflog", "-m", message, ref, new]
    git(repo, *args + ([old] if old is not None else []), what=f"updating {ref}")


def delete_ref(repo: str | os.PathLike[str], ref: str, old: str) -> None:
    """Delete ``ref`` only while it still points at ``old``."""
    git(repo, "update-ref", "-d", ref, old, what=f"deleting {ref}")


def checkout_detached_safe(repo: str | os.PathLike[str], rev: str) -> None:
    """``git checkout --detach REV`` without -f: git refuses rather than overwrite."""
    git(repo, "checkout", "-q", "--detach", rev, timeout=600, what=f"Checking out {rev[:12]}")


def merge_ff_only(repo: str | os.PathLike[str], rev: str) -> None:
    git(repo, "merge", "-q", "--ff-only", rev, timeout=600, what=f"Fast-forwarding to {rev[:12]}")


def stash_store(repo: str | os.PathLike[str], sha: str) -> None:
    git(repo, "stash", "store", "-m", "restored by onboard", sha, what="restoring a stash entry")


# --- new-op ---


def branch_exists(repo: str | os.PathLike[str], branch: str) -> bool:
    result = git(repo, "show-ref", "--verify", "-q", f"refs/heads/{branch}", check=False)
    return result.returncode == 0


def switch_new_branch(repo: str | os.PathLike[str], branch: str) -> str | None:
    """Create ``branch`` at HEAD and switch to it (the working tree is kept).

    A post-checkout hook's exit status becomes checkout's (githooks(5)): when
    git did switch and only the user's hook failed, its output is returned
    instead of an error, for the command to report."""
    result = git(repo, "checkout", "-q", "-b", branch, check=False)
    if result.returncode == 0:
        return None
    if current_branch(repo) == branch:
        return (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
    detail = (result.stderr or result.stdout).strip().splitlines()
    raise OnboardError(
        f"git could not create the branch {branch} in {repo}: "
        f"{detail[-1] if detail else f'exit status {result.returncode}'}",
        next_step=f"Run `git -C {repo} status` to see what is in the way, then run the "
        "command again.",
    )


def stage_paths(repo: str | os.PathLike[str], paths: Sequence[str]) -> None:
    git(repo, "add", "--", *paths, what="staging the scaffold")


def _identity_env(repo: str | os.PathLike[str]) -> dict[str, str]:
    """onboard's identity for a checkout that has none configured."""
    if out(repo, "config", "user.email", check=False):
        return {}
    return {
        "GIT_AUTHOR_NAME": "onboard",
        "GIT_AUTHOR_EMAIL": "onboard@localhost",
        "GIT_COMMITTER_NAME": "onboard",
        "GIT_COMMITTER_EMAIL": "onboard@localhost",
    }


def commit_index(repo: str | os.PathLike[str], message: str) -> str:
    """A commit of the index on top of HEAD, without moving any ref (the caller does)."""
    tree = out(repo, "write-tree", what="writing the index as a tree")
    parent = head_sha(repo)
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    return out(repo, *args, extra_env=_identity_env(repo), what="committing the scaffold")


def tree_matches_head(repo: str | os.PathLike[str]) -> bool:
    """No tracked file differs from HEAD, in the index or the work tree (one cheap call)."""
    return git(repo, "diff-index", "--quiet", "HEAD", "--", check=False).returncode == 0


def tracked_changes(repo: str | os.PathLike[str]) -> list[str]:
    """`git status --porcelain` lines for tracked files only (what a checkout would lose)."""
    return status_porcelain(repo, untracked=False)


def unshallow(
    repo: str | os.PathLike[str],
    *,
    idle_timeout: float | None = None,
    on_line: Callable[[str], None] | None = None,
) -> int:
    """``git fetch --unshallow origin``: the whole history of a shallow clone."""
    return proc.stream(
        ["git", "-C", os.fspath(repo), "fetch", "--unshallow", "--no-tags", "origin"],
        on_line=on_line or (lambda _line: None),
        idle_timeout=idle_timeout,
    )


# --- ab ---
# `onboard ab --b commit:REV`: that commit's files in a temporary worktree, removed after.


def worktree_add(repo: str | os.PathLike[str], path: Path, sha: str) -> None:
    git(
        repo,
        "worktree",
        "add",
        "--detach",
        "--quiet",
        os.fspath(path),
        sha,
        timeout=600,
        what=f"checking out {sha[:12]} in a temporary worktree",
    )


def worktree_remove(repo: str | os.PathLike[str], path: Path) -> None:
    """Remove a worktree this run added (its folder and git's record of it)."""
    import shutil

    if git(repo, "worktree", "remove", "--force", os.fspath(path), check=False).returncode:
        shutil.rmtree(path, ignore_errors=True)
        git(repo, "worktree", "prune", check=False)


def worktrees(repo: str | os.PathLike[str]) -> list[Path]:
    lines = out(repo, "worktree", "list", "--porcelain").splitlines()
    return [Path(ln[len("worktree ") :]) for ln in lines if ln.startswith("worktree ")]
