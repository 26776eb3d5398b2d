"""The end of a run: every process started under it that still runs is stopped
(``reaping``), and the work left for after the answer starts (``detach_after_run``)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator

from onboard.proc import contain, detached, tree
from onboard.proc.spawn import CHILD_ENV, RUN_ENV, kill_all, marked, spawned, stop_starting


class Reaper:
    """What ``reaping`` stops at the end: everything, or (``finished``: the run
    ended normally) everything but what was left to work on (``detached``)."""

    def __init__(self) -> None:
        self.finished = False


_runs = [0]  # open `reaping` blocks
_after_run: list[Callable[[], None]] = []


@contextlib.contextmanager
def reaping() -> Iterator[Reaper]:
    """Stop, when the block ends, every process started under it that still runs;
    then, after a normal end, start the work left for after it (``detach_after_run``)."""
    reaper = Reaper()
    _runs[0] += 1
    if _runs[0] == 1:
        spawned.stopping = False  # a new run
    try:
        if os.environ.get(RUN_ENV):
            # An onboard further up (this process's, or the one that started us) reaps
            # for both. But when that one is another process, it may be gone (killed
            # outright): an interrupted run stops its own children itself.
            try:
                yield reaper
            except BaseException:
                if _runs[0] == 1:
                    stop_starting()
                    kill_descendants()
                raise
            finally:
                if _runs[0] == 1:
                    contain.end_open_groups()
            return
        token = os.urandom(8).hex()  # (not `secrets`: the same bytes, a slower import)
        os.environ[RUN_ENV] = token
        started = spawned.count
        try:
            yield reaper
        except BaseException:
            stop_starting()
            raise
        finally:
            os.environ.pop(RUN_ENV, None)
            contain.end_open_groups()  # a program whose end nobody read
            if spawned.count != started:
                _sweep(token, keep_detached=reaper.finished)
    except BrokenPipeError:
        reaper.finished = True  # the reader stopped reading: the run's work is done
        raise
    finally:
        _runs[0] -= 1
        later: list[Callable[[], None]] = []
        if not _runs[0]:  # the outermost block: the run itself ends here
            later, _after_run[:] = _after_run[:], []
        if reaper.finished and later:
            # The answer is out first: whatever is buffered goes before the fork.
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            for work in later:
                if not detached.detach(work):
                    work()


def _sweep(token: str, *, keep_detached: bool) -> None:
    """SIGKILL what carries the run's ``token``; after a normal end, not what was left to
    work on (asked again each round: a released child may be starting its own)."""

    def left() -> list[int]:
        pids = marked(token)
        keep = detached.kept() if keep_detached else set()
        return [pid for pid in pids if pid not in keep]

    kill_all(left)


def detach_after_run(work: Callable[[], None]) -> None:
    """``detach(work)`` once this run has answered and cleaned up (the end of its
    ``reaping`` block), or now outside a run; ``work`` itself where it cannot be
    detached. After the answer, the copy's memory is no longer the one this
    process is still touching (a fork shares pages until either writes them)."""
    if _runs[0]:
        _after_run.append(work)
    elif not detached.detach(work):
        work()


def kill_descendants() -> list[int]:
    """SIGKILL every live process this one started, and what they started: its process
    tree, and the holders of its children's tokens that left it."""
    needles = [tree.mark(CHILD_ENV, t) for t in spawned.tokens]
    return kill_all(lambda: tree.descendants(os.getpid(), needles))
