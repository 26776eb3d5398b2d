"""What one stack cannot tell: whether a thread runs or is blocked.

Before the stack tool pauses the processes, each thread's CPU time is read
from ``/proc/PID/task/TID/stat`` twice, ``SAMPLE_SECONDS`` apart, and between
the two readings py-spy takes a first stack without stopping the process
(``dump --nonblocking``): it also gives each thread's Python name
(``threading.Thread(name=...)``), which the kernel does not know. After the
interval, the system call each thread is blocked in (``/proc/.../syscall``).
A thread that used CPU, or whose innermost Python line moved between the two
stacks, made progress: it is busy, not blocked.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from onboard import proc
from onboard.errors import OnboardError
from onboard.workflows.stuck import processes
from onboard.workflows.stuck.model import Thread
from onboard.workflows.stuck.processes import Syscall

SAMPLE_SECONDS = 0.5


@dataclass
class Sample:
    """One process's threads over the sampling interval."""

    seconds: float = 0.0
    ticks: dict[int, int] = field(default_factory=dict)  # CPU used in the interval, per tid
    python_names: dict[int, str] = field(default_factory=dict)
    first_lines: dict[int, tuple[str, int]] = field(default_factory=dict)  # innermost line
    syscalls: dict[int, Syscall | None] = field(default_factory=dict)
    kernel_names: dict[int, str] = field(default_factory=dict)


def sample_all(pids: list[int], sampler: str | None) -> dict[int, Sample]:
    """Sample every process over one common interval."""
    began = time.monotonic()
    before = {pid: processes.thread_ticks(pid) for pid in pids}
    samples = {pid: Sample() for pid in pids}
    if sampler is not None and pids:
        with ThreadPoolExecutor(max_workers=min(len(pids), 8)) as pool:
            for pid, got in zip(
                pids, pool.map(lambda p: _first_stack(p, sampler), pids), strict=True
            ):
                samples[pid].python_names, samples[pid].first_lines = got
    time.sleep(max(0.0, SAMPLE_SECONDS - (time.monotonic() - began)))
    for pid in pids:
        after = processes.thread_ticks(pid)
        seconds = time.monotonic() - began
        sample = samples[pid]
        sample.seconds = seconds
        sample.ticks = {
            tid: ticks - before[pid][tid] for tid, ticks in after.items() if tid in before[pid]
        }
        sample.syscalls = {tid: processes.syscall(pid, tid) for tid in after}
        sample.kernel_names = processes.thread_names(pid)
    return samples


def apply(sample: Sample | None, threads: list[Thread]) -> None:
    """Put what the sample saw on the threads the stack tool read."""
    if sample is None:
        return
    hz = processes.ticks_per_second()
    for thread in threads:
        if thread.tid in sample.ticks:
            thread.cpu_seconds = sample.ticks[thread.tid] / hz
            thread.sampled_seconds = sample.seconds
        thread.syscall = sample.syscalls.get(thread.tid)
        thread.kernel_name = sample.kernel_names.get(thread.tid, thread.name)
        if sample.python_names.get(thread.tid):
            thread.name = sample.python_names[thread.tid]
        first = sample.first_lines.get(thread.tid)
        last = thread.last_python
        if first is not None and last is not None and last.line:
            thread.line_moved = first != (last.file or "", last.line)


def proc_threads(pid: int, sample: Sample | None) -> list[Thread]:
    """The threads of a process that is not Python, as /proc shows them."""
    names = processes.thread_names(pid)
    threads = [Thread(tid, name) for tid, name in sorted(names.items())]
    apply(sample, threads)
    return threads


def _first_stack(pid: int, sampler: str) -> tuple[dict[int, str], dict[int, tuple[str, int]]]:
    """Each thread's Python name and innermost Python line, read without pausing it."""
    names: dict[int, str] = {}
    lines: dict[int, tuple[str, int]] = {}
    try:
        ran = proc.run(
            [sampler, "dump", "--pid", str(pid), "--json", "--nonblocking"],
            timeout=10,
            check=False,
        )
    except OnboardError:
        return names, lines
    if ran.returncode != 0:
        return names, lines
    try:
        data = json.loads(ran.stdout or "[]")
    except ValueError:
        return names, lines
    for item in data if isinstance(data, list) else []:
        tid = int(item.get("os_thread_id") or 0)
        if not tid:
            continue
        if item.get("thread_name"):
            names[tid] = str(item["thread_name"])
        frames = item.get("frames") or []  # innermost first
        if frames and frames[0].get("line"):
            lines[tid] = (str(frames[0].get("filename") or ""), int(frames[0]["line"]))
    return names, lines
