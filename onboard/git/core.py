"""The one door to git: every git command onboard runs goes through ``git`` (run whole),
``start`` (started now, read later) or ``stream`` (a network command, line by line).

Through it, each command:

- is told to the open transactions (``journalling.git_journals``: each journals
  those that delete refs or stash entries, see onboard/transaction/);
- carries the innermost open transaction's name for git's reflog
  (``journalling.reflog_name``), so the transaction's audit tells onboard's moves
  from the user's;
- takes no optional lock when it only reads (GIT_OPTIONAL_LOCKS=0, as `git
  --no-optional-locks`): `git status` then never refreshes and writes back the
  index, which takes ``index.lock`` while another writer (the user's git, or
  onboard's) may need it;
- refused for a lock file, says which file, who holds it and the one next step.

git takes ``index.lock`` (and ``<ref>.lock``, ``config.lock``, ...) for each
write, and refuses to start one while the file exists: "Unable to create
'.../index.lock': File exists ... remove the file manually to continue",
without saying whether a git is still running. ``locked`` names the file, the
git process holding it when one runs in that repository (from Linux's /proc: a
git whose working folder is in the repository), and the one next step: wait
for it, or, when no git runs there, remove that exact file.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from onboard import journalling, proc, signals
from onboard.errors import ProcError, ProcTimeout

PathLike = str | os.PathLike[str]


def git(
    repo: PathLike | None,
    *args: str,
    check: bool = True,
    timeout: float | None = 120,
    extra_env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    what: str | None = None,
    next_step: str | None = None,
    whole: bool = True,
) -> proc.Result:
    """One git command, run to its end. ``whole``: Ctrl-C and SIGTERM wait until it
    ends (``signals.critical``), because a git killed halfway through a checkout
    leaves ``index.lock`` and a half-written tree; a read that may take minutes
    (blame, a history walk) passes False and stops at once."""
    args, env = _prepare(repo, args, extra_env)
    what = what or f"`git {args[0] if args else ''}`"
    argv = ["git", *(["-C", os.fspath(repo)] if repo is not None else []), *args]
    with signals.critical() if whole else contextlib.nullcontext():
        try:
            return proc.run(
                argv, check=check, timeout=timeout, extra_env=env, input=input, what=what,
                next_step=next_step,
            )  # fmt: skip
        except ProcTimeout:
            raise
        except ProcError as exc:
            raise explained(exc, what=what, cwd=repo, next_step=next_step) from None


def out(repo: PathLike | None, *args: str, **kwargs: object) -> str:
    return git(repo, *args, **kwargs).stdout.strip()  # type: ignore[arg-type]


def start(repo: PathLike, *args: str, timeout: float | None, what: str) -> proc.Running:
    """``git ARGS`` started now, its result read later (``proc.Running.result()``). Not
    whole: a command started ahead only reads (``git status``)."""
    args, env = _prepare(repo, args, None)
    argv = ["git", "-C", os.fspath(repo), *args]
    return proc.start(argv, check=False, timeout=timeout, what=what, extra_env=env)


def stream(
    repo: PathLike,
    *args: str,
    on_line: Callable[[str], None] | None = None,
    idle_timeout: float | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> int:
    """A network command (fetch, push, submodule update) whose output comes line by
    line to ``on_line``, stopped after ``idle_timeout`` seconds without any
    (``ProcTimeout``): a server that hangs must not hold the terminal. Its refs
    are remote-tracking ones, which git names itself (no reflog name of onboard's)."""
    args, guard = none_of_their_programs(repo, tuple(args), extra_env)
    for tx in journalling.git_journals():
        tx.before_git(repo, list(args))
    env = proc.environ({**read_only_env(args), **(extra_env or {}), **guard})
    argv = ["git", "-C", os.fspath(repo), *args]
    return proc.stream(
        argv, on_line=on_line or (lambda _line: None), env=env, idle_timeout=idle_timeout
    )


def _prepare(
    repo: PathLike | None, args: Sequence[str], extra_env: Mapping[str, str] | None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The arguments and environment of one command, told to the open transactions."""
    args = tuple(args)
    name = journalling.reflog_name()
    if name is not None:
        # Every ref this run moves carries onboard's name in its reflog (porcelain
        # commands read GIT_REFLOG_ACTION; plumbing's update-ref takes -m): the
        # transaction's audit tells onboard's moves from the user's by it.
        extra_env = {"GIT_REFLOG_ACTION": name, **(extra_env or {})}
        if args and args[0] == "update-ref" and "-m" not in args:
            args = ("update-ref", "-m", name, *args[1:])
    args, guard = none_of_their_programs(repo, args, extra_env)
    for tx in journalling.git_journals():
        tx.before_git(repo, list(args))
    # (guard last: its count includes the settings extra_env gives, after them)
    return args, {**read_only_env(args), **(extra_env or {}), **guard}


# --- reading takes no lock ------------------------------------------------------

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


# --- reading runs none of the repository's programs ------------------------------

# A repository's own .git/config can name programs git runs on its behalf: a
# core.fsmonitor hook (run by every command that reads the work tree), the clean and
# smudge filters of `[filter "X"]` (run to compare or check out a file whose
# attributes name X), diff.external and a diff driver's command or textconv (run by
# the porcelain diff, log and show). A command that only reads a repository someone
# handed it (`harvest --repo`, `blame --offline`, `pr`'s dry run) must run none of
# them: every git command runs with core.fsmonitor off; reads, checkouts and bisect's
# steps also with the filters that repository's config defines switched off, and the
# diff family with --no-ext-diff --no-textconv. Hooks are not touched (docs/safety.md).
_CHECKOUTS = frozenset({"checkout", "switch", "bisect"})
_DIFF_FAMILY = frozenset({"diff", "log", "show"})
_FILTER_SECTION = re.compile(
    r'^\s*\[\s*filter\s+"(?P<quoted>(?:[^"\\]|\\.)*)"\s*\]|^\s*\[\s*filter\.(?P<dotted>[^\]\s]+)\s*\]',
    re.IGNORECASE | re.MULTILINE,
)
_FILTERS: dict[str, tuple[int, tuple[str, ...]]] = {}


def none_of_their_programs(
    repo: PathLike | None, args: tuple[str, ...], extra_env: Mapping[str, str] | None = None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """``args`` and the environment (git's GIT_CONFIG_COUNT form of ``-c``, so the
    command line stays as written) under which ``git ARGS`` runs none of the programs
    the repository's config names (above)."""
    words = [i for i, a in enumerate(args) if not a.startswith("-") and args[i - 1 : i] != ["-c"]]
    first = args[words[0]] if words else ""
    settings = [("core.fsmonitor", "false")]
    reads = bool(read_only_env(args))
    if repo is not None and (reads or first in _CHECKOUTS):
        for name in local_filters(repo):
            settings += [(f"filter.{name}.{key}", "") for key in ("clean", "smudge", "process")]
            settings.append((f"filter.{name}.required", "false"))
    if first in _DIFF_FAMILY:
        at = words[0] + 1
        args = (*args[:at], "--no-ext-diff", "--no-textconv", *args[at:])
    elif first == "blame":
        at = words[0] + 1
        args = (*args[:at], "--no-textconv", *args[at:])
    env = {**os.environ, **(extra_env or {})}
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    except ValueError:
        count = 0
    guard = {"GIT_CONFIG_COUNT": str(count + len(settings))}
    for i, (key, value) in enumerate(settings, start=count):
        guard[f"GIT_CONFIG_KEY_{i}"] = key
        guard[f"GIT_CONFIG_VALUE_{i}"] = value
    return args, guard


def local_filters(repo: PathLike) -> tuple[str, ...]:
    """The filter drivers the repository's own config file defines (``[filter "X"]``),
    read from the file (no git process), again only when it changed."""
    config = _config_file(Path(repo))
    if config is None:
        return ()
    try:
        mtime = config.stat().st_mtime_ns
        known = _FILTERS.get(str(config))
        if known is not None and known[0] == mtime:
            return known[1]
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    names = tuple(
        sorted(
            {(m.group("quoted") or m.group("dotted") or "") for m in _FILTER_SECTION.finditer(text)}
        )
    )
    _FILTERS[str(config)] = (mtime, tuple(n.replace('\\"', '"') for n in names if n))
    return _FILTERS[str(config)][1]


def _config_file(start: Path) -> Path | None:
    """The config file of the repository around ``start`` (a linked worktree's is its
    main repository's), found as git does, by walking up to ``.git``."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot / "config"
        if dot.is_file():
            try:
                line = dot.read_text(encoding="utf-8").strip()
            except OSError:
                return None
            gitdir = Path(line.removeprefix("gitdir:").strip())
            gitdir = gitdir if gitdir.is_absolute() else folder / gitdir
            common = gitdir / "commondir"
            if common.is_file():
                try:
                    rel = common.read_text(encoding="utf-8").strip()
                except OSError:
                    return None
                gitdir = gitdir / rel if not Path(rel).is_absolute() else Path(rel)
            return gitdir / "config"
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir():
            return folder / "config"  # a bare repository, or a git folder itself
    return None


# --- a refusal names the lock file in the way ------------------------------------

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
    lock = Path(mo.group("path"))
    if not lock.is_absolute():
        lock = Path(cwd or ".") / lock
    message, next_step = _lock_said(lock, what)
    error = GitLocked(
        message, args=failed.cmd, returncode=failed.returncode, stdout=failed.stdout,
        stderr=failed.stderr, next_step=next_step,
    )  # fmt: skip
    error.lock = lock
    return error


def _lock_said(lock: Path, what: str) -> tuple[str, str]:
    """(message, next step) for a git refused by ``lock``: who holds it, or that nobody
    does (then: remove that exact file)."""
    import shlex

    holders = list(_holders(lock))
    if holders:
        pid, command = holders[0]
        return (
            f"{what} could not run: another git command holds the lock file {lock} "
            f"(pid {pid}: `{command}`).",
            f"Wait for that git (pid {pid}) to finish, then run the command again. Do not "
            "remove the lock file while it runs.",
        )
    if not lock.exists():
        return (
            f"{what} could not run: another git command held the lock file {lock} at that "
            "moment (it is free now).",
            "Run the command again.",
        )
    return (
        f"{what} could not run: the lock file {lock} exists, and no git process is "
        "running in that repository, so a git that crashed or was killed left it.",
        f"No git process holds it: remove that file (`rm -f {shlex.quote(str(lock))}`) "
        "and run the command again.",
    )


# --- git's whole error, its cause and the next step --------------------------------

_DUBIOUS = re.compile(r"detected dubious ownership in repository at '(?P<path>[^'\n]+)'")
_SPARSE = "outside of your sparse-checkout definition"


def said(stderr: str) -> str:
    """What git said went wrong, without its advice: the ``fatal:``/``error:`` lines (or,
    when there are none, every line but the ``hint:`` ones), joined. git's last line
    is often advice ("Disable this message with ...", "remove the file manually to
    continue."), never the cause."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    kept = errors or [ln for ln in lines if not ln.startswith("hint:")]
    return " ".join(kept) or "(no output)"


def cause(stderr: str, *, what: str, cwd: PathLike | None) -> tuple[str, str] | None:
    """(message, next step) for a git failure whose cause onboard can name: a lock
    file in the way, a repository another user owns (git's ``safe.directory`` check),
    paths outside a sparse checkout. None for any other."""
    import shlex

    dubious = _DUBIOUS.search(stderr)
    if dubious is not None:
        path = dubious.group("path")
        return (
            f"{what} could not run: git refuses to work in {path} because another user "
            "owns it (git's check against dubious ownership; see `git help config`, "
            "safe.directory).",
            "If you trust that repository, mark it safe with `git config --global --add "
            f"safe.directory {shlex.quote(path)}` and run the command again, or run it "
            "as the user who owns the repository.",
        )
    if _SPARSE in stderr:
        lines = [ln.strip() for ln in stderr.splitlines()]
        start = next((i for i, ln in enumerate(lines) if ln.startswith("updated in the")), -1)
        paths = [ln for ln in lines[start + 1 :] if ln and not ln.startswith("hint:")]
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        where = f" ({shown})" if shown else ""
        return (
            f"{what} could not run: the repository is a sparse checkout, and the paths it "
            f"needs{where} are outside its sparse-checkout definition.",
            "Add their folders to the checkout (`git sparse-checkout add FOLDER`, or "
            "`git sparse-checkout disable` for the whole tree) and run the command again.",
        )
    mo = _LOCKED.search(stderr)
    if mo is None:
        return None
    lock = Path(mo.group("path"))
    if not lock.is_absolute():
        lock = Path(cwd or ".") / lock
    return _lock_said(lock, what)


def explained(
    failed: ProcError, *, what: str, cwd: PathLike | None, next_step: str | None = None
) -> ProcError:
    """``failed`` (a git command, ``what``) said with git's whole error: its cause and
    the next step where onboard can name them (``cause``; a lock file in the way is a
    ``GitLocked``), else git's error lines instead of its last line of advice."""
    found = locked(failed, what=what, cwd=cwd)
    if found is not failed:
        return found
    named = cause(failed.stderr, what=what, cwd=cwd)
    if named is None:
        message = (
            f"{what} failed (exit {failed.returncode}): {said(failed.stderr or failed.stdout)}"
        )
        next_step = next_step or failed.next_step
    else:
        message, next_step = named
    return ProcError(
        message, args=failed.cmd, returncode=failed.returncode, stdout=failed.stdout,
        stderr=failed.stderr, next_step=next_step,
    )  # fmt: skip


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
