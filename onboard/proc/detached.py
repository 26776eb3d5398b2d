"""What a run leaves working after it: a forked copy of onboard that finishes a cache
write (``detach``), and children a normal run released to finish on their own
(``Child.release``: `where`'s background indexer). ``reaping`` leaves both alone
after a normal end; an interrupted run stops the released children too."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from onboard.proc import tree
from onboard.proc.spawn import BACKGROUND_NICE

_DETACHED: set[int] = set()  # forked copies and released children
# Released children are held, and reaped when the next one is released: a Popen
# dropped while its process runs warns, and one never waited for stays a zombie.
_RELEASED: list[subprocess.Popen[Any]] = []


def release(child: subprocess.Popen[Any]) -> None:
    """``child`` works on after the run (it must not write to our pipes any more)."""
    _RELEASED[:] = [p for p in _RELEASED if p.poll() is None]
    _RELEASED.append(child)
    _DETACHED.add(child.pid)


def kept() -> set[int]:
    """What a normal end of the run leaves running: the detached copies, the released
    children and what those started (it carries the run's token, as they do)."""
    if not _DETACHED:
        return set()
    found = set(_DETACHED)
    for pid in [p.pid for p in _RELEASED if p.poll() is None]:
        found.update(tree.descendants(pid))
    return found


def detach(work: Callable[[], None]) -> bool:
    """Run ``work`` in a forked copy of this process that outlives it; False (and
    nothing run) where that cannot be done safely, so the caller runs it itself.

    For what the user is not waiting on and may be lost (a cache write: the
    next run redoes it), as `git gc --auto` detaches: the copy has its own
    session (Ctrl-C in the terminal is not its), no stdin, stdout or stderr
    (the answer is the parent's to print), and leaves with ``os._exit`` (the
    parent's exit handlers and buffers are the parent's). ``reaping`` leaves
    it alone: it holds no pipe of the parent's, and what it does is whole or
    not done (an atomic file replace).
    """
    # Forking a process with other threads can copy a lock another thread holds.
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # the copy
        code = 0
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            with contextlib.suppress(OSError):
                os.nice(BACKGROUND_NICE)
            work()
        except BaseException:  # nobody to tell: the work is redone next time
            code = 1
        finally:
            os._exit(code)
    _DETACHED.add(pid)
    return True
