"""Containment: every program onboard runs (a user's program under trace, graph, ab,
bisect, locate, doctor, stuck) is in a ``Group`` that onboard finds by what the
kernel knows, whatever the program does to its environment, session or parent.

How, decided once per process (``mechanism``):

- **a cgroup v2 of its own**, where onboard may write one (a root that owns the
  hierarchy; a systemd user session that delegates its cgroup): the program is
  moved into it before it runs (``preexec``), everything it starts stays there
  (no process can leave a cgroup it cannot write), and ``cgroup.kill`` ends them
  all at once;
- **else the kernel's family ties**: onboard becomes a child subreaper
  (``PR_SET_CHILD_SUBREAPER``), so a process the program orphans (a fork that
  ``setsid()``s, a daemon's double fork) comes back to onboard instead of to
  init; with the program's process group, its session and its environment mark
  (``CHILD_ENV``), that is its group.

Either way the program itself gets ``PR_SET_PDEATHSIG`` (SIGKILL when onboard dies:
SIGKILL, the OOM killer), and each group leaves a **record** (``records``) in
onboard's state folder, written before the program starts and removed at its end:
the program's pid with its start time (a reused pid is never taken for it), its
cgroup, its mark. The next onboard command and ``onboard recover`` sweep the
records a dead run left (``records.sweep_dead``).

What is not contained: without a writable cgroup, a process that leaves the
program's session *and* its environment mark *and* is orphaned after onboard itself
died has nothing left that ties it to the run (docs/safety.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from onboard.proc import records, tree
from onboard.proc.spawn import CHILD_ENV, spawned
from onboard.proc.tree import Leftover

CGROUP = "cgroup"
SESSION = "session"
# How a group's process was found, as its Leftover says it.
CGROUP_HOW = "in its cgroup"
SESSION_HOW = "by its session, group, mark or as an orphan"
# Which mechanism to use, for a machine where a writable cgroup is unwanted (and the
# tests of the other one): "cgroup" (where it can), "session" (never a cgroup).
CONTAINMENT_ENV = "ONBOARD_CONTAINMENT"
# How often, without a cgroup, the record is rewritten with what the program started.
REFRESH_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class _State:
    def __init__(self) -> None:
        self.decided: tuple[str, Path | None] | None = None
        self.subreaper = False
        self.prctl: Callable[..., int] | None = None
        self.lock = threading.Lock()
        self.open: set[Group] = set()


_state = _State()


def _own_cgroup() -> Path | None:
    """The cgroup v2 folder this process is in, when the unified hierarchy is mounted."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    own = next((ln[3:] for ln in lines if ln.startswith("0::")), None)
    if own is None:
        return None
    for line in mounts:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            fields = left.split()
            root, point = fields[3], fields[4]
            # The mount shows the hierarchy from `root` down (a container's namespace).
            rel = os.path.relpath(own, root) if own.startswith(root) else None
            if rel is not None:
                return Path(point) / ("" if rel == "." else rel)
    return None


def mechanism() -> tuple[str, Path | None]:
    """(CGROUP, the cgroup under which a group's own is made) or (SESSION, None)."""
    with _state.lock:
        if _state.decided is None:
            _state.decided = (SESSION, None)
            if os.environ.get(CONTAINMENT_ENV) != SESSION:
                base = _own_cgroup()
                procs = base / "cgroup.procs" if base else None
                if (
                    base is not None
                    and procs is not None
                    and os.access(base, os.W_OK)
                    and os.access(procs, os.W_OK)
                ):
                    _state.decided = (CGROUP, base)
        return _state.decided


def described() -> str:
    """How this process contains the programs it runs, in words."""
    kind, base = mechanism()
    if kind == CGROUP:
        return f"a cgroup of its own under {base}"
    return "its session, its process group and onboard as its child subreaper (no writable cgroup)"


def _prctl() -> Callable[..., int] | None:
    if _state.prctl is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _state.prctl = libc.prctl
        except (OSError, AttributeError):
            return None
    return _state.prctl


def become_subreaper() -> bool:
    """Orphans of what this process started come back to it, not to init (Linux 3.4+)."""
    if not _state.subreaper:
        prctl = _prctl()
        if prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            _state.subreaper = True
    return _state.subreaper


