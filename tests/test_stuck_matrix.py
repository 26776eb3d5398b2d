"""`onboard stuck` over a matrix of hang programs, each written here.

Every case is a program built to wait in one known way: two threads taking two
locks in opposite orders, a thread busy at 100% CPU beside one polling a queue,
a thread holding the GIL in a blocking native call, DataLoader workers blocked
or idle, a collective one rank never calls, a parent waiting on a child that
reads its stdin, threads with Python names. The truth each test checks is
computed from the program itself: the lines are found by searching its source
text (the line of ``with b:``), torch's own lines by searching the installed
torch's file, the wait kind from how the program was built, never from what
onboard printed. Each case stops every process it started before it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.events import Fifo, still_running
from test_stuck import DATALOADER as LOADER_BLOCKED  # workers forked with a held lock

from onboard.workflows.stuck import StuckRequest, stuck, tools
from onboard.workflows.stuck.result import Snapshot, StuckResult

PY = sys.executable

pytestmark = pytest.mark.skipif(not tools.available(), reason="no stack tool installed")


def line_is(path: Path, exact: str) -> int:
    """The 1-based line of ``path`` that is exactly ``exact`` (indent included)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [i for i, text in enumerate(lines, 1) if text == exact]
    assert len(found) == 1, f"{exact!r} is on lines {found} of {path}"
    return found[0]


def line_with(path: Path, needle: str) -> int:
    """The one line of ``path`` holding ``needle``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [i for i, text in enumerate(lines, 1) if needle in text]
    assert len(found) == 1, f"{needle!r} is on lines {found} of {path}"
    return found[0]


def torch_file(module: str) -> Path:
    """The installed torch's file for a module, asked of a fresh interpreter."""
    code = f"import importlib; print(importlib.import_module({module!r}).__file__)"
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout
    return Path(out.strip())


def all_pids(result: StuckResult) -> list[int]:
    return sorted({p.pid for s in result.snapshots for p in s.pictures})


@contextlib.contextmanager
def stopped_at_the_end(pids: Callable[[], list[int]]) -> Iterator[None]:
    """Every process the case saw is gone when it ends (killed if it was left)."""
    try:
        yield
    finally:
        seen = pids()
        for pid in still_running(seen, 20):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not still_running(seen, 20), "a process of the case outlived it"


def evidence(snap: Snapshot, kind: str) -> str:
    kinds = [d.kind for d in snap.diagnoses]
    assert kind in kinds, f"{kind} not in {kinds}: " + "\n".join(
        line for d in snap.diagnoses for line in d.evidence
    )
    return "\n".join(line for d in snap.diagnoses if d.kind == kind for line in d.evidence)


# --- the programs ------------------------------------------------------------


LOCKS = """\
import threading

a = threading.Lock()
b = threading.Lock()
both = threading.Barrier(2)  # each holds its first lock before it asks for the other


def first():
    with a:
        both.wait()
        with b:
            pass


def second():
    with b:
        both.wait()
        with a:
            pass


threads = [threading.Thread(target=first), threading.Thread(target=second)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def check_locks(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "python_deadlock")
    s = str(script)
    # Each holds the lock its outer `with` took and waits at its inner `with`.
    assert (
        f"holds `a` (taken at {s}:{line_is(script, '    with a:')} in first) and waits for `b` "
        f"at {s}:{line_is(script, '        with b:')} in first" in said
    ), said
    assert (
        f"holds `b` (taken at {s}:{line_is(script, '    with b:')} in second) and waits for "
        f"`a` at {s}:{line_is(script, '        with a:')} in second" in said
    ), said


BUSY = """\
import queue
import sys
import threading
import torch

q = queue.Queue()


def produce():
    data = list(range(20000))
    while True:
        t = torch.tensor(data)  # holds the GIL while it reads the list
        s = sum(range(100000))
        if q.qsize() < 1:
            q.put(s)


threading.Thread(target=produce, name="producer", daemon=True).start()
open(sys.argv[1], "w").write("ready\\n")
while True:
    try:
        q.get(timeout=1)
    except queue.Empty:
        pass
"""


def check_busy(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "busy")
    body = range(line_is(script, "    while True:"), line_with(script, "q.put(s)") + 1)
    runs = re.search(rf"'producer' runs at {re.escape(str(script))}:(\d+) in produce", said)
    assert runs is not None, said
    assert int(runs.group(1)) in body, said  # somewhere in its loop
    assert re.search(r"it used \d+\.\d\d s of CPU in \d+\.\d\d s", said), said
    # Busy is never called a deadlock.
    assert "gil" not in {d.kind for d in snap.diagnoses}
    assert not any("never" in d.meaning for d in snap.diagnoses)


GIL = """\
import ctypes
import os
import threading
import time
import torch

