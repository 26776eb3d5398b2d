"""Remotes and what comes over the network: fetch (with progress), push, the
submodules a commit pins, and deepening a shallow clone.

A network command can hang on a silent server, so each is streamed (``core.stream``)
and stopped after an idle timeout instead of holding the terminal.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from onboard import proc
from onboard.errors import ProcTimeout
from onboard.git import core, repository
from onboard.git.core import PathLike

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


def fetch_with_progress(
    repo: PathLike,
    remote: str,
    refspec: str,
    *,
    depth: int | None = 1,
    on_progress: Callable[[FetchProgress], None] | None = None,
    idle_timeout: float | None = None,
) -> FetchOutcome:
    """``git fetch --progress`` parsed by GitPython's ``RemoteProgress``.

    Streamed (``core.stream``), so a silent server is stopped after
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
    args = ["fetch", "--progress", "--no-tags"]
    if depth is not None:
        args += ["--depth", str(depth)]
    args += [remote, refspec]
    rc = core.stream(repo, *args, on_line=handler, idle_timeout=idle_timeout)
    return FetchOutcome(
        rc,
        tuple(progress.error_lines),
        tuple(progress.other_lines),
        int(state["objects"] or 0),
        state["bytes"],
    )


def add_remote(repo: PathLike, name: str, url: str) -> None:
    core.git(repo, "remote", "add", name, url, what="`git remote add`")


def remote_url(repo: PathLike, name: str = "origin") -> str | None:
    result = core.git(repo, "remote", "get-url", name, check=False)
    return result.stdout.strip() or None


# github.com/OWNER/NAME in an https, ssh:// or scp-like (git@github.com:OWNER/NAME) URL.
_GITHUB_URL = re.compile(
    r"^(?:[a-z+]+://)?(?:[^@/]+@)?(?:www\.)?github\.com(?::\d+)?[:/]+"
    r"(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/*$",
    re.IGNORECASE,
)


def github_repo(repo: PathLike) -> str | None:
    """OWNER/NAME of the repository's own GitHub remote: ``upstream``, else ``origin``,
    else the only remote on github.com; None when no remote is on GitHub (no remote, a
    local path, another host): a number like ``(#1013)`` then names no pull request
    onboard can link."""
    found = {
        name: f"{mo.group('owner')}/{mo.group('name')}"
        for name, url in remotes(repo).items()
        if (mo := _GITHUB_URL.match(url.strip()))
    }
    for name in ("upstream", "origin"):
        if name in found:
            return found[name]
    return next(iter(found.values())) if len(set(found.values())) == 1 else None


def remotes(repo: PathLike) -> dict[str, str]:
    """Remote name -> fetch URL (as configured; may carry userinfo: redact before showing)."""
    names = [n for n in core.out(repo, "remote").splitlines() if n.strip()]
    found: dict[str, str] = {}
    for name in names:
        result = core.git(repo, "remote", "get-url", name, check=False)
        if result.returncode == 0:
            found[name] = result.stdout.strip()
    return found


def remote_head_branch(repo: PathLike, remote: str) -> str | None:
    """The branch `refs/remotes/<remote>/HEAD` points at (the remote's default), if recorded."""
    result = core.git(repo, "symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD", check=False)
    ref = result.stdout.strip()
    prefix = f"refs/remotes/{remote}/"
    return ref[len(prefix) :] if ref.startswith(prefix) else None


def unshallow(
    repo: PathLike,
    *,
    idle_timeout: float | None = None,
    on_line: Callable[[str], None] | None = None,
) -> int:
    """``git fetch --unshallow origin``: the whole history of a shallow clone."""
    args = ["fetch", "--unshallow", "--no-tags", "origin"]
    return core.stream(repo, *args, on_line=on_line, idle_timeout=idle_timeout)


