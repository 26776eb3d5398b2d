"""Run a check's independent jobs side by side, within the machine's cores and memory.

A job is a named function with the jobs it must wait for. Ready jobs start in
priority order while a slot is free: one slot per core, fewer when memory is
short (a compile or nvcc child takes ~1.5 GiB). Each start and end is told to
the reporter as it happens, so a long verify is never silent.

The slots are shared by every run in the process, so two ops verified at the
same time still keep within the machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from onboard.report import Reporter
from onboard.workflows.build import machine

# Memory one heavy child (g++ on ATen headers, nvcc, torchgen) may take.
CHILD_GIB = 1.5


def machine_slots() -> int:
    """How many heavy children this machine runs at once: cores, capped by free memory."""
    by_memory = int(machine.available_memory() / (CHILD_GIB * machine.GIB))
    return max(1, min(machine.cores(), by_memory))


class Slots:
    """A count of free cores; a job may take more than one."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.free = total
        self._lock = threading.Lock()

    def try_acquire(self, n: int) -> int:
        """Take ``n`` slots (at most all of them) if they are free: how many, or 0."""
        n = max(1, min(n, self.total))
        with self._lock:
            if self.free < n:
                return 0
            self.free -= n
            return n

    def release(self, n: int) -> None:
        with self._lock:
            self.free += n


_SHARED: Slots | None = None
_SHARED_LOCK = threading.Lock()


def shared_slots() -> Slots:
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Slots(machine_slots())
        return _SHARED


@dataclass
class Job:
    name: str  # what the progress line says ("aten::my_frac: full torchgen codegen")
    run: Callable[[], Any]
    after: tuple[str, ...] = ()
    priority: int = 0  # higher starts first among ready jobs (the critical path)
    cores: int = 1  # slots it keeps busy (a compile with ninja -j2 takes two)
    status: Callable[[Any], str] = field(default=lambda result: "done")


def run_jobs(jobs: list[Job], reporter: Reporter, *, slots: Slots | None = None) -> dict[str, Any]:
    """Run every job once its ``after`` jobs are done; name -> result.

    When a slot frees up, the ready job with the highest priority takes it. A job
    that raises (a Ctrl-C in a worker included) stops new starts; its exception is
    raised here once the running jobs have finished.
    """
    pool = slots or shared_slots()
    names = {j.name for j in jobs}
    results: dict[str, Any] = {}
    errors: list[BaseException] = []
    done: set[str] = set()
    started: set[str] = set()
    cond = threading.Condition()

    def worker(job: Job, taken: int) -> None:
        start = time.monotonic()
        status = "failed"
        try:
            try:
                results[job.name] = job.run()
                status = job.status(results[job.name])
            finally:
                # Reporting can fail too (a closed pipe): the slot is freed below whatever
                # happens here, or the loop would wait for it for ever.
                reporter.check_finished(job.name, status, time.monotonic() - start)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller's thread
            errors.append(exc)
        finally:
            with cond:
                done.add(job.name)  # before the slot is free: dependants are ready first
                pool.release(taken)
                cond.notify_all()

    threads: list[threading.Thread] = []
    with cond:
        while len(done) < len(jobs):
            ready = [
                j
                for j in jobs
                if j.name not in started and all(a in done for a in j.after if a in names)
            ]
            if errors or not ready:
                if len(started) == len(done):
                    break  # nothing running and nothing can start
                cond.wait(0.2)
                continue
            job = max(ready, key=lambda j: j.priority)
            taken = pool.try_acquire(job.cores)
            if not taken:
                cond.wait(0.2)  # another op's jobs hold the cores
                continue
            started.add(job.name)
            reporter.check_started(job.name)
            thread = threading.Thread(target=worker, args=(job, taken), daemon=True)
            thread.start()
            threads.append(thread)
    # A Ctrl-C in the loop above leaves at once instead of waiting minutes for a compile:
    # the workers are daemon threads (stopping their children with onboard is proc's job).
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
