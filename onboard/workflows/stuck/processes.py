"""The processes of a program, read from /proc (Linux): who descends from whom,
which are Python with torch loaded, how much CPU they used, who may attach.

A DataLoader's workers and `torch.multiprocessing` / `torchrun` ranks are
children (or grandchildren) of the program: the picture covers all of them.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
# Environment variables that say which rank a process is (torchrun sets them).
RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class Info:
    pid: int
    ppid: int
    state: str  # R, S, D, T, t (stopped by a tracer), Z ...
    ticks: int  # utime + stime of all its threads, in clock ticks
    command: str


def exists(pid: int) -> bool:
    return (PROC / str(pid)).is_dir() and info(pid) is not None


def info(pid: int) -> Info | None:
    """The process's /proc/PID/stat, or None when it is gone (or a zombie)."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name sits in parentheses and may itself hold spaces or ")".
    rest = raw[raw.rfind(")") + 2 :].split()
    state = rest[0]
    if state in ("Z", "X"):
        return None
    return Info(pid, int(rest[1]), state, int(rest[11]) + int(rest[12]), command_line(pid))


def command_line(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


def descendants(root: int) -> list[int]:
    """Every live process under ``root`` (children, their children ...), in pid order."""
    parents: dict[int, list[int]] = {}
    for entry in _pids():
        found = info(entry)
        if found is not None:
            parents.setdefault(found.ppid, []).append(entry)
    out: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        for child in parents.get(pid, []):
            out.append(child)
            todo.append(child)
    return sorted(out)


def _pids() -> list[int]:
    try:
        return [int(e) for e in os.listdir(PROC) if e.isdigit()]
    except OSError:
        return []


def cpu_ticks(pids: list[int]) -> int:
    """CPU time used so far by these processes (gone ones count 0)."""
    total = 0
    for pid in pids:
        found = info(pid)
        total += found.ticks if found else 0
    return total


def ticks_per_second() -> int:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        return int(os.sysconf("SC_CLK_TCK"))
    return 100


def libraries(pid: int) -> set[str]:
    """The file names of the shared objects mapped into the process."""
    try:
        text = (PROC / str(pid) / "maps").read_text()
    except OSError:
        return set()
    names = set()
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            names.add(parts[5].rsplit("/", 1)[-1])
    return names


def is_python(pid: int, libs: set[str] | None = None) -> bool:
    """A CPython interpreter: its executable is a python, or libpython is mapped."""
    try:
        exe = os.readlink(PROC / str(pid) / "exe")
    except OSError:
        exe = ""
    if os.path.basename(exe).startswith("python"):
        return True
    libs = libraries(pid) if libs is None else libs
    return any(name.startswith("libpython") for name in libs)


def has_torch(libs: set[str]) -> bool:
    return any(name.startswith(("libtorch_cpu", "libtorch_python", "libc10")) for name in libs)


def rank_environ(pid: int) -> dict[str, str]:
    """RANK, LOCAL_RANK, WORLD_SIZE ... from the process's environment, where readable."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        name, _, value = item.decode("utf-8", "replace").partition("=")
        if name in RANK_VARS:
            out[name] = value
    return out


def owner(pid: int) -> int | None:
    try:
        return (PROC / str(pid)).stat().st_uid
    except OSError:
        return None


def ptrace_scope() -> int | None:
    """Yama's kernel.yama.ptrace_scope (None where the kernel has no Yama)."""
    try:
        return int((PROC / "sys/kernel/yama/ptrace_scope").read_text().strip())
    except (OSError, ValueError):
        return None


def stopped(pid: int) -> bool:
    """Whether any thread of the process is stopped by a tracer or a signal right now."""
    try:
        tasks = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return False
    for tid in tasks:
        try:
            raw = (PROC / str(pid) / "task" / tid / "stat").read_text()
        except OSError:
            continue
        if raw[raw.rfind(")") + 2 :][:1] in ("t", "T"):
            return True
    return False
