"""A program's run ends when its main process exits: `trace`, `graph` and `ab` do not
wait for what it left running (a Popen'd child, a fork, a session of its own); they
stop it and name it. A daemon thread ends with its process."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import pytest
from fixtures.user_state import marked_processes

from onboard.jsonable import to_json
from onboard.workflows.ab import compare
from onboard.workflows.trace.autograd_graph import GraphRequest, graph
from onboard.workflows.trace.profile import TraceRequest, trace

PY = sys.executable
# Far longer than the timeout: a run that waits for the leftover reports a timeout.
TIMEOUT = 120.0
TORCH_WORK = "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\n"
LEAVERS = {
    "popen": "import subprocess\nsubprocess.Popen(['sleep', '300'])\n",
    "fork": ("import os, time\nif os.fork() == 0:\n    os.execvp('sleep', ['sleep', '300'])\n"),
    "own session": (
        "import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True)\n"
    ),
}
DAEMON_THREAD = (
    "import threading, time\n"
    "threading.Thread(target=time.sleep, args=(300,), daemon=True).start()\n"
)


@pytest.fixture
def mark(monkeypatch: pytest.MonkeyPatch) -> str:
    """A mark every process of the run inherits: what is left of it afterwards."""
    value = secrets.token_hex(8)
    monkeypatch.setenv("ONBOARD_TEST_MARK", value)
    return value


def _script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(text + TORCH_WORK, encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", sorted(LEAVERS))
def test_trace_ends_with_the_program_and_names_what_it_left(
    tmp_path: Path, mark: str, kind: str
) -> None:
    script = _script(tmp_path, LEAVERS[kind])
    result = trace(TraceRequest(command=[PY, str(script)], timeout=TIMEOUT))
    data = to_json(result)
    left = data["left_running"]
    assert [entry["command"] for entry in left] == ["sleep 300"]
    assert any(f"pid {left[0]['pid']}, `sleep 300`" in note for note in data["notes"])
    assert any("left 1 process running" in note for note in data["notes"])
    assert marked_processes(mark) == []  # stopped, not just named


def test_graph_ends_with_the_program_and_names_what_it_left(tmp_path: Path, mark: str) -> None:
    script = _script(tmp_path, LEAVERS["popen"])
    result = graph(GraphRequest(command=[PY, str(script)], timeout=TIMEOUT))
    data = to_json(result)
    assert [entry["command"] for entry in data["left_running"]] == ["sleep 300"]
    assert any("left 1 process running" in note for note in data["notes"])
    assert marked_processes(mark) == []


def test_a_daemon_thread_ends_with_its_process(tmp_path: Path, mark: str) -> None:
    result = trace(
        TraceRequest(command=[PY, str(_script(tmp_path, DAEMON_THREAD))], timeout=TIMEOUT)
    )
    assert to_json(result)["left_running"] == []
    assert not any("left" in note and "running" in note for note in result.notes)
    assert marked_processes(mark) == []


def test_ab_ends_each_run_with_the_script_and_names_what_it_left(tmp_path: Path, mark: str) -> None:
    script = tmp_path / "bench.py"
    script.write_text(LEAVERS["popen"] + "print('answer=42')\n", encoding="utf-8")
    result = compare(script, ws=None, python=PY, b=PY, rounds=1, timeout=TIMEOUT)
    data = to_json(result)
    assert sorted(data["left_running"]) == ["A", "B"]
    for side in ("A", "B"):
        # one warm-up run and one counted run per side, each leaving its own `sleep`
        assert [e["command"] for e in data["left_running"][side]] == ["sleep 300"] * 2
    assert any("left 2 processes running" in note for note in data["notes"])
    assert marked_processes(mark) == []
