"""A collective waiting on peers: a rank inside ``torch.distributed.<op>``
(torch/distributed/distributed_c10d.py) blocked in ``c10d::Work::wait``, and
for gloo the worker thread of ProcessGroupGloo inside the op's algorithm,
waiting in gloo's transport for a peer's data. Which op, which ranks are in a
collective and which are elsewhere (the ones the others wait for), the wait
site, and the timeout that ends the wait.
"""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import (
    Context,
    at,
    first_native,
    thread_label,
    where_ids,
)
from onboard.workflows.stuck.model import Diagnosis, Frame, Picture, Thread

C10D = "torch/distributed/distributed_c10d.py"
_WAIT = ("c10d::Work::wait", "c10d::ProcessGroupGloo::AsyncWork::wait", "WorkNCCL::wait")
_GLOO_WAIT = ("gloo::transport", "gloo::")


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    inside: list[tuple[Picture, Thread, str, Frame | None]] = []
    for picture in pictures:
        for thread in picture.threads:
            py = _c10d_frame(thread)
            waits = first_native(thread, *_WAIT)
            if py is not None and (waits is not None or _native_wait(thread)):
                inside.append((picture, thread, py.function, waits))
    if not inside:
        return []
    ops = sorted({op for _p, _t, op, _w in inside})
    in_pids = {p.pid for p, _t, _o, _w in inside}
    evidence = []
    sites = []
    for picture, thread, op, waits in inside:
        py = _c10d_frame(thread)
        evidence.append(
            f"{thread_label(picture, thread)} is in {op} at {at(py)}"
            + (f", waiting in {waits.function}" if waits is not None else "")
        )
        for frame in (py, waits):
            if frame is not None and frame.where is not None and frame.where not in sites:
                sites.append(frame.where)
        gloo = _gloo_worker(picture, thread)
        if gloo is not None:
            worker, work, transport = gloo
            evidence.append(
                f"  its gloo worker (thread {worker.tid} '{worker.name}') runs {work.function} "
                f"and waits in {transport.function}"
            )
            if work.where is not None and work.where not in sites:
                sites.append(work.where)
    elsewhere = [p for p in pictures if p.pid not in in_pids and _is_rank(p)]
    for picture in elsewhere:
        last = _user_frame(picture)
        evidence.append(f"{picture.role} (pid {picture.pid}) is in no collective: at {at(last)}")
    backend = _backend(pictures)
    timeout = (
        f"the timeout given to init_process_group / new_group (timeout=...), else the "
        f"default at this commit ({context.default_timeout.label}: "
        f"{(context.default_timeout.text or '').strip()})"
        if context.default_timeout is not None
        else "the timeout given to init_process_group / new_group (timeout=...), else the "
        "backend's default (30 min for gloo, torch/csrc/distributed/c10d/Backend.hpp)"
    )
    missing = (
        f" {', '.join(f'{p.role} (pid {p.pid})' for p in elsewhere)} never called it: the "
        "others wait for that rank."
        if elsewhere
        else " Every rank shown is inside a collective: compare the ops (a mismatch, or a "
        "rank outside this machine, is what they wait for)."
    )
    return [
        Diagnosis(
            kind="collective",
            title=f"{backend}: {', '.join(ops)} waits for its peers",
            where=where_ids(*[(p, t) for p, t, _o, _w in inside]),
            evidence=tuple(evidence),
            meaning=(
                f"A collective returns only when every rank of the group has called the same op."
                f"{missing} The wait ends with an error when {timeout} passes; the stacks do "
                "not show which value the group was given."
            ),
            try_next=(
                "Make every rank call the same collectives in the same order (look for a branch "
                "on rank, an early return, or an exception on one rank).",
                "Run with TORCH_DISTRIBUTED_DEBUG=DETAIL to have each rank log its collectives, "
                "and a short init_process_group(timeout=timedelta(seconds=60)) to fail fast.",
            ),
            sites=tuple(sites),
        )
    ]


def _c10d_frame(thread: Thread) -> Frame | None:
    return next((f for f in reversed(thread.python_frames) if (f.file or "").endswith(C10D)), None)


def _native_wait(thread: Thread) -> bool:
    tail = thread.native_after_python
    return any("c10d::" in f.function for f in tail)


def _gloo_worker(picture: Picture, waiter: Thread) -> tuple[Thread, Frame, Frame] | None:
    for thread in picture.threads:
        if thread is waiter:
            continue
        work = first_native(thread, "Work::execute", "AsyncAllreduceWork", "Async")
        transport = first_native(thread, "gloo::transport")
        if work is not None and transport is not None and first_native(thread, "ProcessGroupGloo"):
            inner = next(
                (
                    f
                    for f in reversed(thread.frames)
                    if f.function.startswith("c10d::Async") and f.in_torch_library
                ),
                work,
            )
            return thread, inner, transport
    return None


def _backend(pictures: list[Picture]) -> str:
    for picture in pictures:
        for thread in picture.threads:
            if first_native(thread, "ProcessGroupNCCL", "ncclComm"):
                return "NCCL"
            if first_native(thread, "ProcessGroupGloo", "gloo::"):
                return "gloo"
    return "torch.distributed"


def _is_rank(picture: Picture) -> bool:
    return picture.role.startswith(("rank", "spawned process"))


def _user_frame(picture: Picture) -> Frame | None:
    main = next((t for t in picture.threads if t.tid == picture.pid), None)
    main = main or (picture.threads[0] if picture.threads else None)
    return main.last_python if main is not None else None
