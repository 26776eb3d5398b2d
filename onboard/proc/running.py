"""Running a command to its end (``run``), or starting it now and reading its result
later (``start``): argument lists only (never ``shell=True``), an explicit ``cwd``,
git never prompting for credentials, and failures turned into ``ProcError`` with
the command and its output (the pre-commit ``cmd_output`` idea)."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard.errors import ProcError, ProcTimeout
from onboard.proc import contain, tree
from onboard.proc.spawn import (
    BACKGROUND_NICE,
    GRACE_SECONDS,
    environ,
    new_token,
    spawn,
    stop_group,
    which,
)
from onboard.proc.tree import Leftover


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    # What the command left running when it exited, stopped since (``until_main_exits``).
    left_running: tuple[Leftover, ...] = ()
    # Bytes of stdout and of stderr not kept (``until_main_exits``: a bounded tail).
    dropped: tuple[int, int] = (0, 0)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = True,
    input: str | bytes | None = None,
    what: str | None = None,
    next_step: str | None = None,
    starts_daemon: bool = False,
    background: bool = False,
    until_main_exits: bool = False,
) -> Result:
    """Run a command to completion and capture its output as text.

    ``check`` turns a non-zero exit into ``ProcError``; ``what`` names the step
    in that error ("fetching the commit"). ``starts_daemon``: the command may
    start a server meant to outlive onboard (sccache's), so it is not marked as
    this run's and ``reaping`` leaves it alone. ``input`` may be bytes (a
    ``git fast-import`` stream with binary blobs); output is text either way.
    ``background``: work that runs beside the step a user waits on (verify's nvcc
    beside its CPU compile) runs under ``nice``, it and every process it starts.
    ``until_main_exits``: the run ends when the command's own process exits (a user's
    program), not when every process holding its output has (what it left running,
    a server or a forgotten child, would hold it until the timeout); what it left is
    stopped and named in ``Result.left_running``. Such a program runs contained
    (``contain.Group``: its cgroup, or its session and its orphans) and only the last
    ``tree.TAIL_BYTES`` of each of its outputs are kept (``Result.dropped``).
    """
    return start(
        args,
        cwd=cwd,
        env=env,
        extra_env=extra_env,
        timeout=timeout,
        check=check,
        input=input,
        what=what,
        next_step=next_step,
        starts_daemon=starts_daemon,
        background=background,
        until_main_exits=until_main_exits,
    ).result()


def start(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = True,
    input: str | bytes | None = None,
    what: str | None = None,
    next_step: str | None = None,
    starts_daemon: bool = False,
    background: bool = False,
    until_main_exits: bool = False,
) -> Running:
    """``run``, started now and waited for at ``Running.result()``.

    For a command whose answer is needed later in the run (harvest's `git
    status` while its cache is read): the child works on another core, with no
    thread of ours competing for the interpreter meanwhile. ``timeout`` counts
    from the start. A run that ends without asking for the result (an error,
    Ctrl-C) leaves the child to ``reaping``, like any other."""
    binary = isinstance(input, bytes)
    argv = [os.fspath(a) for a in args]
    launch = _niced(argv) if background else argv
    full_env = dict(env) if env is not None else environ()
    if extra_env:
        full_env.update(extra_env)
    began = time.monotonic()
    group = None
    extra: dict[str, Any] = {}
    if until_main_exits:  # a program: contained, recorded before it starts
        token = new_token()
        group = contain.Group(what or shlex.join(argv), token)
        extra = {"token": token, "preexec_fn": group.preexec}
    try:
        popen, token = spawn(
            launch,
            cwd=cwd,
            env=full_env,
            daemon=starts_daemon,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=not binary,
            errors=None if binary else "replace",
            **extra,
        )
    except BaseException:
        if group is not None:
            group.close()
        raise
    if group is not None:
        group.started(popen.pid)
    if background:
        _lower_autogroup(popen.pid)
    running = Running(
        popen, argv, token, began, timeout, check, input, what, next_step, until_main_exits
    )
    running.group = group
    return running


class Running:
    """A command ``start`` started: ``result()`` waits for it and reads its output."""

    def __init__(
        self,
        popen: subprocess.Popen[Any],
        argv: list[str],
        child: str,
        began: float,
        timeout: float | None,
        check: bool,
        input: str | bytes | None,
        what: str | None,
        next_step: str | None,
        until_main_exits: bool = False,
    ) -> None:
        self._popen = popen
        self.argv = argv
        self._child = child
        self._began = began
        self._timeout = timeout
        self._check = check
        self._input = input
        self._what = what
        self._next_step = next_step
        self._result: Result | None = None
        self.until_main_exits = until_main_exits  # see ``run``
        self.group: contain.Group | None = None  # the program's (``until_main_exits``)
        self._dropped = (0, 0)

    @property
    def pid(self) -> int:
        return self._popen.pid

    def result(self) -> Result:
        """The finished command (the same object when asked again); ``ProcError`` on a
        non-zero exit with ``check``, ``ProcTimeout`` past the timeout (it is stopped)."""
        if self._result is not None:
            return self._result
        popen, argv = self._popen, self.argv
        # The deadline is a timer that stops the child, not communicate()'s own
        # timeout: with one, Popen waits for the exit by polling with sleeps that
        # double from 1 ms, which cost a short git call several milliseconds
        # (a child closes its pipes a moment before it exits).
        expired = threading.Event()
        timer = None
        if self._timeout is not None:
            left = max(0.0, self._timeout - (time.monotonic() - self._began))
            timer = threading.Timer(left, self._expire, (expired,))
            timer.daemon = True
            timer.start()
        leftovers: tuple[Leftover, ...] = ()
        try:
            if self.until_main_exits:
                out, err, leftovers = self._until_main_exits()
            else:
                out, err = _text(*popen.communicate(input=self._input))
        except BaseException:
            self._stop_all()
            raise
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()
            if self.group is not None:
                self.group.close()
        if expired.is_set():
            raise ProcTimeout(
                f"{self._what or 'The command'} did not finish within {self._timeout:g} s "
                "and was stopped.",
                args=argv,
                returncode=None,
                stdout=out or "",
                stderr=err or "",
                next_step=self._next_step,
            )
        result = Result(
            tuple(argv), popen.returncode, out or "", err or "", time.monotonic() - self._began,
            leftovers, self._dropped,
        )  # fmt: skip
        if self._check and popen.returncode != 0:
            raise ProcError(
                f"{self._what or 'The command'} failed (exit {popen.returncode}): "
                f"{_last_line(err or out)}",
                args=argv,
                returncode=popen.returncode,
                stdout=out or "",
                stderr=err or "",
                next_step=self._next_step,
            )
        self._result = result
        return result

    def _until_main_exits(self) -> tuple[str, str, tuple[Leftover, ...]]:
        group = self.group
        assert group is not None
        out, err, left, self._dropped = tree.output_until_exit(
            self._popen, self._input, lambda: group.stop(GRACE_SECONDS), GRACE_SECONDS
        )
        return out, err, left

    def _stop_all(self) -> None:
        """Stop the command with its process group, and what its group holds."""
        stop_group(self._popen, self._child)
        if self.group is not None:
            self.group.kill()

    def _expire(self, expired: threading.Event) -> None:
        expired.set()
        self._stop_all()

    def stop(self) -> None:
        """Stop the command when it is still running, with its process group: SIGTERM
        first, so that a git holding ``index.lock`` removes it (SIGKILL would leave
        it, and every later git command in that checkout would refuse to run)."""
        if self._result is None and self._popen.poll() is None:
            self._stop_all()
        with contextlib.suppress(OSError, ValueError):
            self._popen.communicate()
        if self._result is None and self.group is not None:
            self.group.close()


def _lower_autogroup(pid: int) -> None:
    """Lower the CPU share of the session ``pid`` leads (Linux autogroups).

    Every command starts in a session of its own, and where the kernel groups
    sessions (``sched_autogroup_enabled``) it shares the CPU between sessions
    first: a niced command alone in its session would still take a whole
    session's share, so the group's own nice value is what yields the cores.
    """
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{BACKGROUND_NICE}\n")


def _niced(argv: list[str]) -> list[str]:
    """``argv`` under ``nice``, when both ``nice`` and the program are there (a missing
    program must still fail as itself, not as nice's exit 127)."""
    nice = which("nice")
    if nice is None or which(argv[0]) is None:
        return argv
    return [nice, "-n", str(BACKGROUND_NICE), *argv]


def _text(out: str | bytes | None, err: str | bytes | None) -> tuple[str, str]:
    def dec(data: str | bytes | None) -> str:
        if isinstance(data, bytes):
            return data.decode("utf-8", errors="replace")
        return data or ""

    return dec(out), dec(err)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"
