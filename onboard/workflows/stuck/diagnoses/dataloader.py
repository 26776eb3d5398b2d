"""A DataLoader whose main process waits for a batch, and what each worker does.

The main process blocks in ``_MultiProcessingDataLoaderIter._try_get_data``
(torch/utils/data/dataloader.py), polling the data queue; each worker runs
``_worker_loop`` (torch/utils/data/_utils/worker.py), which takes indices
from its index queue and calls the dataset's ``__getitem__`` through the
fetcher (torch/utils/data/_utils/fetch.py).
"""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import (
    Context,
    at,
    blocked_on_lock,
    loc,
    source_line,
    thread_label,
    wanted_lock,
    where_ids,
)
from onboard.workflows.stuck.model import Diagnosis, Frame, Picture, Thread

DATALOADER = "torch/utils/data/dataloader.py"
WORKER = "torch/utils/data/_utils/worker.py"
_MAIN_WAITS = ("_try_get_data", "_get_data", "_next_data")
_TORCH_DATA = ("torch/utils/data/", "multiprocessing/", "threading.py", "queue.py", "selectors.py")


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    waiting = [
        (p, t)
        for p in pictures
        for t in p.threads
        if t.has_python(DATALOADER, *_MAIN_WAITS) and not t.has_python(WORKER, "_worker_loop")
    ]
    if not waiting:
        return []
    main, thread = waiting[0]
    workers = [(p, t) for p in pictures for t in p.threads if t.has_python(WORKER, "_worker_loop")]
    evidence = [f"{thread_label(main, thread)} waits in {at(_frame(thread, DATALOADER))}"]
    sites = [s for s in (loc(_frame(thread, DATALOADER)),) if s]
    blocked: list[str] = []
    for n, (picture, worker) in enumerate(workers):
        said, frame = _doing(worker)
        evidence.append(f"worker {n} (pid {picture.pid}): {said}")
        if frame is not None and frame.where is not None:
            sites.append(frame.where)
        if said.startswith("blocked acquiring"):
            blocked.append(f"worker {n}")
    if not workers:
        meaning = (
            "The main process waits for a batch, but no DataLoader worker process is alive "
            "under it: the workers died (killed by the OOM killer or a signal) or never started. "
            "_try_get_data checks that they are alive every MP_STATUS_CHECK_INTERVAL (5 s) and "
            "raises once it notices."
        )
        tries: tuple[str, ...] = (
            "Look for 'Killed' / 'DataLoader worker (pid N) is killed by signal' in the output "
            "and in `dmesg` (the OOM killer).",
            "Run with num_workers=0 to see the dataset's own error in the main process.",
        )
    elif blocked:
        meaning = (
            f"The main process waits for a batch while {', '.join(blocked)} "
            f"{'is' if len(blocked) == 1 else 'are'} blocked acquiring a lock inside the "
            "dataset's code. A lock held in the main process when the workers were forked is "
            "copied held into every worker, and nothing there releases it."
        )
        tries = (
            "Create locks, clients and file handles inside each worker (worker_init_fn or "
            "lazily in __getitem__), not at import or in __init__.",
            "Or start workers with DataLoader(..., multiprocessing_context='spawn').",
            "DataLoader(..., timeout=SECONDS) turns the hang into an error naming the wait.",
        )
    else:
        meaning = (
            "The main process waits for a batch; the workers are alive and each is where the "
            "evidence says (slow __getitem__, or waiting on something outside Python)."
        )
        tries = (
            "Run with num_workers=0 to step through __getitem__ in the main process.",
            "DataLoader(..., timeout=SECONDS) turns the hang into an error naming the wait.",
        )
    return [
        Diagnosis(
            kind="dataloader",
            title="DataLoader: the main process waits on its workers' data queue",
            where=where_ids((main, thread), *workers),
            evidence=tuple(evidence),
            meaning=meaning,
            try_next=tries,
            sites=tuple(sites),
        )
    ]


def _frame(thread: Thread, file_end: str) -> Frame | None:
    return next(
        (f for f in reversed(thread.python_frames) if (f.file or "").endswith(file_end)), None
    )


def _doing(worker: Thread) -> tuple[str, Frame | None]:
    """What a worker does: the innermost frame, outside torch's data plumbing, of
    what ``_worker_loop`` called. The frames above the loop (the user's ``<module>``
    and the ``for batch in loader`` that forked the worker) are the parent's, copied
    by the fork: they are not running."""
    frames = worker.python_frames
    loop = next(
        (
            i
            for i in range(len(frames) - 1, -1, -1)
            if (frames[i].file or "").endswith(WORKER) and frames[i].function == "_worker_loop"
        ),
        None,
    )
    called = frames[loop + 1 :] if loop is not None else frames
    user = next(
        (f for f in reversed(called) if not any(part in (f.file or "") for part in _TORCH_DATA)),
        None,
    )
    cpu = f": {worker.cpu_label}" if worker.cpu_seconds is not None else ""
    if blocked_on_lock(worker) and user is not None:
        lock = wanted_lock(worker)
        named = f" `{lock}`" if lock else ""
        return f"blocked acquiring lock{named} at {at(worker.last_python)}", worker.last_python
    if user is not None:
        doing = "busy" if worker.busy else "waiting" if worker.busy is False else "at"
        return f"{doing} in the dataset's code at {at(user)}{cpu}", user
    if loop is not None and "index_queue.get" in source_line(frames[loop]):
        return f"idle, waiting for indices at {at(frames[loop])}", frames[loop]
    last = worker.last_python
    return f"at {at(last)}", last
