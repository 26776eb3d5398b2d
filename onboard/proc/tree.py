"""Who runs below a process: its descendants, and what a finished child left behind
(and a child's output read until its own process exits: ``output_until_exit``).

Read from Linux's /proc (elsewhere there is nothing to read, and callers fall
back to process-group kills). ``spawn`` marks every child it starts with a
token in its environment, which everything the child starts inherits: that
finds descendants that left the process tree (a daemon re-parented to init)
or the child's process group (``setsid``).
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from onboard import signals

if TYPE_CHECKING:
    import subprocess  # the type of what proc started; only proc starts processes


@dataclass(frozen=True)
class Leftover:
    """A process a program left running when it exited."""

    pid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid}, `{self.command}`"

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "command": self.command}


def left_note(left: Sequence[Leftover], who: str = "your script") -> str:
    """One sentence naming what a program left running (``left`` not empty)."""
    n = len(left)
    shown = "; ".join(str(p) for p in left[:5]) + ("; ..." if n > 5 else "")
    what = "1 process" if n == 1 else f"{n} processes"
    return (
        f"{who} left {what} running at exit: {shown}; onboard stopped "
        f"{'it' if n == 1 else 'them'} (the run ends when the program's own process does)."
    )


@dataclass(frozen=True)
class _Entry:
    ppid: int
    pgid: int


def _table() -> dict[int, _Entry]:
    """Every live (not zombie) process: pid -> its parent and process group."""
    found: dict[int, _Entry] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
                fields = fh.read().rsplit(b")", 1)[1].split()
            if fields[0] != b"Z":
                found[int(name)] = _Entry(int(fields[1]), int(fields[2]))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _carrying(pids: Collection[int], needles: Collection[bytes]) -> set[int]:
    """Those of ``pids`` whose environment holds one of ``needles`` (``NAME=value\\0``)."""
    found = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read() + b"\0"
        except OSError:
            continue  # gone, or not ours to read
        if any(n in env for n in needles):
            found.add(pid)
    return found


def mark(name: str, value: str) -> bytes:
    return f"{name}={value}\0".encode()


def descendants(root: int, needles: Collection[bytes] = ()) -> list[int]:
    """Live descendants of ``root``, and processes carrying one of ``needles`` with theirs."""
    table = _table()
    found = _carrying([p for p in table if p != root], needles) if needles else set()
    frontier = {root, *found}
    while frontier:
        frontier = {p for p, e in table.items() if e.ppid in frontier} - found - {root}
        found |= frontier
    return sorted(found)


def left_behind(group: int, needle: bytes) -> list[Leftover]:
    """What a child that led process group ``group`` left running after it exited: the
    group's live members and the holders of its token ``needle`` (which left the group)."""
    table = _table()
    me = os.getpid()
    pids = {p for p, e in table.items() if e.pgid == group and p != me}
    pids |= _carrying([p for p in table if p not in pids and p != me], [needle])
    return [Leftover(pid, command_line(pid)) for pid in sorted(pids)]


def stop_left_behind(group: int, needle: bytes, grace: float) -> list[Leftover]:
    """Stop what an exited child left running (``left_behind``): SIGTERM, so each can
    clean up, then SIGKILL after ``grace`` seconds. Returns them, as they were."""
    left = left_behind(group, needle)
    if not left:
        return left
    pids = [p.pid for p in left]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        pids = wait_gone(pids, grace)
        if not pids:
            break
    return left


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            words = [w.decode("utf-8", "replace") for w in fh.read().split(b"\0") if w]
    except OSError:
        return "?"
    return shlex.join(words) if words else "?"


def wait_gone(pids: Collection[int], seconds: float) -> list[int]:
    """Wait until every process in ``pids`` has exited, at most ``seconds``; those still
    alive. On a pidfd (an event) where the kernel has them, else by looking again."""
    fds: dict[int, int] = {}
    waiting = set(pids)
    if hasattr(os, "pidfd_open"):
        for pid in pids:
            try:
                fds[os.pidfd_open(pid)] = pid
            except ProcessLookupError:
                waiting.discard(pid)  # gone already
            except OSError:
                pass  # no pidfds here: looked at again below
    deadline = time.monotonic() + seconds
    try:
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if fds and len(fds) == len(waiting):
                ready, _, _ = select.select(list(fds), [], [], left)
                for fd in ready:
                    waiting.discard(fds.pop(fd))
                    os.close(fd)
                continue
            waiting &= set(_table())
            if waiting:
                time.sleep(min(0.05, left))
        return sorted(waiting)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def output_until_exit(
    popen: subprocess.Popen[Any], data: str | bytes | None, needle: bytes, grace: float
) -> tuple[str, str, tuple[Leftover, ...]]:
    """(stdout, stderr, what it left running) of ``popen`` (``data`` written to its stdin),
    read until its own process exits; then what it left is stopped (``stop_left_behind``),
    which closes the pipes those held."""
    chunks: tuple[list[bytes], list[bytes]] = ([], [])
    readers = [
        threading.Thread(target=_drain, args=(stream, into), daemon=True)
        for stream, into in zip((popen.stdout, popen.stderr), chunks, strict=True)
    ]
    for reader in readers:
        reader.start()
    if popen.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            popen.stdin.write(data)
            popen.stdin.close()
    popen.wait()  # (Ctrl-C here: the caller stops the child and its group)
    with signals.critical():  # a second Ctrl-C must not leave them half-stopped
        left = stop_left_behind(popen.pid, needle, grace)
    for reader in readers:
        # A process that left both the group and the token can still hold a pipe: what
        # came until then is the output.
        reader.join(grace)
    out, err = (b"".join(c).decode("utf-8", "replace") for c in chunks)
    if not isinstance(data, bytes):  # text mode, as Popen reads it: universal newlines
        out, err = (t.replace("\r\n", "\n").replace("\r", "\n") for t in (out, err))
    return out, err, tuple(left)


def _drain(stream: Any, into: list[bytes]) -> None:
    """Read ``stream`` (a Popen pipe, text or binary) to its end into ``into``, in chunks
    as they come."""
    raw = getattr(stream, "buffer", stream)
    with contextlib.suppress(OSError, ValueError):
        while chunk := raw.read1(65536):
            into.append(chunk)
