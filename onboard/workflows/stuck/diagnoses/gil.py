"""A thread waiting for the GIL while the thread that holds it waits for something
that cannot come: a C++ thread of torch (a pool's worker, the autograd engine)
that must run Python (a hook, a ``torch.jit.ignore`` function, a future's
callback) asks for the GIL, and the holder blocks in native code without
releasing it (a C extension call made without ``Py_BEGIN_ALLOW_THREADS``, or a
ctypes ``PyDLL`` call), often waiting for that very thread's work."""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import (
    Context,
    at,
    cpp_pool,
    innermost_torch,
    started_in_cpp,
    thread_label,
    waits_for_gil,
    where_ids,
)
from onboard.workflows.stuck.model import HOLDS_GIL, NATIVE, Diagnosis, Picture


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    found = []
    for picture in pictures:
        holder = next((t for t in picture.threads if t.gil == HOLDS_GIL), None)
        waiters = [t for t in picture.threads if waits_for_gil(t) and t is not holder]
        if holder is None or not waiters:
            continue
        native = holder.native_after_python
        blocking = next((f for f in reversed(native) if f.kind == NATIVE), None)
        if blocking is None:
            continue  # the holder runs Python: it will hand the GIL on at its next switch
        if holder.busy or (holder.busy is None and holder.line_moved):
            continue  # it ran while sampled: busy, not blocked (the `busy` diagnosis)
        sampled = holder.busy is not None
        evidence = [
            f"{thread_label(picture, holder)} holds the GIL and "
            + ("is blocked" if sampled else "is")
            + f" in native code: {blocking.function}, called from {at(holder.last_python)}; "
            + (
                f"{holder.cpu_label}"
                + (" and its line did not move" if holder.line_moved is False else "")
                if sampled
                else "its CPU time could not be sampled, so one stack cannot tell whether "
                "it runs there or is blocked"
            )
        ]
        sites = [f.where for f in (holder.last_python,) if f is not None and f.where]
        for waiter in waiters:
            kind = cpp_pool(waiter) if started_in_cpp(waiter) else "a Python thread"
            torch_frame = innermost_torch(waiter)
            evidence.append(
                f"{thread_label(picture, waiter)} ({kind}) waits for the GIL"
                + (f" in {torch_frame.function}" if torch_frame is not None else "")
            )
            if torch_frame is not None and torch_frame.where is not None:
                sites.append(torch_frame.where)
        found.append(
            Diagnosis(
                kind="gil",
                title="GIL deadlock: a thread waits for the GIL its holder never releases",
                where=where_ids((picture, holder), *[(picture, w) for w in waiters]),
                evidence=tuple(evidence),
                meaning=(
                    "The holder blocks inside a native call that keeps the GIL "
                    f"({blocking.function}): it used no CPU while it was sampled; the waiting "
                    "thread cannot run its Python until the holder releases it. If the holder "
                    "waits for that thread's work (a future, a pipe, a queue), neither can "
                    "ever move."
                    if sampled
                    else "The holder is inside a native call that keeps the GIL "
                    f"({blocking.function}); the waiting thread cannot run its Python until "
                    "the holder releases it. Whether the holder is blocked there or still "
                    "computing was not checked."
                ),
                try_next=(
                    "Release the GIL around the blocking call: in C/C++ with "
                    "Py_BEGIN_ALLOW_THREADS / pybind11::gil_scoped_release, in ctypes by "
                    "calling through ctypes.CDLL (which releases it), not PyDLL.",
                    "Or wait in Python (fut.wait(), queue.get()), which releases the GIL.",
                ),
                sites=tuple(sites),
                checked=sampled,
                unchecked_why=""
                if sampled
                else "the holder's CPU time could not be read from /proc, so it may be busy "
                "in that call rather than blocked",
            )
        )
    return found
