"""Every program onboard runs is in a group onboard finds by what the kernel knows: a
process that forks, `setsid()`s and execs with an *empty environment* (no mark of
onboard's left on it) is still stopped and named when the program exits, under
trace, graph, stuck -- CMD and ab, with a cgroup of the run where the machine lets
onboard write one and without (the session and onboard as a child subreaper).

What the program prints is kept as a bounded tail: a program that prints 200 MB
does not make onboard hold 200 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from onboard import proc
from onboard.jsonable import to_json
from onboard.proc import contain, records
from onboard.proc.records import runs_dir
from onboard.workflows.ab import compare
from onboard.workflows.stuck import StuckRequest, stuck
from onboard.workflows.trace.autograd_graph import GraphRequest, graph
from onboard.workflows.trace.profile import TraceRequest, trace

PY = sys.executable
TIMEOUT = 120.0
# Forks; the child leaves the session and execs `sleep` with nothing in its
# environment; the program writes the child's pid down for the test, and exits.
DETACHED = textwrap.dedent(
    """\
    import os, sys
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.execve("/bin/sleep", ["sleep", "300"], {})
    with open(sys.argv[1], "w") as fh:
        fh.write(str(pid))
    import torch
    x = torch.ones(2, requires_grad=True)
    y = (x * 2).sum()
    """
)


@pytest.fixture(params=[contain.CGROUP, contain.SESSION])
def containment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each mechanism: a cgroup where this machine lets onboard write one (else the
    other, which is then what the answers name), and the session with onboard as a
    child subreaper."""
    monkeypatch.setenv(contain.CONTAINMENT_ENV, request.param)
    contain.decide_again()
    yield contain.mechanism()[0]
    contain.decide_again()