r, w = os.pipe()
libc = ctypes.PyDLL(None)  # like a C extension that blocks without releasing the GIL


def tick():
    while True:
        time.sleep(0.01)


threading.Thread(target=tick, name="ticker", daemon=True).start()
time.sleep(0.2)
libc.read(r, ctypes.create_string_buffer(1), 1)  # nobody writes: blocks, holding the GIL
"""


def check_gil(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "gil")
    assert f"called from {script}:{line_with(script, 'libc.read(')} in <module>" in said, said
    assert "it used 0.00 s of CPU" in said, said
    assert "'ticker' (a Python thread) waits for the GIL" in said, said
    assert "busy" not in {d.kind for d in snap.diagnoses}


def check_loader_blocked(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "dataloader")
    want = f"blocked acquiring lock `lock` at {script}:{line_is(script, '        with lock:')}"
    assert said.count(want) == 2, said


LOADER_IDLE = """\
import time
import torch
from torch.utils.data import DataLoader, Dataset


class Data(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 0:
            time.sleep(600)  # the first batch never comes; the other worker runs out of work
        return torch.tensor(i)


if __name__ == "__main__":
    for batch in DataLoader(Data(), num_workers=2):
        print(batch)
"""


def check_loader_idle(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "dataloader")
    worker = torch_file("torch.utils.data._utils.worker")
    idle = f"idle, waiting for indices at {worker}:{line_with(worker, 'index_queue.get(')}"
    assert said.count(idle) == 1, said
    sleeping = f"in the dataset's code at {script}:{line_with(script, 'time.sleep(600)')}"
    assert said.count(sleeping) == 1, said
    assert "<module>" not in said  # the frames the fork copied are not what a worker runs


STDIN_PARENT = """\
import subprocess
import sys
import torch

p = subprocess.Popen([sys.executable, sys.argv[1]], stdin=subprocess.PIPE)
p.wait()  # the child reads its stdin; nothing is ever written to it, nor closed
"""

STDIN_CHILD = """\
import sys

line = sys.stdin.readline()
print("got", line)
"""


def check_stdin(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "child_process")
    child = script.parent / "child.py"
    assert f"to exit at {script}:{line_with(script, 'p.wait()')} in <module>" in said, said
    assert "is blocked in read(fd 0: pipe:[" in said, said
    assert f"at {child}:{line_with(child, 'readline')} in <module>" in said, said
    assert re.search(r"its stdin is pipe:\[\d+\]; its write end is held open by the program", said)
    roles = {p.role for p in snap.pictures}
    assert roles == {"the program", "child process"}  # the child without torch is read too


STDIN_CAT = """\
import subprocess
import torch

p = subprocess.Popen(["cat"], stdin=subprocess.PIPE)
p.wait()  # cat reads its stdin until end of file, which never comes
"""


def check_cat(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "child_process")
    assert f"to exit at {script}:{line_with(script, 'p.wait()')} in <module>" in said, said
    assert re.search(r"\(cat\) is blocked in read\(fd 0: pipe:\[\d+\]\)", said), said
    cat = next(p for p in snap.pictures if p.command == "cat")
    assert not cat.python and cat.threads  # read from /proc, not skipped


NAMED = """\
import sys
import threading

done = threading.Event()


def load():
    done.wait()  # load waits here


def write():
    done.wait()  # write waits here


for target, name in ((load, "loader-0"), (write, "checkpoint-writer")):
    threading.Thread(target=target, name=name, daemon=True).start()
done.wait()  # main waits here
"""


def check_named(script: Path, answer: dict[str, object]) -> None:
    """Checked on the `--json` answer of the command, as a user reads it."""
    names = re.findall(r'\(\w+, "([^"]+)"\)', script.read_text())
    assert names == ["loader-0", "checkpoint-writer"]
    snaps = answer["snapshots"]
    assert isinstance(snaps, list)
    threads = snaps[0]["processes"][0]["threads"]
    by_name = {t["name"]: t for t in threads}
    expected = {
        "loader-0": line_with(script, "# load waits here"),
        "checkpoint-writer": line_with(script, "# write waits here"),
        "MainThread": line_with(script, "# main waits here"),
    }
    for name, line in expected.items():
        assert name in by_name, sorted(by_name)
        lines = {f["line"] for f in by_name[name]["frames"] if f["file"] == str(script)}
        assert line in lines, (name, lines)
        assert by_name[name]["busy"] is False


COLLECTIVE = """\
import sys
import time
from datetime import timedelta
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port):
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
        timeout=timedelta(seconds=90),  # bounds the wait if everything else fails
    )
    t = torch.ones(4)
    if rank == 0:
        dist.all_reduce(t)
    else:
        time.sleep(600)  # this rank never calls the all_reduce


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
"""


def check_collective(script: Path, snap: Snapshot) -> None:
    said = evidence(snap, "collective")
    diag = next(d for d in snap.diagnoses if d.kind == "collective")
    assert diag.title == "gloo: all_reduce waits for its peers"
    assert f"is in no collective: at {script}:{line_with(script, 'time.sleep(600)')}" in said
    c10d = torch_file("torch.distributed.distributed_c10d")
    assert re.search(rf"is in all_reduce at {re.escape(str(c10d))}:\d+ in all_reduce", said)


# --- the matrix --------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    program: str
    check: Callable[[Path, Snapshot], None]
    form: str = "cmd"  # "cmd": `onboard stuck -- python prog.py`; "pid": `onboard stuck PID`
    child: str | None = None  # a second file the program runs (child.py)
    port: bool = False  # the program is given a free loopback port


CASES = [
    pytest.param(Case("lock deadlock", LOCKS, check_locks), id="lock-deadlock"),
    pytest.param(Case("busy GIL holder", BUSY, check_busy, form="pid"), id="busy-gil-holder"),
    pytest.param(Case("blocked GIL holder", GIL, check_gil), id="blocked-gil-holder"),
    pytest.param(Case("DataLoader idle worker", LOADER_IDLE, check_loader_idle), id="loader-idle"),
    pytest.param(
        Case("child on stdin", STDIN_PARENT, check_stdin, child=STDIN_CHILD), id="stdin-child"
    ),
    pytest.param(Case("cat on stdin", STDIN_CAT, check_cat), id="stdin-cat"),
    pytest.param(
        Case("DataLoader blocked worker", LOADER_BLOCKED, check_loader_blocked),
        id="loader-blocked",
        marks=pytest.mark.slow,  # test_stuck.py runs this program in the normal suite
    ),
    pytest.param(
        Case("collective, missing rank", COLLECTIVE, check_collective, port=True),
        id="collective-missing-rank",
        marks=pytest.mark.slow,  # two ranks that import torch and init gloo: ~10 s
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("case", CASES)
def test_hang_matrix(case: Case, tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(case.program), encoding="utf-8")
    args: list[str] = []
    if case.child is not None:
        child = tmp_path / "child.py"
        child.write_text(case.child, encoding="utf-8")
        args.append(str(child))
    if case.port:
        args.append(str(_free_port()))
    if case.form == "cmd":
        seen: list[int] = []
        with stopped_at_the_end(lambda: seen):
            result = stuck(
                StuckRequest(command=[PY, str(script), *args], after=1.5, kill=True, timeout=240)
            )
            seen.extend(all_pids(result))
            assert result.snapshots, result.ended
            assert result.ended.endswith("(--kill)")
            case.check(script, result.snapshots[0])
        return
    ready = Fifo(tmp_path / "ready")
    program = subprocess.Popen([PY, str(script), str(ready)], start_new_session=True)
    try:
        with stopped_at_the_end(lambda: [program.pid]):
            ready.line("the program started", process=program)
            result = stuck(StuckRequest(pid=program.pid, kill=True))
            case.check(script, result.snapshots[0])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(program.pid, signal.SIGKILL)
        program.wait()
        ready.close()


def test_named_threads_in_the_json_answer(tmp_path: Path) -> None:
    script = tmp_path / "named.py"
    script.write_text(NAMED, encoding="utf-8")
    run = subprocess.Popen(
        [PY, "-m", "onboard", "stuck", "--json", "--kill", "--after", "1.5", "--timeout", "120",
         "--", PY, str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = run.communicate(timeout=240)
    assert run.returncode == 0, err
    answer = json.loads(out)
    pids = [p["pid"] for s in answer["snapshots"] for p in s["processes"]]
    assert not still_running(pids, 20)
    check_named(script, answer)
