"""``proc.start``: a command started now and read later (harvest's `git status`
runs so while the cached result is read), stopped with SIGTERM first when its
answer is no longer wanted."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from onboard import proc
from onboard.errors import ProcError, ProcTimeout


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_started_commands_answer_like_run(tmp_path: Path) -> None:
    running = proc.start(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    result = running.result()
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert running.result() is result  # asked again: the same answer
    with pytest.raises(ProcError) as failed:
        proc.start(["sh", "-c", "exit 4"], what="the step").result()
    assert "the step failed (exit 4)" in failed.value.message
    slow = proc.start(["sleep", "30"], timeout=0.3)
    with pytest.raises(ProcTimeout):
        slow.result()
    assert _gone(slow.pid)


def test_stopping_a_started_command_lets_it_clean_up(tmp_path: Path) -> None:
    """SIGTERM first (git removes its index.lock on it), not SIGKILL."""
    lock = tmp_path / "index.lock"
    ready = tmp_path / "ready"
    script = (
        f"trap 'rm -f {lock}; exit 143' TERM; touch {lock}; touch {ready}; "
        "while :; do sleep 0.05; done"
    )
    running = proc.start(["sh", "-c", script])
    for _ in range(200):
        if ready.exists():
            break
        time.sleep(0.01)
    assert lock.exists()
    running.stop()
    assert not lock.exists() and _gone(running.pid)
    running.stop()  # stopping again is harmless


def test_a_deadline_does_not_poll_for_the_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a timeout, Popen waits for a child's exit by sleeping in steps that double
    from 1 ms; the deadline is a timer instead, and the exit is waited for as it comes."""
    import threading

    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (slept.append(s), real_sleep(s))[1])
    # The pipes close 50 ms before the exit, as a child's do a moment before it ends.
    result = proc.run(["sh", "-c", "exec >&- 2>&-; sleep 0.05; exit 7"], timeout=30, check=False)
    assert result.returncode == 7 and slept == []
    assert threading.active_count() == 1  # the timer is gone: a later fork is safe
