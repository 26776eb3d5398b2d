"""Work that stops when nobody reads its output any more.

A workspace nox session (`nox -s verify`) reports to whoever reads its stdout:
`onboard verify`, a terminal, a pipe. When that reader is gone (`onboard
verify` killed, `| head` done), the work has no one left to answer and must
not run on for minutes as an orphan. So, inside ``stop_when_unread()``:

- a writer that meets EPIPE (``LineReporter``) calls ``gone()`` instead of
  raising into its worker thread;
- a watcher thread notices it even while nothing is written (a long compile):
  the write end of a pipe whose readers are all gone polls as POLLERR, a hung
  up terminal as POLLHUP (Linux ``pipe_poll`` and ``tty_poll``); a file or
  /dev/null never does.

Either way the main thread gets SIGTERM, which ``signals.handlers`` raises as
an interrupt: the same cleanup as Ctrl-C (the transaction, the children).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Iterator

_FDS = (1, 2)  # stdout, stderr


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0  # open stop_when_unread() blocks
        self.fired = False


_state = _State()


def gone() -> None:
    """The output has no reader: interrupt the main thread once (inside
    ``stop_when_unread()``; elsewhere nothing happens)."""
    with _state.lock:
        if not _state.active or _state.fired:
            return
        _state.fired = True
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)


@contextlib.contextmanager
def stop_when_unread() -> Iterator[None]:
    """For the block: when stdout or stderr loses its reader, the run is interrupted.

    Use it inside ``signals.handlers()`` (SIGTERM must be raised, not fatal)."""
    wake_r, wake_w = os.pipe()
    watcher = threading.Thread(target=_watch, args=(wake_r,), daemon=True)
    with _state.lock:
        _state.active += 1
        _state.fired = False
    watcher.start()
    try:
        yield
    finally:
        with _state.lock:
            _state.active -= 1
        os.write(wake_w, b"x")
        watcher.join()
        os.close(wake_r)
        os.close(wake_w)


def _watch(wake: int) -> None:
    poller = select.poll()
    poller.register(wake, select.POLLIN)
    for fd in _FDS:
        with contextlib.suppress(OSError, ValueError):
            poller.register(fd, 0)  # only POLLERR / POLLHUP, which are always reported
    while True:
        try:
            events = poller.poll()
        except InterruptedError:
            continue
        if any(fd == wake for fd, _ in events):
            return
        if any(mask & (select.POLLERR | select.POLLHUP) for fd, mask in events):
            gone()
            return
        for fd, mask in events:  # POLLNVAL: a closed descriptor, nothing to watch there
            if mask & select.POLLNVAL:
                poller.unregister(fd)