def push_branch(
    repo: PathLike,
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
    args = ["push", "--progress", "--porcelain", remote, f"HEAD:refs/heads/{branch}"]
    return _stream_collect(
        repo, args, idle_timeout=idle_timeout, on_line=on_line, extra_env=extra_env
    )


def _stream_collect(
    repo: PathLike,
    args: list[str],
    *,
    idle_timeout: float,
    on_line: Callable[[str], None] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> proc.Result:
    """``core.stream`` that also keeps every line (stdout and stderr interleaved)
    as the result's ``stdout``."""
    lines: list[str] = []

    def take(line: str) -> None:
        lines.append(line)
        if on_line is not None:
            on_line(line)

    start = time.monotonic()
    argv = ("git", "-C", str(repo), *args)
    rc = core.stream(repo, *args, on_line=take, idle_timeout=idle_timeout, extra_env=extra_env)
    return proc.Result(argv, rc, "\n".join(lines), "", time.monotonic() - start)


def submodule_update(
    repo: PathLike,
    *,
    depth: int | None = 1,
    jobs: int = 4,
    paths: Sequence[str] = (),
    on_line: Callable[[str], None] | None = None,
    idle_timeout: float | None = None,
) -> int:
    """``git submodule update --init --recursive [--depth 1] --jobs N [-- paths]``."""
    args = ["submodule", "update", "--init", "--recursive"]
    if depth is not None:
        args += ["--depth", str(depth)]
    args += ["--jobs", str(jobs)]
    if paths:
        args += ["--", *paths]
    return core.stream(repo, *args, on_line=on_line, idle_timeout=idle_timeout)


def submodule_status(repo: PathLike) -> list[tuple[str, str, str]]:
    """Top-level submodules as (state, sha, path); state '-' uninitialized, '+' wrong
    commit, 'U' conflict, ' ' checked out at the pinned sha."""
    result = core.git(repo, "submodule", "status", check=False, timeout=300)
    rows = []
    for line in result.stdout.splitlines():
        if len(line) < 42:
            continue
        state, rest = line[0], line[1:].split()
        if len(rest) >= 2:
            rows.append((state, rest[0], rest[1]))
    return rows


SUBMODULE_SYNC_IDLE_S = 300.0


def submodule_sync(repo: PathLike, *, idle_timeout: float = SUBMODULE_SYNC_IDLE_S) -> proc.Result:
    """Check out the submodule commits the current commit pins (docs/pytorch-facts.md: Bisect).

    A pinned commit that is not local is fetched, so this waits on the
    network: ``--progress`` keeps output coming while git works, and a remote
    silent for ``idle_timeout`` seconds ends it as a failed result (exit 124).
    """
    args = ["submodule", "update", "--init", "--recursive", "--progress"]
    try:
        result = _stream_collect(repo, args, idle_timeout=idle_timeout)
    except ProcTimeout as exc:
        why = f"{exc.message} (a submodule remote that never answers?)"
        return proc.Result(("git", "-C", str(repo), *args), 124, "", why, idle_timeout)
    # Callers read git's complaint from stderr, as with a captured run.
    return proc.Result(result.args, result.returncode, "", result.stdout, result.seconds)


# --- the blobless fetch (history for blame) ------------------------------------


@dataclass(frozen=True)
class FetchReport:
    returncode: int
    bytes_fetched: int
    last_lines: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.returncode == 0


_RECEIVING = re.compile(r"Receiving objects:\s+(\d+)% \((\d+)/(\d+)\)")


def fetch_history(
    repo: PathLike,
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
    before = repository.pack_bytes(repo)
    tail: list[str] = []

    def line(text: str) -> None:
        mo = _RECEIVING.search(text)
        if mo and on_progress is not None:
            on_progress(int(mo.group(2)), int(mo.group(3)))
        if text.strip():
            tail.append(text.strip())
            # The last lines, and git's error lines before them (its last lines are
            # often advice: "remove the file manually to continue.").
            errors = [ln for ln in tail[:-5] if ln.startswith(("fatal:", "error:"))]
            tail[:] = errors[-5:] + tail[-5:]
        if on_line is not None:
            on_line(text)

    args = [
        "fetch", "--progress", "--no-tags", "--no-write-fetch-head", "--filter=blob:none",
        f"--shallow-since={since}", remote, rev,
    ]  # fmt: skip
    rc = core.stream(repo, *args, on_line=line, idle_timeout=idle_timeout)
    return FetchReport(rc, max(0, repository.pack_bytes(repo) - before), tuple(tail))


def missing_blobs(repo: PathLike, path: str, rev: str = "HEAD") -> list[str]:
    """The versions of ``path`` in ``rev``'s history whose contents a partial clone
    lacks (``--missing=print`` lists them without fetching any)."""
    args = ["rev-list", "--objects", "--missing=print", rev, "--", path]
    listed = core.git(repo, *args, check=False, timeout=600, whole=False).stdout
    return [ln[1:].strip() for ln in listed.splitlines() if ln.startswith("?")]


def fetch_objects(repo: PathLike, remote: str, oids: Sequence[str]) -> int:
    """Fetch these objects from the promisor remote in one request (what git does for
    one missing object at a time when blame reads it); the exit status."""
    args = [
        "-c", "fetch.negotiationAlgorithm=noop", "fetch", remote, "--no-tags",
        "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin",
    ]  # fmt: skip
    wanted = "\n".join(oids) + "\n"
    done = core.git(
        repo, *args, input=wanted, check=False, timeout=900, what="`git fetch`", whole=False
    )
    return done.returncode
