"""Running a program and watching it: its output goes straight to the terminal;
a snapshot is taken when it stops making progress, on Ctrl-\\ (SIGQUIT to
onboard) or SIGUSR1, and at --timeout. After a snapshot the program goes on
(the next snapshot needs a new stall or a new signal), unless --kill stops it."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from onboard import proc
from onboard.workflows.stuck.progress import Progress
from onboard.workflows.stuck.result import Snapshot

# On-demand signals: Ctrl-\ in the terminal sends SIGQUIT (to onboard alone: the
# program runs in its own session), `kill -USR1 <onboard's pid>` from elsewhere.
ON_DEMAND: dict[int, str] = {signal.SIGQUIT: "Ctrl-\\ (SIGQUIT)", signal.SIGUSR1: "SIGUSR1"}


@dataclass
class Watched:
    snapshots: list[Snapshot] = field(default_factory=list)
    exit_code: int | None = None
    ended: str = ""
    interrupted: bool = False


@dataclass
class Asked:
    """Snapshots asked for with a signal, and the event that wakes the watch for them."""

    reasons: list[str] = field(default_factory=list)
    wake: threading.Event = field(default_factory=threading.Event)


@contextlib.contextmanager
def on_demand() -> Iterator[Asked]:
    """SIGQUIT / SIGUSR1 ask for a snapshot for the length of the block: entered before
    the program starts and onboard names them, since their default action ends onboard."""
    asked = Asked()
    if threading.current_thread() is not threading.main_thread():
        yield asked
        return

    def handler(signum: int, _frame: object) -> None:
        asked.reasons.append(ON_DEMAND.get(signum, f"signal {signum}"))
        asked.wake.set()

    old = {s: signal.signal(s, handler) for s in ON_DEMAND}
    try:
        yield asked
    finally:
        for number, previous in old.items():
            signal.signal(number, previous)


def watch(
    child: proc.Passthrough,
    progress: Progress,
    take: Callable[[str, float], Snapshot],
    *,
    asked: Asked,
    timeout: float | None,
    kill: bool,
    interval: float,
    on_snapshot: Callable[[Snapshot], None],
) -> Watched:
    began = time.monotonic()
    out = Watched()
    stalled_once = False

    def snap(reason: str) -> None:
        snapshot = take(reason, time.monotonic() - began)
        out.snapshots.append(snapshot)
        on_snapshot(snapshot)
        progress.moved()

    try:
        while True:
            code = child.poll()
            if code is not None:
                out.exit_code = code
                out.ended = _how(code)
                return out
            if asked.reasons:
                snap(f"asked for with {asked.reasons.pop(0)}")
            elif timeout is not None and time.monotonic() - began > timeout:
                snap(f"--timeout: still running after {timeout:g} s")
                out.exit_code = child.stop()
                out.ended = f"stopped by onboard at --timeout ({timeout:g} s)"
                return out
            else:
                progress.sample()
                reason = progress.stalled()
                # One automatic snapshot per run: a deadlock would repeat it every
                # window; Ctrl-\\ takes more on demand.
                if reason is not None and not stalled_once and child.poll() is None:
                    snap(reason)
                    stalled_once = True
            if kill and out.snapshots:
                out.exit_code = child.stop()
                out.ended = "stopped by onboard after the snapshot (--kill)"
                return out
            asked.wake.wait(interval)
            asked.wake.clear()
    except KeyboardInterrupt:
        out.exit_code = child.stop()
        out.ended = "stopped by Ctrl-C"
        out.interrupted = True
        if not out.snapshots:
            raise
        return out


def _how(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"the program was killed by {signal.Signals(-code).name}"
        return f"the program was killed by signal {-code}"
    return f"the program exited with status {code}"
