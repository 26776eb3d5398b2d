"""The git adapter: small named functions, plain types out.

Plumbing goes through ``proc.run(["git", ...])`` (argument lists, no prompts);
GitPython is used where it adds something (fetch progress) and is imported
lazily so the CLI starts without it. Each command's helpers are grouped under
a header comment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from onboard import proc
from onboard.errors import BadInput, OnboardError


def git(
    repo: str | os.PathLike[str] | None,
    *args: str,
    check: bool = True,
    timeout: float | None = 120,
    extra_env: Mapping[str, str] | None = None,
    what: str | None = None,
    next_step: str | None = None,
) -> proc.Result:
    argv: list[str] = ["git"]
    if repo is not None:
        argv += ["-C", os.fspath(repo)]
    argv += list(args)
    return proc.run(
        argv,
        check=check,
        timeout=timeout,
        extra_env=extra_env,
        what=what or f"`git {args[0] if args else ''}`",
        next_step=next_step,
    )


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
    args = ["status", "--porcelain=v1"]
    if not untracked:
        args.append("--untracked-files=no")
    return [ln for ln in out(repo, *args).splitlines() if ln.strip()]


def is_dirty(repo: str | os.PathLike[str], *, untracked: bool = False) -> bool:
    return bool(status_porcelain(repo, untracked=untracked))


def rev_parse(repo: str | os.PathLike[str], rev: str) -> str | None:
    result = git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    return result.stdout.strip() or None


def changed_files(repo: str | os.PathLike[str], a: str, b: str) -> list[str]:
    return [p for p in out(repo, "diff", "--name-only", a, b).splitlines() if p]


def log_subjects(repo: str | os.PathLike[str], revs: Sequence[str]) -> list[str]:
    return out(repo, "log", "--format=%s", *revs).splitlines()


# --- setup ---
# `onboard setup`: a fresh repository holding exactly one commit (PYTORCH_FACTS:
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


def commit_count(repo: str | os.PathLike[str], rev: str = "HEAD") -> int:
    return int(out(repo, "rev-list", "--count", rev))


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
    extra_env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> proc.Result:
    """`git push <remote> HEAD:refs/heads/<branch>` (no force; the caller reads a rejection)."""
    return git(
        repo,
        "push",
        "--porcelain",
        remote,
        f"HEAD:refs/heads/{branch}",
        check=False,
        timeout=timeout,
        extra_env=extra_env,
        what=f"`git push {remote}`",
    )


# --- bisect ---


def git_path(repo: str | os.PathLike[str], name: str) -> Path:
    """Where git keeps ``name`` (``BISECT_START``, ``index.lock``) for this worktree."""
    rel = out(repo, "rev-parse", "--git-path", name)
    path = Path(rel)
    return path if path.is_absolute() else Path(repo) / path


def git_dir(repo: str | os.PathLike[str]) -> Path:
    return Path(out(repo, "rev-parse", "--absolute-git-dir"))


def bisect_in_progress(repo: str | os.PathLike[str]) -> bool:
    # git itself decides "bisecting" from BISECT_START (git-bisect.sh / builtin/bisect.c).
    return git_path(repo, "BISECT_START").exists()


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
    args = ["bisect", term] + ([rev] if rev else [])
    return git(repo, *args, check=False, timeout=None)


def bisect_log(repo: str | os.PathLike[str]) -> str:
    return git(repo, "bisect", "log", check=False).stdout


def bisect_reset(repo: str | os.PathLike[str], target: str) -> proc.Result:
    return git(repo, "bisect", "reset", target, check=False, timeout=None)


def checkout_quiet(repo: str | os.PathLike[str], target: str, *, detach: bool = False) -> None:
    args = ["checkout", "-q"] + (["--detach"] if detach else []) + [target]
    git(repo, *args, timeout=None, what=f"`git checkout {target}`")


def reset_hard(repo: str | os.PathLike[str]) -> None:
    git(repo, "reset", "-q", "--hard", "HEAD", timeout=None, what="`git reset --hard`")


def submodule_sync(repo: str | os.PathLike[str]) -> proc.Result:
    """Check out the submodule commits the current commit pins (PYTORCH_FACTS: Bisect)."""
    return git(repo, "submodule", "update", "--init", "--recursive", check=False, timeout=None)


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


def status_v2(
    repo: str | os.PathLike[str], *, timeout: float = 120
) -> tuple[str | None, list[str]] | None:
    """(HEAD sha, changed or untracked paths) from ``git status --porcelain=v2 -z``.

    Paths are relative to the top of the work tree; renames come as a delete
    and an add. None when git cannot say (not a repository, git failed).
    """
    result = git(
        repo,
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=dirty",
        check=False,
        timeout=timeout,
    )
    if result.returncode != 0:
        return None
    head: str | None = None
    paths: list[str] = []
    for entry in result.stdout.split("\0"):
        if entry.startswith("# branch.oid "):
            oid = entry.split()[2]
            head = oid if oid != "(initial)" else None
        elif entry.startswith(("1 ", "u ")):
            # "1 XY sub mH mI mW hH hI path" / "u XY sub m1 m2 m3 mW h1 h2 h3 path"
            fields = 9 if entry[0] == "1" else 11
            parts = entry.split(" ", fields - 1)
            if len(parts) == fields:
                paths.append(parts[-1])
        elif entry.startswith("? "):
            paths.append(entry[2:])
    return head, paths


# --- new-op ---


def branch_exists(repo: str | os.PathLike[str], branch: str) -> bool:
    result = git(repo, "show-ref", "--verify", "-q", f"refs/heads/{branch}", check=False)
    return result.returncode == 0


def switch_new_branch(repo: str | os.PathLike[str], branch: str) -> None:
    """Create ``branch`` at HEAD and switch to it (the working tree is kept)."""
    git(repo, "checkout", "-q", "-b", branch, what=f"creating branch {branch}")


def stage_paths(repo: str | os.PathLike[str], paths: Sequence[str]) -> None:
    git(repo, "add", "--", *paths, what="staging the scaffold")


def commit_staged(repo: str | os.PathLike[str], message: str) -> str:
    """Commit the index; a checkout without a configured identity gets onboard's."""
    extra: dict[str, str] = {}
    if not out(repo, "config", "user.email", check=False):
        extra = {
            "GIT_AUTHOR_NAME": "onboard",
            "GIT_AUTHOR_EMAIL": "onboard@localhost",
            "GIT_COMMITTER_NAME": "onboard",
            "GIT_COMMITTER_EMAIL": "onboard@localhost",
        }
    git(
        repo,
        "commit",
        "-q",
        "--no-verify",
        "-m",
        message,
        extra_env=extra,
        what="committing the scaffold",
    )
    sha = head_sha(repo)
    assert sha is not None
    return sha


def restore_checkout(repo: str | os.PathLike[str], branch: str | None, sha: str | None) -> None:
    """Back to ``branch`` (or the detached ``sha``) with index and tracked files as committed."""
    if branch:
        git(repo, "checkout", "-q", "-f", branch, what=f"switching back to {branch}")
    elif sha:
        git(repo, "checkout", "-q", "-f", "--detach", sha, what=f"switching back to {sha[:12]}")
    git(repo, "reset", "-q", what="resetting the index")


def delete_branch(repo: str | os.PathLike[str], branch: str) -> None:
    git(repo, "branch", "-q", "-D", branch, check=False)


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
