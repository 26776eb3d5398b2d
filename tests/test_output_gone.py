"""When its output goes away, work ends: a worker whose report meets a closed pipe
still frees its slot, and the workspace's `nox -s verify` stops (children and all)
when the reader of its output closes it or dies (`onboard verify` SIGKILLed).

Waits are bounded by events (a process exit, a pidfd), never by sleeps."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from fixtures.user_state import marked_processes
from test_new_op import make_workspace

from onboard import proc
from onboard.report import LineReporter, Reporter
from onboard.workflows.newop import jobs

BOUND = 120.0  # for a hang, not a speed: each run here ends in seconds


class _ClosedPipe(Reporter):
    def check_finished(self, name: str, status: str, seconds: float) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def test_a_report_that_meets_a_closed_pipe_still_frees_the_slot() -> None:
    slots = jobs.Slots(1)
    ran: list[str] = []
    work = [
        jobs.Job("first", lambda: ran.append("first")),
        jobs.Job("second", lambda: ran.append("second"), after=("first",)),
    ]
    ended: list[BaseException | None] = []

    def run() -> None:
        try:
            jobs.run_jobs(work, _ClosedPipe(), slots=slots)
            ended.append(None)
        except BaseException as exc:  # noqa: BLE001 - what the runner raised is the answer
            ended.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "the runner waits for ever for a slot nobody frees"
    assert isinstance(ended[0], BrokenPipeError)
    assert ran == ["first"]  # nothing new starts once a job failed
    assert slots.free == slots.total


def test_a_line_reporter_on_a_closed_pipe_does_not_raise_in_its_worker() -> None:
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w") as stream:
        reporter = LineReporter(stream=stream)
        reporter.check_started("a check")  # EPIPE: noted, not raised into the worker
        reporter.check_finished("a check", "passed", 0.1)
        assert reporter.output_gone
        with pytest.raises(BrokenPipeError):
            stream.close()  # (what is still buffered cannot go anywhere either)


def test_an_interrupted_run_started_by_another_onboard_stops_its_own_children(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As in a nox session that `onboard verify` started, and then was killed outright:
    # the run's token is inherited, and nobody up there reaps any more.
    monkeypatch.setenv(proc.RUN_ENV, "started-by-a-dead-onboard")
    with pytest.raises(KeyboardInterrupt), proc.reaping():
        running = proc.start(["sleep", "300"])
        raise KeyboardInterrupt
    assert gone_within([running.pid], BOUND) == []
    # a worker thread of the interrupted run starts nothing new; the main thread may
    refused: list[BaseException] = []

    def worker() -> None:
        try:
            proc.run(["true"])
        except BaseException as exc:  # noqa: BLE001 - the answer under test
            refused.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(BOUND)
    assert refused and isinstance(refused[0], KeyboardInterrupt)
    assert proc.run(["true"]).ok
    with proc.reaping():  # and the next run starts afresh
        outcome: list[bool] = []
        thread = threading.Thread(target=lambda: outcome.append(proc.run(["true"]).ok))
        thread.start()
        thread.join(BOUND)
        assert outcome == [True]


# --------------------------------------------------------------------------
# The workspace's real `nox -s verify`, with one check held by a child process


_NOXFILE = """\
from onboard.tasks.workspace import *  # noqa: F403
from onboard import proc
from onboard.workflows.newop import jobs
from onboard.workflows.verify import PASSED, Check, check

# The job's child holds the release FIFO open, says it is ready, and waits for a line.
_HOLD = 'exec 3<>"$1"; echo ready > "$2"; read line <&3'


@check
def held(ctx):
    def wait():
        return proc.run(["sh", "-c", _HOLD, "sh", {release!r}, {ready!r}], timeout=600).stdout

    jobs.run_jobs([jobs.Job("held job", wait)], ctx.reporter, slots=jobs.Slots(1))
    return Check("held", PASSED, "released")
"""


@dataclass
class Held:
    root: Path
    release: Path
    ready: Path
    env: dict[str, str]

    def wait_ready(self) -> None:
        """Until the job's child runs (it writes into the ready FIFO)."""
        fd = os.open(self.ready, os.O_RDONLY | os.O_NONBLOCK)
        try:
            readable, _, _ = select.select([fd], [], [], BOUND)
            assert readable and os.read(fd, 16) == b"ready\n", "the held job never started"
        finally:
            os.close(fd)

    def release_job(self) -> None:
        """Let the held job end, if its child still runs (it may have been stopped)."""
        try:
            fd = os.open(self.release, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            assert exc.errno == errno.ENXIO  # no reader any more: it was stopped
            return
        os.write(fd, b"go\n")
        os.close(fd)

    def left(self) -> list[int]:
        return marked_processes(self.env["ONBOARD_TEST_MARK"])


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Held]:
    ws = make_workspace(tmp_path / "ws")
    release, ready = tmp_path / "release", tmp_path / "ready"
    os.mkfifo(release)
    os.mkfifo(ready)
    text = _NOXFILE.format(release=str(release), ready=str(ready))
    (ws.root / "noxfile.py").write_text(text, encoding="utf-8")
    env = {**os.environ, "ONBOARD_TEST_MARK": secrets.token_hex(8)}
    found = Held(ws.root, release, ready, env)
    yield found
    for pid in found.left():  # whatever a failed test left
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """Wait on pidfds until every process in ``pids`` has exited; those still alive."""
    fds = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            fds[os.pidfd_open(pid)] = pid
    try:
        waiting = set(fds)
        while waiting:
            ready, _, _ = select.select(list(waiting), [], [], seconds)
            if not ready:
                break
            waiting -= set(ready)
        return [fds[fd] for fd in waiting]
    finally:
        for fd in fds:
            os.close(fd)


def _read_until(stream: IO[str], text: str) -> list[str]:
    seen = []
    for line in stream:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"the output ended before {text!r}:\n{''.join(seen)[-3000:]}")


@pytest.mark.slow
def test_the_session_stops_when_the_reader_of_its_output_closes_it(held: Held) -> None:
    session = subprocess.Popen(
        [sys.executable, "-m", "nox", "-f", str(held.root / "noxfile.py"), "-s", "verify"],
        cwd=held.root, env=held.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    assert session.stdout is not None
    _read_until(session.stdout, "onboard: started: held job")
    held.wait_ready()
    session.stdout.close()  # the reader goes away while the job runs
    held.release_job()  # and the job ends and reports into the closed pipe
    try:
        session.wait(BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail("`nox -s verify` went on after its output was closed")
    assert gone_within(held.left(), BOUND) == []


@pytest.mark.slow
def test_an_orphaned_session_stops_when_onboard_verify_is_killed(held: Held) -> None:
    verify = subprocess.Popen(
        [sys.executable, "-m", "onboard", "verify", "--workspace", str(held.root)],
        cwd=held.root, env=held.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert verify.stderr is not None
    _read_until(verify.stderr, "held job")
    held.wait_ready()
    left = [pid for pid in held.left() if pid != verify.pid]
    assert len(left) >= 2, "the session and its job's child run now"
    verify.kill()  # SIGKILL: no cleanup in onboard; the session's output has no reader
    verify.wait()
    verify.stderr.close()
    # The job is never released: the session must notice by itself.
    still = gone_within(left, BOUND)
    assert still == [], f"left running after `onboard verify` was killed: {still}"
