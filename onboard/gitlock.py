"""git and its lock files: reading takes none, and a refusal names the one in the way.

A git command that only reads state runs with GIT_OPTIONAL_LOCKS=0 (as `git
--no-optional-locks`): `git status` then never refreshes and writes back the
index, which takes ``index.lock`` while another writer (the user's git, or
onboard's) may need it.

git takes ``index.lock`` (and ``<ref>.lock``, ``config.lock``, ...) for each
write, and refuses to start one while the file exists: "Unable to create
'.../index.lock': File exists ... remove the file manually to continue",
without saying whether a git is still running. This names the file, the git
process holding it when one runs in that repository (from Linux's /proc: a
git whose working folder is in the repository), and the one next step: wait
for it, or, when no git runs there, remove that exact file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from onboard.errors import ProcError

# git commands (and `worktree`, `bisect`, ... subcommands) that only read state.
_READS = frozenset({
    "status", "diff", "log", "show", "rev-parse", "rev-list", "ls-files", "ls-tree", "cat-file",
    "grep", "blame", "describe", "symbolic-ref", "for-each-ref", "show-ref", "merge-base",
    "name-rev", "diff-tree", "diff-index", "diff-files", "shortlog", "count-objects",
    "check-ignore", "check-attr", "var",
})  # fmt: skip
_READ_SUBCOMMANDS = frozenset({("worktree", "list"), ("bisect", "log"), ("remote", "get-url")})


def read_only_env(args: Sequence[str]) -> dict[str, str]:
    """The environment for ``git ARGS``: GIT_OPTIONAL_LOCKS=0 for a command that only
    reads."""
    words = [a for i, a in enumerate(args) if not a.startswith("-") and args[i - 1 : i] != ["-c"]]
    if words and (words[0] in _READS or tuple(words[:2]) in _READ_SUBCOMMANDS):
        return {"GIT_OPTIONAL_LOCKS": "0"}
    return {}


_LOCKED = re.compile(r"Unable to create '(?P<path>[^'\n]+\.lock)': File exists")


class GitLocked(ProcError):
    """A git command could not take a lock file another git holds (or left)."""

    lock: Path


def locked(failed: ProcError, *, what: str, cwd: str | os.PathLike[str] | None) -> ProcError:
    """``failed`` (a git command, ``what``) said so a user can act on it when a lock file
    was in the way; else ``failed`` itself."""
    mo = _LOCKED.search(failed.stderr)
    if mo is None:
        return failed
    import shlex

    lock = Path(mo.group("path"))
    if not lock.is_absolute():
        lock = Path(cwd or ".") / lock
    holders = list(_holders(lock))
    if holders:
        pid, command = holders[0]
        message = (
            f"{what} could not run: another git command holds the lock file {lock} "
            f"(pid {pid}: `{command}`)."
        )
        next_step = (
            f"Wait for that git (pid {pid}) to finish, then run the command again. Do not "
            "remove the lock file while it runs."
        )
    elif not lock.exists():
        message = (
            f"{what} could not run: another git command held the lock file {lock} at that "
            "moment (it is free now)."
        )
        next_step = "Run the command again."
    else:
        message = (
            f"{what} could not run: the lock file {lock} exists, and no git process is "
            "running in that repository, so a git that crashed or was killed left it."
        )
        next_step = (
            f"No git process holds it: remove that file (`rm -f {shlex.quote(str(lock))}`) "
            "and run the command again."
        )
    error = GitLocked(
        message, args=failed.cmd, returncode=failed.returncode, stdout=failed.stdout,
        stderr=failed.stderr, next_step=next_step,
    )  # fmt: skip
    error.lock = lock
    return error


def _repository_dirs(lock: Path) -> list[Path]:
    """The folders a git working on the lock's repository runs in: its git folder, the
    main work tree and each linked work tree."""
    common = next(
        (d for d in lock.parents if (d / "HEAD").is_file() and (d / "objects").is_dir()), None
    )
    if common is None:
        return [lock.parent]
    found = [common]
    if common.name == ".git":
        found.append(common.parent)
    admin = common / "worktrees"
    for gitdir in admin.glob("*/gitdir") if admin.is_dir() else ():
        try:
            found.append(Path(gitdir.read_text(encoding="utf-8").strip()).parent)
        except OSError:
            continue
    return found


def _holders(lock: Path) -> Iterator[tuple[int, str]]:
    """(pid, command line) of the git processes working in the lock's repository."""
    import shlex

    dirs = [os.path.realpath(d) for d in _repository_dirs(lock)]
    try:
        names = os.listdir("/proc")
    except OSError:
        return  # no /proc: nobody can be named
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                words = [w.decode("utf-8", "replace") for w in fh.read().split(b"\0") if w]
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue  # gone, or not ours to look at
        if not words or not os.path.basename(words[0]).startswith("git"):
            continue
        if any(cwd == d or cwd.startswith(d + os.sep) for d in dirs):
            yield int(name), shlex.join(words)
