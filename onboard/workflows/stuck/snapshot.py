"""Taking one snapshot: every Python process of the program that has torch
loaded (the program, its DataLoader workers, its ranks), read side by side by
the stack tool, named by role, mapped to source, and diagnosed."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from onboard.errors import OnboardError
from onboard.workflows.stuck import processes, tools
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
    targets: list[int] = []
    for pid in [root, *processes.descendants(root)]:
        libs = processes.libraries(pid)
        command = processes.command_line(pid)
        if pid != root and not (processes.is_python(pid, libs) and processes.has_torch(libs)):
            why = "not Python" if not processes.is_python(pid, libs) else "torch not loaded"
            snapshot.skipped.append(f"{pid} ({command[:80]}): {why}, not read")
            continue
        targets.append(pid)
    workers = max(1, min(len(targets), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pictures = list(pool.map(lambda pid: _read(pid, stack_tools, root), targets))
    _name_roles(pictures, root)
    snapshot.pictures = pictures
    mapper.map_pictures(pictures)
    snapshot.diagnoses = diagnose(pictures, context)
    snapshot.seconds = time.monotonic() - began
    return snapshot


def _read(pid: int, stack_tools: list[tools.Tool], root: int) -> Picture:
    picture = Picture(pid, processes.command_line(pid), "", "")
    picture.environ = processes.rank_environ(pid)
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
    picture.tool = got.tool.name
    picture.seconds = got.seconds
    picture.paused = got.paused
    return picture


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