class Group:
    """One program's group: made before the program starts (``preexec`` puts it in),
    read and ended after it exits (``stop``), recorded on disk meanwhile."""

    def __init__(self, command: str, token: str) -> None:
        self.token = token
        self.command = command.strip("`")  # (a step's name may quote it already)
        self.kind, base = mechanism()
        self.cgroup: Path | None = None
        self.leader: int | None = None
        self.leader_start: int | None = None
        self.main_thread = threading.current_thread() is threading.main_thread()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._watcher: threading.Thread | None = None
        if self.kind == CGROUP and base is not None:
            path = base / f"onboard-{os.getpid()}-{os.urandom(4).hex()}"
            try:
                path.mkdir()
                self.cgroup = path
            except OSError:
                self.kind = SESSION
        if self.kind == SESSION:
            become_subreaper()
        # Made here: the child after fork only opens and writes it.
        self._procs = os.fsencode(self.cgroup / "cgroup.procs") if self.cgroup else None
        _prctl()  # resolved here: the child after fork only calls it
        self.record = records.record_path(token)
        self._write([])  # before the program starts
        with _state.lock:
            _state.open.add(self)

    @property
    def how(self) -> str:
        return CGROUP_HOW if self.cgroup else SESSION_HOW

    def preexec(self) -> None:
        """In the child, before it runs the program: into the cgroup, and killed when
        onboard dies. Nothing here may raise (the program runs contained less)."""
        parent = os.getppid()
        if self._procs is not None:
            with contextlib.suppress(OSError):
                fd = os.open(self._procs, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
        # The death signal follows the thread that forked: only from the main thread,
        # whose end is onboard's (a worker thread may end while the program runs).
        if self.main_thread and _state.prctl is not None:
            _state.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # onboard died before the line above
                os._exit(137)

    def _write(self, pids: list[int]) -> None:
        with self._lock:
            if not self._done.is_set():
                records.write(
                    self.record, command=self.command, mark=self.token, cgroup=self.cgroup,
                    pids=pids,
                )  # fmt: skip

    def started(self, pid: int) -> None:
        self.leader, self.leader_start = pid, records.start_time(pid)
        self._write([pid])
        if self.cgroup is None:
            # A cgroup holds everything the program starts; without one, the record
            # learns what it started as it goes, for a sweep after onboard's own death.
            self._watcher = threading.Thread(target=self._refresh, daemon=True)
            self._watcher.start()

    def _refresh(self) -> None:
        while not self._done.wait(REFRESH_SECONDS):
            with contextlib.suppress(OSError, ValueError, IndexError):
                pids = self.members()
                if self.leader is not None:
                    pids.insert(0, self.leader)
                self._write(pids)

    def members(self) -> list[int]:
        """The group's live processes but the leader, which has exited by now."""
        me = os.getpid()
        found = set(records.cgroup_members(self.cgroup)) if self.cgroup else set()
        found |= self._by_kin()
        found.discard(me)
        return sorted(found)

    def _by_kin(self) -> set[int]:
        """Processes tied to the leader: its process group or session, its mark, and the
        orphans it left that came back to onboard (a subreaper) with what they started."""
        leader = self.leader
        if leader is None:
            return set()
        me = os.getpid()
        since = self.leader_start or 0
        table: dict[int, list[bytes]] = {}
        for name in records.pids():
            fields = records.stat(name)
            if fields is not None:
                table[name] = fields
        # The leader's own children only while it is the same process (its pid is not
        # yet another's); every one of them started after it.
        same = records.start_time(leader) == self.leader_start
        found = {
            pid
            for pid, f in table.items()
            if (int(f[2]) == leader or int(f[3]) == leader or (same and int(f[1]) == leader))
            and int(f[19]) >= since
        }
        found |= tree.carrying_mark(table, tree.mark(CHILD_ENV, self.token))
        if _state.subreaper:
            ours = spawned.pids
            found |= {
                pid
                for pid, f in table.items()
                if int(f[1]) == me and pid not in ours and int(f[19]) >= since
            }
        frontier = set(found)
        while frontier:
            frontier = {p for p, f in table.items() if int(f[1]) in frontier} - found - {me}
            found |= frontier
        found.discard(leader)
        return found

    def stop(self, grace: float) -> list[Leftover]:
        """Stop what the program left running: SIGTERM so each can clean up, then after
        ``grace`` seconds SIGKILL (``cgroup.kill``); returns them, as they were."""
        pids = self.members()
        left = [Leftover(pid, tree.command_line(pid), self.how) for pid in pids]
        if pids:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)
            pids = tree.wait_gone(pids, grace)
        self.kill()
        records.reap(p.pid for p in left)
        return left

    def kill(self) -> None:
        """SIGKILL everything in the group, at once where a cgroup holds it."""
        if self.cgroup is not None:
            records.kill_cgroup(self.cgroup)
        records.tree_kill(self.members)

    def close(self) -> None:
        """The program and what it left are gone: the record and the cgroup too."""
        with _state.lock:
            _state.open.discard(self)
        with self._lock:
            self._done.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
        if self.cgroup is not None:
            records.remove_cgroup(self.cgroup)
        records.remove(self.record)


def sweep_dead() -> list[records.Swept]:
    """What dead runs left: what each record names (``records.sweep_dead``), then the
    empty cgroups of an onboard that is gone. A killed onboard's program dies with it
    (PDEATHSIG) and leaves its cgroup empty; that folder is its record's to remove, and
    where the record went with its folder (a test's or a container's state folder,
    removed since), nobody else would: one empty cgroup per killed run. One still
    holding processes is left to the record that names it (another state folder's
    run, swept by its own next command), never taken over here."""
    swept = records.sweep_dead()
    kind, base = mechanism()
    if kind != CGROUP or base is None:
        return swept
    try:
        names = os.listdir(base)
    except OSError:
        return swept
    with _state.lock:
        own = {g.cgroup for g in _state.open}
    for name in names:
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != "onboard" or not parts[1].isdigit():
            continue
        path = base / name
        owner = int(parts[1])
        # An onboard that still runs (or a reused pid: alive either way) keeps its own.
        if path in own or owner == os.getpid() or records.stat(owner) is not None:
            continue
        if not records.cgroup_members(path):
            records.remove_cgroup(path)
    return swept


def end_open_groups() -> None:
    """The run ends: every group still open (a program whose result was never read)
    is killed and closed."""
    with _state.lock:
        groups = list(_state.open)
    for group in groups:
        with contextlib.suppress(OSError):
            group.kill()
        group.close()


def decide_again() -> None:
    """Forget the mechanism chosen: the next group decides again (``CONTAINMENT_ENV``
    changed)."""
    with _state.lock:
        _state.decided = None
