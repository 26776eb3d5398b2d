"""A long command whose output comes line by line (``stream``): a build, a fetch."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from onboard.errors import ProcTimeout
from onboard.proc.spawn import environ, spawn, stop_group


def stream(
    args: Sequence[str | os.PathLike[str]],
    *,
    on_line: Callable[[str], None],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    timeout: float | None = None,
    idle_timeout: float | None = None,
) -> int:
    """Run a long command, feeding each output line (stdout+stderr) to ``on_line``.

    Everything also goes to ``log_path`` when given. Returns the exit status;
    a signal death is reported the shell way (128 + signal number) so callers
    can tell a crash from a failure. ``idle_timeout`` stops a command that
    prints nothing for that long (a silent server); a watchdog thread enforces
    it and ``timeout`` even while no line arrives. Carriage returns end lines
    too (text mode), so progress meters arrive as lines.
    """
    argv = [os.fspath(a) for a in args]
    deadline = None if timeout is None else time.monotonic() + timeout
    proc, child = spawn(
        argv,
        cwd=cwd,
        env=env if env is not None else environ(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
    )
    log = log_path.open("a", encoding="utf-8") if log_path else None
    last_output = [time.monotonic()]
    stopped: list[str] = []
    watchdog = None
    if idle_timeout is not None or deadline is not None:
        watchdog = _Watchdog(proc, child, last_output, stopped, deadline, idle_timeout)
        watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            last_output[0] = time.monotonic()
            if log:
                log.write(line)
            on_line(line.rstrip("\n"))
            if deadline is not None and time.monotonic() > deadline:
                stopped.append(f"did not finish within {timeout:g} s")
                stop_group(proc, child)
                break
        proc.wait()
    except BaseException:
        stop_group(proc, child)
        raise
    finally:
        if watchdog is not None:
            watchdog.done.set()
            watchdog.join()
        if log:
            log.close()
    if stopped:
        raise ProcTimeout(
            f"The command {stopped[0]} and was stopped.",
            args=argv,
            returncode=None,
        )
    code = proc.returncode
    return 128 - code if code < 0 else code


class _Watchdog(threading.Thread):
    """Stops a streamed command that is silent too long or past its deadline."""

    def __init__(
        self,
        proc: subprocess.Popen[str],
        child: str,
        last_output: list[float],
        stopped: list[str],
        deadline: float | None,
        idle_timeout: float | None,
    ) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.child = child
        self.last_output = last_output
        self.stopped = stopped
        self.deadline = deadline
        self.idle_timeout = idle_timeout
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            now = time.monotonic()
            if self.deadline is not None and now > self.deadline:
                self.stopped.append("ran past its time limit")
            elif self.idle_timeout is not None and now - self.last_output[0] > self.idle_timeout:
                self.stopped.append(f"printed nothing for {self.idle_timeout:g} s")
            else:
                continue
            stop_group(self.proc, self.child)
            return
