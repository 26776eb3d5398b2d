"""A C++ thread of torch runs a Python callback that blocks on a Python lock,
while the thread that holds the lock waits in torch's C++ for that very work:
``with L: launch(...)`` in one thread and ``with L:`` in the callback the C++
pool runs (a ``torch.jit.fork`` of a ``torch.jit.ignore`` function, a
future's ``then`` callback, an autograd hook). The GIL is free; the lock is
the cycle. Which thread holds the lock is read from the source: the ``with``
block its current line sits in."""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import (
    Context,
    at,
    blocked_on_lock,
    cpp_pool,
    held_locks,
    innermost_torch,
    started_in_cpp,
    thread_label,
    wanted_lock,
    where_ids,
)
from onboard.workflows.stuck.model import Diagnosis, Picture


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    found = []
    for picture in pictures:
        for worker in picture.threads:
            if not (started_in_cpp(worker) and blocked_on_lock(worker)):
                continue
            lock = wanted_lock(worker)
            if lock is None:
                continue
            holders = [
                (t, held_locks(t)[lock])
                for t in picture.threads
                if t is not worker and lock in held_locks(t)
            ]
            for holder, in_with in holders:
                wait = innermost_torch(holder)
                if wait is None:
                    continue
                pool = cpp_pool(worker)
                sites = [
                    s
                    for s in (
                        worker.last_python.where if worker.last_python else None,
                        in_with.site,
                        wait.where,
                    )
                    if s is not None
                ]
                found.append(
                    Diagnosis(
                        kind="callback_lock",
                        title=f"Deadlock: a Python callback on {pool} waits for lock "
                        f"`{lock}`, held by the thread waiting for it",
                        where=where_ids((picture, worker), (picture, holder)),
                        evidence=(
                            f"{thread_label(picture, worker)} ({pool}) runs Python and is "
                            f"blocked acquiring `{lock}` at {at(worker.last_python)}",
                            f"{thread_label(picture, holder)} holds `{lock}` (taken at "
                            f"{in_with.label}), is at {at(in_with.frame)} and waits in "
                            f"torch's C++: {wait.function}",
                        ),
                        meaning=(
                            f"The holder of `{lock}` called into torch, which handed work to "
                            f"{pool} and waits for it; that work calls back into Python and "
                            f"needs `{lock}` first. Neither can move; the GIL is not the "
                            "problem (both wait with it released)."
                        ),
                        try_next=(
                            f"Do not hold `{lock}` across the call into torch (release it "
                            "before waiting), or make the callback not take it.",
                            "Where both need it, use an RLock only if both run on the same "
                            "thread; across threads, restructure so the callback never waits "
                            "on its caller.",
                        ),
                        sites=tuple(sites),
                    )
                )
    return found
