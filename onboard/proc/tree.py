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
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onboard import signals
from onboard.jsonable import spec

if TYPE_CHECKING:
    import subprocess  # the type of what proc started; only proc starts processes


@dataclass(frozen=True)
class Leftover:
    """A process a program left running when it exited."""

    pid: int
    command: str
    # How onboard found it: "in its cgroup", "by its session, group, mark or as an orphan"
    how: str = field(default="", metadata=spec(key="found"))

    def __str__(self) -> str:
        return f"pid {self.pid}, `{self.command}`"


def left_note(left: Sequence[Leftover], who: str = "your script") -> str:
    """One sentence naming what a program left running (``left`` not empty)."""
    n = len(left)
    shown = "; ".join(str(p) for p in left[:5]) + ("; ..." if n > 5 else "")
    what = "1 process" if n == 1 else f"{n} processes"
    hows = sorted({p.how for p in left if p.how})
    found = f", found {' and '.join(hows)}" if hows else ""
    return (
        f"{who} left {what} running at exit: {shown}; onboard stopped "
        f"{'it' if n == 1 else 'them'}{found} (the run ends when the program's own process "
        "does)."
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


def carrying_mark(pids: Collection[int], needle: bytes) -> set[int]:
    """Those of ``pids`` whose environment holds ``needle`` (``mark``)."""
    return _carrying(pids, [needle])


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


# How much of a program's stdout, and of its stderr, onboard keeps: the last 8 MiB of
# each. A program that prints gigabytes must not make onboard hold gigabytes.
TAIL_BYTES = 8 << 20


class Tail:
    """The last ``limit`` bytes of a stream, in whole lines, and how many came before."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        from collections import deque

        self.limit = limit
        self.chunks: deque[bytes] = deque()
        self.kept = 0
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.kept += len(chunk)
        while self.kept - len(self.chunks[0]) >= self.limit:
            first = self.chunks.popleft()
            self.kept -= len(first)
            self.dropped += len(first)

    def data(self) -> bytes:
        """What was kept; after a cut, from the first whole line on, with a line that says
        how much was not kept."""
        data = b"".join(self.chunks)
        cut = self.dropped
        if cut:
            newline = data.find(b"\n")
            if newline >= 0:
                cut += newline + 1
                data = data[newline + 1 :]
        if len(data) > self.limit:  # a chunk of its own past the limit
            cut += len(data) - self.limit
            data = data[-self.limit :]
        self.dropped = cut
        if not cut:
            return data
        note = (
            f"[onboard kept the last {self.limit >> 20} MiB of this output; the "
            f"{_size(cut)} before it were not kept]\n"
        )
        return note.encode() + data


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def output_until_exit(
    popen: subprocess.Popen[Any],
    data: str | bytes | None,
    stop_left: Callable[[], list[Leftover]],
    grace: float,
    limit: int = TAIL_BYTES,
) -> tuple[str, str, tuple[Leftover, ...], tuple[int, int]]:
    """(stdout, stderr, what it left running, bytes of each not kept) of ``popen``
    (``data`` written to its stdin), read until its own process exits, the last
    ``limit`` bytes of each (``Tail``); then what it left is stopped (``stop_left``),
    which closes the pipes those held."""
    tails = (Tail(limit), Tail(limit))
    readers = [
        threading.Thread(target=_drain, args=(stream, into), daemon=True)
        for stream, into in zip((popen.stdout, popen.stderr), tails, strict=True)
    ]
    for reader in readers:
        reader.start()
    if popen.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            popen.stdin.write(data)
            popen.stdin.close()
    popen.wait()  # (Ctrl-C here: the caller stops the child and its group)
    with signals.critical():  # a second Ctrl-C must not leave them half-stopped
        left = stop_left()
    for reader in readers:
        # A process that left both the group and the token can still hold a pipe: what
        # came until then is the output.
        reader.join(grace)
    out, err = (t.data().decode("utf-8", "replace") for t in tails)
    if not isinstance(data, bytes):  # text mode, as Popen reads it: universal newlines
        out, err = (t.replace("\r\n", "\n").replace("\r", "\n") for t in (out, err))
    return out, err, tuple(left), (tails[0].dropped, tails[1].dropped)


def _drain(stream: Any, into: Tail) -> None:
    """Read ``stream`` (a Popen pipe, text or binary) to its end into ``into``, in chunks
    as they come."""
    raw = getattr(stream, "buffer", stream)
    with contextlib.suppress(OSError, ValueError):
        while chunk := raw.read1(65536):
            into.add(chunk)
