"""The record of what a run started, on disk: it outlives onboard's own death.

One small file per program (``contain.Group``) in onboard's state folder
(``$XDG_STATE_HOME/onboard/runs``), written before the program starts and removed
at its end: onboard's pid and start time, the program's, its cgroup and its mark.
A run killed outright (SIGKILL, the OOM killer) leaves it, and the next onboard
command (``sweep_dead``, at start-up) and ``onboard recover`` stop what it names
that still runs, and say so. No record: one folder listing, nothing more.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.proc import tree
from onboard.proc.spawn import CHILD_ENV, kill_all, marked
from onboard.proc.tree import Leftover

RUNS = "runs"


def runs_dir() -> Path:
    """Where the records are ($XDG_STATE_HOME/onboard/runs, as the crash logs' folder)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "onboard" / RUNS


@dataclass
class Swept:
    """What a dead run had left running, stopped since."""

    command: str
    pid: object  # the dead onboard's
    stopped: list[Leftover] = field(default_factory=list)

    def note(self) -> str:
        shown = "; ".join(str(p) for p in self.stopped[:5])
        more = "; ..." if len(self.stopped) > 5 else ""
        n = len(self.stopped)
        what = "1 process" if n == 1 else f"{n} processes"
        return (
            f"an earlier onboard run (pid {self.pid}) was killed before it ended and left "
            f"{what} of the program `{self.command}` running: {shown}{more}; onboard stopped "
            f"{'it' if n == 1 else 'them'}."
        )


def record_path(mark: str) -> Path:
    return runs_dir() / f"{os.getpid()}-{mark}.json"


def write(path: Path, *, command: str, mark: str, cgroup: Path | None, pids: list[int]) -> None:
    """Write (or rewrite) a group's record at ``path``: ``pids`` with their start times.
    Where the state folder cannot be written, the run goes on without one (it is
    contained while onboard lives)."""
    processes = [{"pid": p, "start": start_time(p)} for p in pids]
    data = {
        "version": 1,
        "onboard": {"pid": os.getpid(), "start": start_time(os.getpid())},
        "command": command,
        "mark": mark,
        "cgroup": str(cgroup) if cgroup else None,
        "processes": [e for e in processes if e["start"] is not None],
    }
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(data), encoding="utf-8")
        os.replace(partial, path)


def remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _alive(entry: object) -> bool:
    """Whether ``{"pid", "start"}`` still names a live process (the same one)."""
    if not isinstance(entry, dict):
        return False
    pid, start = entry.get("pid"), entry.get("start")
    return isinstance(pid, int) and pid > 0 and start is not None and start_time(pid) == start


def sweep_dead() -> list[Swept]:
    """Stop what each dead run's record names and still runs, and drop the record.
    A record whose onboard still runs is its own; one that cannot be read is dropped."""
    folder = runs_dir()
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json")]
    except OSError:
        return []
    swept = []
    for name in names:
        path = folder / name
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            remove(path)
            continue
        if not isinstance(data, dict) or _alive(data.get("onboard")):
            continue
        stopped = _stop(data)
        remove(path)
        if stopped:
            owner = data.get("onboard")
            pid = owner.get("pid") if isinstance(owner, dict) else "?"
            swept.append(Swept(str(data.get("command", "?")), pid, stopped))
    return swept


def _stop(data: dict[str, Any]) -> list[Leftover]:
    """SIGTERM, then SIGKILL, what the record names: its cgroup's processes, the
    processes it lists still alive, and the holders of its mark."""
    cgroup = data.get("cgroup")
    cg = Path(cgroup) if isinstance(cgroup, str) and "onboard-" in cgroup else None
    mark = data.get("mark")
    processes = data.get("processes")
    listed: list[Any] = processes if isinstance(processes, list) else []

    def find() -> list[int]:
        pids = set(cgroup_members(cg)) if cg is not None and cg.is_dir() else set()
        pids |= {e["pid"] for e in listed if _alive(e)}
        if isinstance(mark, str) and mark:
            pids |= set(marked(mark, name=CHILD_ENV))
        pids.discard(os.getpid())
        return sorted(pids)

    how = "in its cgroup" if cg is not None else "by its record"
    pids = find()
    left = [Leftover(pid, tree.command_line(pid), how) for pid in pids]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    if pids:
        tree.wait_gone(pids, 1.0)
    if cg is not None and cg.is_dir():
        kill_cgroup(cg)
    tree_kill(find)
    if cg is not None:
        remove_cgroup(cg)
    return left


# --- processes and cgroups, by what the kernel says -------------------------------


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (/proc/PID/stat field 22); with the
    pid it names one process for good (a reused pid starts later)."""
    fields = stat(pid)
    return int(fields[19]) if fields else None


def stat(pid: int) -> list[bytes] | None:
    """/proc/PID/stat after the command name (field 3 on), None for a gone or zombie one."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in (b"Z", b"X") else fields


def reap(pids: Iterable[int]) -> None:
    """Orphans that came back to onboard are its children once dead: wait for them."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def tree_kill(find: Callable[[], list[int]]) -> None:
    """SIGKILL what ``find`` names until it names nobody, and reap those that were ours."""
    killed = kill_all(find)
    reap(killed)


def cgroup_members(path: Path) -> list[int]:
    """Every process in the cgroup at ``path`` and in those below it."""
    found: list[int] = []
    for folder, _dirs, _files in os.walk(path):
        with contextlib.suppress(OSError, ValueError):
            text = (Path(folder) / "cgroup.procs").read_text()
            found.extend(int(p) for p in text.split())
    return found


def kill_cgroup(path: Path) -> None:
    """SIGKILL every process in the cgroup (``cgroup.kill``, Linux 5.14+; else one by one)."""
    try:
        (path / "cgroup.kill").write_text("1")
    except OSError:
        tree_kill(lambda: cgroup_members(path))
        return
    # The kill is sent, not done: wait until the cgroup is empty before it is removed.
    tree.wait_gone(cgroup_members(path), 2.0)


def remove_cgroup(path: Path) -> None:
    """Remove the cgroup (and those below it) once empty; a busy one is left for the sweep."""
    for folder, _dirs, _files in sorted(os.walk(path), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def pids() -> list[int]:
    """Every pid in /proc (none where there is no /proc)."""
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
