"""One writer at a time in a workspace (or a repository outside one).

The lock is an advisory ``flock`` on a file (``WS/.onboard/lock``, or
``<git dir>/onboard.lock`` for a repository that is not a workspace
checkout). The kernel drops it when its holder dies, whatever the signal
(SIGKILL included), so a lock is never stale; the file's text only says who
holds it, for the refusal a second writer prints.

A second writer waits a little (``ONBOARD_LOCK_WAIT`` seconds, default 10)
and then refuses with the holder's pid and command. Work the holder starts
(``onboard verify`` running the workspace's ``nox -s verify``, which locks
too) runs inside the holder's lock: the holder names its lock in the
environment, with a token the child checks against the file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard.errors import BadInput, OnboardError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, no lock
    fcntl = None  # type: ignore[assignment]

DEFAULT_WAIT = 10.0
_ENV_HELD = "ONBOARD_HELD_LOCKS"  # "path=token" entries of ancestors, os.pathsep-separated


class LockBusy(OnboardError):
    """Another onboard process is writing here."""


@dataclass
class Held:
    path: Path
    token: str
    fd: int | None  # None: held by an ancestor process, or re-entered in this one
    remove_on_release: bool = False


# Locks this process holds: path -> [Held, depth]
_held: dict[Path, list[Any]] = {}


def wait_seconds() -> float:
    raw = os.environ.get("ONBOARD_LOCK_WAIT", "")
    try:
        return max(0.0, float(raw)) if raw.strip() else DEFAULT_WAIT
    except ValueError:
        return DEFAULT_WAIT


def _ancestor_token(path: Path) -> str | None:
    for entry in os.environ.get(_ENV_HELD, "").split(os.pathsep):
        name, sep, token = entry.rpartition("=")
        if sep and Path(name) == path:
            return token
    return None


def holder(path: Path) -> dict[str, Any]:
    """Who holds (or last held) the lock: {pid, command, since, token}; {} if unknown."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _busy(path: Path, what: str) -> LockBusy:
    info = holder(path)
    pid = info.get("pid", "?")
    command = info.get("command") or "onboard"
    since = info.get("since")
    when = f", since {time.strftime('%H:%M:%S', time.localtime(since))}" if since else ""
    return LockBusy(
        f"Another onboard is working in {what} (pid {pid}: `{command}`{when}); onboard runs "
        "one writing command at a time there, so this one changed nothing.",
        next_step="Wait for it to finish and run this command again (set ONBOARD_LOCK_WAIT=600 "
        "to queue behind it instead of giving up after "
        f"{wait_seconds():g} s).",
    )


def _unwritable(path: Path, exc: OSError) -> OnboardError:
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return BadInput(
            f"onboard cannot write in {path.parent} ({exc.strerror}), so it cannot take the lock "
            "that keeps two commands from changing it at once; this command writes there.",
            next_step="Make the folder writable (or run as its owner), or work in a workspace you "
            "can write: `onboard setup NEW_DIR --from-wheel`.",
        )
    return OnboardError(
        f"onboard could not create its lock file {path} ({exc.strerror}).",
        next_step="Free some space on that disk, then run the command again.",
    )


@contextlib.contextmanager
def acquire(
    path: Path,
    *,
    command: str,
    what: str | None = None,
    wait: float | None = None,
    remove_on_release: bool = False,
) -> Iterator[Held]:
    """Hold the lock at ``path`` for the block (re-entrant within a process and
    across processes the holder started)."""
    path = Path(os.path.abspath(path))
    where = what or str(path.parent)
    if path in _held:
        _held[path][1] += 1
        try:
            yield _held[path][0]
        finally:
            _held[path][1] -= 1
        return
    inherited = _ancestor_token(path)
    if inherited is not None and holder(path).get("token") == inherited and is_held(path):
        yield Held(path, inherited, None)
        return
    held = _take(path, command, where, wait_seconds() if wait is None else wait)
    held.remove_on_release = remove_on_release
    _held[path] = [held, 1]
    entry = f"{path}={held.token}"
    before = os.environ.get(_ENV_HELD)
    os.environ[_ENV_HELD] = entry if not before else before + os.pathsep + entry
    try:
        yield held
    finally:
        if before is None:
            os.environ.pop(_ENV_HELD, None)
        else:
            os.environ[_ENV_HELD] = before
        del _held[path]
        _release(held)


def is_held(path: Path) -> bool:
    """Whether some process holds ``path`` now (a probe that takes and drops it)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _take(path: Path, command: str, what: str, wait: float) -> Held:
    token = secrets.token_hex(8)
    if fcntl is None:  # pragma: no cover
        return Held(path, token, None)
    deadline = time.monotonic() + wait
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _unwritable(path, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise _unwritable(path, exc) from exc
            if time.monotonic() >= deadline:
                raise _busy(path, what) from None
            time.sleep(0.1)
            continue
        # A holder that removes its file on release may have done so between our
        # open and flock: then we hold a lock on a file nobody else will open.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        info = {"pid": os.getpid(), "command": command, "since": time.time(), "token": token}
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(info).encode())
        except OSError:
            pass  # the lock holds without its description
        return Held(path, token, fd)


def _release(held: Held) -> None:
    if held.fd is None:
        return
    if held.remove_on_release:
        with contextlib.suppress(OSError):
            os.unlink(held.path)
    else:
        with contextlib.suppress(OSError):
            os.ftruncate(held.fd, 0)
    os.close(held.fd)
