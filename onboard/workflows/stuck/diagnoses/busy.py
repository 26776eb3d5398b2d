"""Threads that ran while they were sampled: busy, not blocked.

One stack cannot tell a thread that computes from one that waits: a thread
holding the GIL inside ``torch.tensor(a_list)`` looks like one blocked in a
native call. The sample taken before the stacks (``sampling``: CPU time per
thread from /proc, a first stack) says which threads made progress; those are
named here, where they run and how much CPU they used, and no deadlock is
claimed for them.
"""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import (
    Context,
    at,
    loc,
    thread_label,
    waits_for_gil,
    where_ids,
)
from onboard.workflows.stuck.model import HOLDS_GIL, NATIVE, Diagnosis, Picture, Thread


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    found = []
    for picture in pictures:
        running = [t for t in picture.threads if t.busy or (t.line_moved and t.busy is None)]
        if not running:
            continue
        evidence = [_runs(picture, t) for t in running]
        holder = next((t for t in running if t.gil == HOLDS_GIL), None)
        waiters = [t for t in picture.threads if t not in running and waits_for_gil(t)]
        if holder is not None:
            evidence.extend(
                f"{thread_label(picture, w)} waits for the GIL: it runs when "
                f"{holder.name or holder.tid} hands it over (at the switch interval, or when "
                "its native call returns)"
                for w in waiters
            )
        who = f"{picture.role} (pid {picture.pid})"
        found.append(
            Diagnosis(
                kind="busy",
                title=f"Busy, not blocked: {len(running)} thread(s) of {who} ran while sampled",
                where=where_ids(*[(picture, t) for t in running]),
                evidence=tuple(evidence),
                meaning=(
                    "These threads made progress while they were sampled (CPU time from "
                    "/proc, or a Python line that moved between two stacks): they are "
                    "running, not deadlocked. If the program looks hung, it is slow or "
                    "looping at these lines; a thread that holds the GIL through a long "
                    "native call (torch.tensor of a Python list, a C extension) makes every "
                    "other Python thread wait until the call returns."
                ),
                try_next=(
                    f"`py-spy top --pid {picture.pid}` (or `py-spy record`) shows where "
                    "the time goes over a longer run.",
                    "Take another snapshot later (`onboard stuck PID`, or Ctrl-\\ under "
                    "`onboard stuck --`): a thread at the same line both times, using CPU, "
                    "loops there.",
                ),
                sites=tuple(s for t in running if (s := loc(t.last_python)) is not None),
            )
        )
    return found


def _runs(picture: Picture, thread: Thread) -> str:
    native = thread.native_after_python
    inner = next((f for f in reversed(native) if f.kind == NATIVE), None)
    where = f"at {at(thread.last_python)}" if thread.last_python else "in native code"
    if inner is not None:
        where += f", in {inner.function}"
    moved = "; its Python line moved between two stacks" if thread.line_moved else ""
    return f"{thread_label(picture, thread)} runs {where}: {thread.cpu_label}{moved}"
