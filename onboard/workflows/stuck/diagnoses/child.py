"""A process waiting for a child it started, and what that child waits on.

The parent is in ``subprocess.Popen.wait`` / ``communicate`` (or
``multiprocessing``'s ``popen_fork.wait``), blocked in ``wait4`` for one pid
(the call's first argument, read from ``/proc/PID/task/TID/syscall``). The
child is read like every process of the tree, torch or not, Python or not:
its frames where it is Python, the system call each thread is blocked in, and
for a read on a pipe, which processes hold that pipe's write end open (a
child reading the stdin its parent opened with ``stdin=PIPE`` and never
writes or closes).
"""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import Context, at, loc, thread_label, where_ids
from onboard.workflows.stuck.model import Diagnosis, Frame, Picture, Thread

_PARENT_WAITS = ("wait", "_wait", "_try_wait", "communicate", "poll")
_PLUMBING = ("/subprocess.py", "/multiprocessing/")


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    found = []
    by_pid = {p.pid: p for p in pictures}
    for parent in pictures:
        for thread in parent.threads:
            call = thread.syscall
            in_python = thread.has_python("subprocess.py", *_PARENT_WAITS) or thread.has_python(
                "multiprocessing/popen_fork.py", *_PARENT_WAITS
            )
            if not (in_python or (call is not None and call.name in ("wait4", "waitid"))):
                continue
            if thread.busy:
                continue
            waited = call.waited_pid if call is not None else None
            children = (
                [by_pid[waited]]
                if waited is not None and waited > 0 and waited in by_pid
                else [p for p in pictures if p.ppid == parent.pid]
            )
            if not children:
                continue
            found.append(_diagnosis(parent, thread, children, pictures))
    return found


def _diagnosis(
    parent: Picture, thread: Thread, children: list[Picture], pictures: list[Picture]
) -> Diagnosis:
    caller = _caller(thread)
    evidence = [
        f"{thread_label(parent, thread)} waits for "
        + ", ".join(f"pid {c.pid}" for c in children)
        + f" to exit at {at(caller)}"
        + (f" ({thread.syscall.label})" if thread.syscall is not None else "")
    ]
    sites = [s for s in (loc(caller),) if s is not None]
    stdin_holders: list[str] = []
    busy = False
    for child in children:
        main = _main(child)
        if main is None:
            evidence.append(f"child pid {child.pid} ({child.command[:80]}): not read")
            continue
        where = f" at {at(main.last_python)}" if main.last_python else ""
        call = main.syscall
        if main.busy:
            busy = True
            evidence.append(
                f"child pid {child.pid} ({child.command[:80]}) runs{where}: {main.cpu_label}"
            )
        elif call is not None:
            evidence.append(
                f"child pid {child.pid} ({child.command[:80]}) is blocked in {call.label}{where}"
            )
            if call.fd is not None and (call.fd_target or "").startswith("pipe:"):
                pipe = call.fd_target or ""
                holders = [
                    f"{p.role} (pid {p.pid}, fd {', '.join(map(str, p.pipe_writes[pipe]))})"
                    for p in pictures
                    if pipe in p.pipe_writes
                ]
                what = "its stdin" if call.fd == 0 else f"fd {call.fd}"
                evidence.append(
                    f"  {what} is {call.fd_target}; its write end is held open by "
                    + (", ".join(holders) if holders else "no process of this program")
                )
                if call.fd == 0:
                    stdin_holders.extend(holders)
        else:
            evidence.append(
                f"child pid {child.pid} ({child.command[:80]}){where}: the call it waits in "
                "could not be read from /proc"
            )
        if main.last_python is not None and main.last_python.where is not None:
            sites.append(main.last_python.where)
    if stdin_holders:
        title = "Child process: the program waits for a child that waits to read its stdin"
        meaning = (
            "The program waits for the child to exit; the child waits for input on its "
            f"stdin, a pipe whose write end {', '.join(stdin_holders)} holds open. It gets "
            "data or end of file only when that end is written or closed, and the program "
            "does neither while it waits: neither can move."
        )
        tries: tuple[str, ...] = (
            "Give the input and close stdin in one call: `p.communicate(input=...)` writes, "
            "closes stdin, then waits.",
            "If the child needs no input, start it with `stdin=subprocess.DEVNULL`; or "
            "`p.stdin.close()` before `p.wait()`.",
        )
    elif busy:
        title = "Child process: the program waits for a child that is still running"
        meaning = "The wait ends when the child exits; the child is busy (see its CPU)."
        tries = ("Look at what the child computes (its frames below), or give it a timeout: "
                 "`p.wait(timeout=...)`.",)  # fmt: skip
    else:
        title = "Child process: the program waits for a child that is blocked"
        meaning = (
            "The program waits for the child to exit; the child is blocked where the "
            "evidence says, and the wait lasts as long as that does."
        )
        tries = (
            "Look at what the child waits for (its frames and call below); "
            "`p.wait(timeout=...)` turns the hang into subprocess.TimeoutExpired.",
        )
    return Diagnosis(
        kind="child_process",
        title=title,
        where=where_ids((parent, thread), *[(c, m) for c in children if (m := _main(c))]),
        evidence=tuple(evidence),
        meaning=meaning,
        try_next=tries,
        sites=tuple(sites),
    )


def _caller(thread: Thread) -> Frame | None:
    """The innermost frame outside subprocess / multiprocessing: the user's wait."""
    frames = thread.python_frames
    return next(
        (f for f in reversed(frames) if not any(p in (f.file or "") for p in _PLUMBING)),
        thread.last_python,
    )


def _main(picture: Picture) -> Thread | None:
    main = next((t for t in picture.threads if t.tid == picture.pid), None)
    return main or (picture.threads[0] if picture.threads else None)
