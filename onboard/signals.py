"""Every signal a terminal sends, handled the same way by every command.

Three rules make an interrupt safe:

- SIGTERM (`timeout`, CI cancelling a job, `kill`), SIGHUP (the terminal
  closed) and SIGQUIT (Ctrl-\\) are raised like Ctrl-C (``Terminated`` is a
  ``KeyboardInterrupt``), so every ``finally``, every rollback and the
  reaping of children run; the CLI exits 130 for each.
- Inside ``critical()`` a signal is held back and raised when the section
  ends. Everything that must not be cut in half runs there: a git command
  that moves a tree (killing git halfway leaves ``index.lock`` and a
  half-written checkout) and every rollback.
- After ``work_complete()`` the run's work is done and kept: a late signal
  is noted, not raised, so the command still prints its result and exits
  with its own status instead of claiming an interruption that undid nothing.

Handlers live in the main thread only (Python delivers signals there); in
other threads ``critical()`` does nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Terminated(KeyboardInterrupt):
    """SIGTERM, SIGHUP or SIGQUIT, raised like Ctrl-C so every ``finally`` runs
    (the CLI exits 130)."""


class _State:
    def __init__(self) -> None:
        self.depth = 0  # nested critical sections
        self.pending: int | None = None  # a signal held back
        self.complete = False  # the run's work is done and kept
        self.late: int | None = None  # a signal that arrived after that
        self.installed = 0  # nesting of handlers()
        self.old: dict[int, Any] = {}


_state = _State()


def _raise(signum: int) -> None:
    if signum != signal.SIGINT:
        raise Terminated()
    raise KeyboardInterrupt()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.complete:
        _state.late = signum
        return
    if _state.depth > 0:
        _state.pending = signum
        return
    _raise(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def handlers() -> Iterator[None]:
    """Install onboard's handlers for the block (re-entrant).

    A handler someone else installed (a test runner, an embedding program, a
    shell's `nohup` ignoring SIGHUP) is left alone; a signal is ours whenever
    the default owns it.
    """
    if not _main_thread():
        yield
        return
    if _state.installed == 0:
        _state.old = {}
        for signum in _SIGNALS:
            current = signal.getsignal(signum)
            ours = current in (signal.SIG_DFL, signal.default_int_handler)
            if ours:
                _state.old[signum] = signal.signal(signum, _handler)
    _state.installed += 1
    try:
        yield
    finally:
        _state.installed -= 1
        if _state.installed == 0:
            for number, old in _state.old.items():
                signal.signal(number, old)
            _state.old = {}


@contextmanager
def critical() -> Iterator[None]:
    """Hold the signals above back until the block ends, then raise it.

    Only the main thread receives signals, so elsewhere this does nothing."""
    if not _main_thread():
        yield
        return
    with handlers():
        _state.depth += 1
        try:
            yield
        finally:
            _state.depth -= 1
        if _state.depth == 0 and _state.pending is not None and not _state.complete:
            signum, _state.pending = _state.pending, None
            _raise(signum)


def work_complete() -> None:
    """The run's work is done and kept: later signals are noted, not raised."""
    _state.complete = True
    if _state.pending is not None:
        _state.late, _state.pending = _state.pending, None


def late_signal() -> int | None:
    """A signal that arrived after ``work_complete()`` (for the final note)."""
    return _state.late


def unfinished() -> tuple[int | None, int]:
    """(a signal still held back, critical sections still open): (None, 0) between runs."""
    return _state.pending, _state.depth


def reset() -> None:
    """Forget the run's state (the CLI calls it per invocation; tests run many)."""
    _state.depth = 0
    _state.pending = None
    _state.complete = False
    _state.late = None