def _alive(pid: int) -> bool:
    """Running (a zombie is not: it has exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def _detached(tmp_path: Path) -> tuple[Path, Path]:
    script = tmp_path / "d.py"
    script.write_text(DETACHED, encoding="utf-8")
    return script, tmp_path / "grandchild.pid"


def _assert_stopped_and_named(pidfile: Path, left: list[dict[str, object]], kind: str) -> None:
    pid = int(pidfile.read_text())
    assert not _alive(pid), "the detached grandchild outlived the program"
    assert {"pid": pid, "command": "sleep 300"} in [
        {"pid": e["pid"], "command": e["command"]} for e in left
    ]
    found = {e["found"] for e in left}
    assert found == {"in its cgroup" if kind == contain.CGROUP else contain.SESSION_HOW}


def test_a_detached_grandchild_under_trace_is_stopped_and_named(
    tmp_path: Path, containment: str
) -> None:
    script, pidfile = _detached(tmp_path)
    result = trace(TraceRequest(command=[PY, str(script), str(pidfile)], timeout=TIMEOUT))
    data = to_json(result)
    _assert_stopped_and_named(pidfile, data["left_running"], containment)
    assert any(f"pid {pidfile.read_text()}, `sleep 300`" in n for n in data["notes"])


def test_a_detached_grandchild_under_graph_is_stopped_and_named(
    tmp_path: Path, containment: str
) -> None:
    script, pidfile = _detached(tmp_path)
    result = graph(GraphRequest(command=[PY, str(script), str(pidfile)], timeout=TIMEOUT))
    _assert_stopped_and_named(pidfile, to_json(result)["left_running"], containment)


def test_a_detached_grandchild_under_stuck_is_stopped_and_named(
    tmp_path: Path, containment: str
) -> None:
    script, pidfile = _detached(tmp_path)
    result = stuck(StuckRequest(command=[PY, str(script), str(pidfile)], after=60, timeout=TIMEOUT))
    pid = int(pidfile.read_text())
    assert not _alive(pid), "the detached grandchild outlived the program"
    assert any(f"pid {pid}, `sleep 300`" in note for note in result.notes)


def test_a_detached_grandchild_under_ab_is_stopped_and_named(
    tmp_path: Path, containment: str
) -> None:
    script = tmp_path / "bench.py"
    pids = tmp_path / "pids"
    script.write_text(
        textwrap.dedent(
            f"""\
            import os
            pid = os.fork()
            if pid == 0:
                os.setsid()
                os.execve("/bin/sleep", ["sleep", "300"], {{}})
            with open({str(pids)!r}, "a") as fh:
                fh.write(f"{{pid}}\\n")
            print("answer=42")
            """
        ),
        encoding="utf-8",
    )
    data = to_json(compare(script, ws=None, python=PY, b=PY, rounds=1, timeout=TIMEOUT))
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 4  # a warm-up and a counted run on each side
    assert not [p for p in started if _alive(p)]
    named = [e["pid"] for side in ("A", "B") for e in data["left_running"][side]]
    assert sorted(named) == sorted(started)


def test_the_record_is_written_before_the_program_runs_and_removed_after(
    tmp_path: Path, containment: str
) -> None:
    seen = tmp_path / "seen"
    records = runs_dir()
    code = f"import os; open({str(seen)!r}, 'w').write('\\n'.join(os.listdir({str(records)!r})))"
    result = proc.run([PY, "-c", code], until_main_exits=True, timeout=TIMEOUT)
    assert result.ok
    (name,) = [n for n in seen.read_text().split() if n.startswith(f"{os.getpid()}-")]
    assert not (records / name).exists()


def test_a_program_that_prints_200_mb_leaves_onboard_small(tmp_path: Path) -> None:
    """Measured in a process of its own: its peak RSS (``ru_maxrss``) once the output of
    a program that printed 200 MB to stdout has been read."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        textwrap.dedent(
            """\
            import resource, sys
            from onboard import proc
            prints = "import sys\\nblock = b'x' * 1023 + b'\\\\n'\\n" \\
                "for _ in range(200 * 1024): sys.stdout.buffer.write(block)\\n" \\
                "print('the end')\\n"
            r = proc.run([sys.executable, "-c", prints], until_main_exits=True, timeout=300)
            assert r.stdout.endswith("the end\\n"), r.stdout[-100:]
            assert r.stdout.startswith("[onboard kept the last"), r.stdout[:100]
            assert r.dropped[0] > 190 * 2**20, r.dropped
            print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run([PY, str(probe)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    peak_mib = int(done.stdout.split()[-1]) / 1024  # ru_maxrss: KiB on Linux
    assert peak_mib < 120, f"onboard held {peak_mib:.0f} MiB reading a 200 MB output"


def _dead_pid() -> int:
    """A pid no process has now (one that just exited and was waited for)."""
    probe = subprocess.Popen(["true"])
    probe.wait()
    return probe.pid


def test_a_sweep_never_takes_a_reused_pid_for_a_dead_runs_process(tmp_path: Path) -> None:
    """A record names each process by pid and start time: a live process under one of its
    pids that started at another time is someone else's (the pid was reused)."""
    other = subprocess.Popen(["sleep", "300"])
    try:
        start = records.start_time(other.pid)
        assert start is not None
        folder = records.runs_dir()
        folder.mkdir(parents=True, exist_ok=True)
        dead = {"pid": _dead_pid(), "start": 1}
        reused = {"pid": other.pid, "start": start - 1}  # the dead run's, long gone
        for name, owner in (
            ("dead", dead),
            ("alive", {"pid": os.getpid(), "start": records.start_time(os.getpid())}),
        ):
            (folder / f"{name}.json").write_text(json.dumps({
                "version": 1, "onboard": owner, "command": "prog", "mark": "0" * 12,
                "cgroup": None, "processes": [reused if name == "dead" else
                                              {"pid": other.pid, "start": start}],
            }))  # fmt: skip
        assert records.sweep_dead() == []
        assert _alive(other.pid)  # neither the reused pid, nor a live run's own process
        assert not (folder / "dead.json").exists()  # a dead run's record goes
        assert (folder / "alive.json").exists()  # a live onboard's stays
        # The same record with the right start time: that process is the dead run's.
        (folder / "dead.json").write_text(json.dumps({
            "version": 1, "onboard": dead, "command": "prog", "mark": "0" * 12,
            "cgroup": None, "processes": [{"pid": other.pid, "start": start}],
        }))  # fmt: skip
        (swept,) = records.sweep_dead()
        assert [p.pid for p in swept.stopped] == [other.pid]
        assert other.wait(10) is not None
    finally:
        other.kill()
        other.wait()


def test_an_empty_cgroup_whose_record_is_gone_is_removed(tmp_path: Path) -> None:
    """A killed onboard's cgroup outlives the record that named it when the record's
    folder goes (a removed state folder, a container's throwaway home): the next sweep
    removes it once it is empty, so killed runs leave no cgroup each behind; one that
    still holds a process is left for the record that names it (another state
    folder's run), and a live onboard's is its own. Where this machine gives onboard no
    writable cgroup, there is none to leave, and the sweep has nothing of this kind."""
    kind, base = contain.mechanism()
    if kind != contain.CGROUP or base is None:
        assert proc.sweep_dead_runs() == []
        return
    dead = _dead_pid()
    empty = base / f"onboard-{dead}-0badc0de"
    held = base / f"onboard-{dead}-0badf00d"
    live = base / f"onboard-{os.getpid()}-0badc0de"
    for path in (empty, held, live):
        path.mkdir()
    other = subprocess.Popen(["sleep", "300"])
    try:
        (held / "cgroup.procs").write_text(str(other.pid))
        assert proc.sweep_dead_runs() == []
        assert not empty.exists()
        assert held.is_dir() and _alive(other.pid)
        assert live.is_dir()
    finally:
        other.kill()
        other.wait()
        for path in (empty, held, live):
            if path.is_dir():
                path.rmdir()
