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


def thread_ticks(pid: int) -> dict[int, int]:
    """CPU time each thread of the process has used so far (utime + stime, in clock
    ticks), by thread id; empty when the process cannot be read."""
    out: dict[int, int] = {}
    try:
        tasks = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return out
    for tid in tasks:
        try:
            raw = (PROC / str(pid) / "task" / tid / "stat").read_text()
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2 :].split()
        with contextlib.suppress(IndexError, ValueError):
            out[int(tid)] = int(rest[11]) + int(rest[12])
    return out


def thread_names(pid: int) -> dict[int, str]:
    """Each thread's kernel name (``/proc/PID/task/TID/comm``), by thread id."""
    out: dict[int, str] = {}
    try:
        tasks = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return out
    for tid in tasks:
        with contextlib.suppress(OSError, ValueError):
            out[int(tid)] = (PROC / str(pid) / "task" / tid / "comm").read_text().strip()
    return out


# The system calls a blocked thread is most often in, by number (Linux's tables).
_SYSCALLS = {
    "x86_64": {
        0: "read", 7: "poll", 17: "pread64", 19: "readv", 23: "select", 34: "pause",
        35: "nanosleep", 43: "accept", 45: "recvfrom", 47: "recvmsg", 61: "wait4",
        202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 247: "waitid",
        270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 288: "accept4",
    },
    "aarch64": {
        63: "read", 65: "readv", 67: "pread64", 72: "pselect6", 73: "ppoll", 98: "futex",
        101: "nanosleep", 115: "clock_nanosleep", 202: "accept", 207: "recvfrom",
        212: "recvmsg", 242: "accept4", 260: "wait4", 95: "waitid", 22: "epoll_pwait",
    },
}  # fmt: skip
# Calls whose first argument is a file descriptor.
_FD_CALLS = ("read", "readv", "pread64", "accept", "accept4", "recvfrom", "recvmsg")


@dataclass(frozen=True)
class Syscall:
    """The system call a thread is blocked in, from ``/proc/PID/task/TID/syscall``."""

    name: str  # "read", or "syscall 123" where the number is not in the table
    args: tuple[int, ...]
    fd_target: str | None = None  # for a call on a descriptor: what it is (pipe:[1234])

    @property
    def fd(self) -> int | None:
        return self.args[0] if self.name in _FD_CALLS and self.args else None

    @property
    def label(self) -> str:
        if self.fd is not None:
            target = f": {self.fd_target}" if self.fd_target else ""
            return f"{self.name}(fd {self.fd}{target})"
        if self.name == "wait4" and self.args:
            return f"wait4(pid {self.waited_pid})"
        return self.name

    @property
    def waited_pid(self) -> int | None:
        """wait4's first argument as a signed number (-1: any child)."""
        if self.name != "wait4" or not self.args:
            return None
        value = self.args[0] & 0xFFFFFFFF
        return value - 2**32 if value >= 2**31 else value


def syscall(pid: int, tid: int) -> Syscall | None:
    """The call the thread is blocked in; None when it runs, is not in a call, or
    the file cannot be read (it needs the same rights as ptrace)."""
    import platform

    try:
        raw = (PROC / str(pid) / "task" / str(tid) / "syscall").read_text().split()
    except OSError:
        return None
    if not raw or raw[0] in ("running", "-1"):
        return None
    try:
        number = int(raw[0])
        args = tuple(int(a, 16) for a in raw[1:7])
    except ValueError:
        return None
    name = _SYSCALLS.get(platform.machine(), {}).get(number, f"syscall {number}")
    call = Syscall(name, args)
    if call.fd is not None:
        call = Syscall(name, args, fd_target(pid, call.fd))
    return call


def fd_target(pid: int, fd: int) -> str | None:
    """What a descriptor of the process is: a path, ``pipe:[N]``, ``socket:[N]``."""
    try:
        return os.readlink(PROC / str(pid) / "fd" / str(fd))
    except OSError:
        return None


def pipe_writers(pid: int) -> dict[str, list[int]]:
    """The pipes (``pipe:[N]``) the process holds open for writing, with its descriptors."""
    out: dict[str, list[int]] = {}
    try:
        fds = os.listdir(PROC / str(pid) / "fd")
    except OSError:
        return out
    for fd in fds:
        target = fd_target(pid, int(fd)) if fd.isdigit() else None
        if not target or not target.startswith("pipe:"):
            continue
        try:
            info_text = (PROC / str(pid) / "fdinfo" / fd).read_text()
        except OSError:
            continue
        flags = next(
            (ln.split()[1] for ln in info_text.splitlines() if ln.startswith("flags:")), "0"
        )
        if int(flags, 8) & 0o3 in (0o1, 0o2):  # O_WRONLY / O_RDWR
            out.setdefault(target, []).append(int(fd))
    return {target: sorted(fds) for target, fds in out.items()}
