"""Taking one snapshot: every process of the program (the program, its
DataLoader workers, its ranks, any child it started, torch or not), sampled
(``sampling``: CPU per thread, a first stack, the thread names), then read side
by side by the stack tool (a process that is not Python: its threads and
system calls from /proc), named by role, mapped to source, and diagnosed."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from onboard.errors import OnboardError
from onboard.workflows.stuck import processes, sampling, tools
from onboard.workflows.stuck.diagnoses import diagnose
from onboard.workflows.stuck.diagnoses.common import Context
from onboard.workflows.stuck.mapping import Mapper
from onboard.workflows.stuck.model import Picture
from onboard.workflows.stuck.result import Snapshot

WORKER = "torch/utils/data/_utils/worker.py"
SPAWN = "torch/multiprocessing/spawn.py"


def take(
    root: int,
    stack_tools: list[tools.Tool],
    mapper: Mapper,
    context: Context,
    *,
    reason: str,
    after: float,
) -> Snapshot:
    began = time.monotonic()
    snapshot = Snapshot(reason=reason, after=after)
    family = [root, *processes.descendants(root)]
    # The program itself always goes to the stack tool: its failure is the answer's
    # (ptrace refused, not Python), where a child's is a note on its picture.
    python = {pid: pid == root or processes.is_python(pid) for pid in family}
    samples = sampling.sample_all(family, tools.find("py-spy"))
    targets = [pid for pid in family if python[pid]]
    workers = max(1, min(len(targets), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        read = dict(
            zip(
                targets,
                pool.map(lambda pid: _read(pid, stack_tools, root, samples), targets),
                strict=True,
            )
        )
    pictures = [read[pid] if python[pid] else _from_proc(pid, samples) for pid in family]
    for picture in pictures:
        picture.pipe_writes = processes.pipe_writers(picture.pid)
    _name_roles(pictures, root)
    snapshot.pictures = pictures
    mapper.map_pictures(pictures)
    snapshot.diagnoses = diagnose(pictures, context)
    snapshot.seconds = time.monotonic() - began
    return snapshot


def _read(
    pid: int, stack_tools: list[tools.Tool], root: int, samples: dict[int, sampling.Sample]
) -> Picture:
    picture = Picture(pid, processes.command_line(pid), "", "")
    picture.environ = processes.rank_environ(pid)
    picture.ppid = _ppid(pid)
    try:
        got = tools.dump(pid, stack_tools)
    except tools.Gone as exc:
        picture.error = exc.message
        return picture
    except OnboardError as exc:
        if pid == root:
            raise
        picture.error = exc.message
        return picture
    picture.threads = got.threads
    sampling.apply(samples.get(pid), picture.threads)
    picture.tool = got.tool.name
    picture.seconds = got.seconds
    picture.paused = got.paused
    return picture


def _from_proc(pid: int, samples: dict[int, sampling.Sample]) -> Picture:
    """A process that is not Python: no stacks, its threads' system calls from /proc."""
    picture = Picture(pid, processes.command_line(pid), "", "/proc", python=False)
    picture.ppid = _ppid(pid)
    picture.environ = processes.rank_environ(pid)
    picture.threads = sampling.proc_threads(pid, samples.get(pid))
    if not picture.threads:
        picture.error = f"Process {pid} ended while it was read."
    return picture


def _ppid(pid: int) -> int:
    found = processes.info(pid)
    return found.ppid if found is not None else 0


def _name_roles(pictures: list[Picture], root: int) -> None:
    workers = spawned = 0
    for picture in sorted(pictures, key=lambda p: p.pid):
        frames = [f for t in picture.threads for f in t.python_frames]
        files = {(f.file or "").replace("\\", "/") for f in frames}
        rank = picture.environ.get("RANK")
        if any(f.endswith(WORKER) for f in files):
            picture.role = f"DataLoader worker {workers}"
            workers += 1
        elif rank is not None:
            picture.role = f"rank {rank}"
        elif picture.pid != root and any(f.endswith(SPAWN) for f in files):
            picture.role = f"spawned process {spawned}"
            spawned += 1
        elif picture.pid == root:
            picture.role = "the program"
        else:
            picture.role = "child process"
