"""`onboard stuck` and native crashes in `onboard locate`: real hung and crashing
programs written here, read with the real stack tools.

The truth each test checks is computed apart from the code under test: the
line of the script a thread waits on (found in the script's text), torch's
own file for the wait (where the installed torch defines the function), the
header line a native frame maps to (read from the workspace's file).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixtures.events import Fifo, gone
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    reference_ws_fixture,  # noqa: F401 (a pytest fixture)
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.errors import BadInput, OnboardError
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.stuck import StuckRequest, stuck, tools
from onboard.workflows.stuck.diagnoses import cuda
from onboard.workflows.stuck.diagnoses.common import Context
from onboard.workflows.stuck.model import NATIVE, PYTHON, Frame, Picture, Thread

PY = sys.executable


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of the script that holds ``needle`` (the truth for a frame)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


def torch_file(module: str) -> str:
    """The installed torch's file for a module, asked of a fresh interpreter."""
    code = f"import importlib; print(importlib.import_module({module!r}).__file__)"
    return subprocess.run(
        [PY, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def onboard_cli(*args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "onboard", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


needs_tools = pytest.mark.skipif(not tools.available(), reason="no stack tool installed")

DATALOADER = """\
import threading
import torch
from torch.utils.data import DataLoader, Dataset

lock = threading.Lock()
lock.acquire()  # held when the workers fork: each gets a copy that stays held


class Data(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        with lock:
            return torch.tensor(i)


if __name__ == "__main__":
    print("loading", flush=True)
    for batch in DataLoader(Data(), num_workers=2):
        print(batch)
"""


@needs_tools
def test_dataloader_worker_blocked_on_a_lock(tmp_path: Path) -> None:
    script = write(tmp_path, "loader.py", DATALOADER)
    result = stuck(StuckRequest(command=[PY, str(script)], after=2, kill=True, timeout=240))
    assert result.snapshots, result.ended
    snap = result.snapshots[0]
    assert snap.reason.startswith("no progress for 2 s")
    kinds = {d.kind: d for d in snap.diagnoses}
    diag = kinds["dataloader"]
    roles = sorted(p.role for p in snap.pictures)
    assert roles == ["DataLoader worker 0", "DataLoader worker 1", "the program"]
    # The main process waits in torch's own dataloader.py, the workers at `with lock:`.
    dataloader = torch_file("torch.utils.data.dataloader")
    assert any(s.path.endswith("torch/utils/data/dataloader.py") for s in diag.sites)
    assert dataloader.endswith("torch/utils/data/dataloader.py")
    want = f"{script}:{line_of(script, 'with lock:')}"
    assert sum(f"blocked acquiring lock `lock` at {want}" in e for e in diag.evidence) == 2
    assert snap.paused is not None and snap.paused <= snap.seconds
    assert result.ended.endswith("(--kill)")


@needs_tools
def test_snapshot_on_sigusr1_and_the_output_passes_through(tmp_path: Path) -> None:
    ready = Fifo(tmp_path / "ready")
    script = write(
        tmp_path,
        "sleeper.py",
        f"""\
        import time
        print("hello from the program", flush=True)
        open({str(ready)!r}, "w").write("running\\n")
        while True:
            time.sleep(0.05)  # busy enough to count as progress: no automatic snapshot
            sum(range(20000))
        """,
    )
    run = onboard_cli("stuck", "--kill", "--json", "--after", "600", "--", PY, str(script))
    ready.line("the program running under onboard stuck", process=run)
    run.send_signal(signal.SIGUSR1)
    out, err = run.communicate(timeout=240)
    assert run.returncode == 0, err
    answer = json.loads(out)  # --json: the program's output went to stderr, not into the JSON
    assert "hello from the program" in err
    assert answer["snapshots"][0]["reason"] == "asked for with SIGUSR1"
    main = answer["snapshots"][0]["processes"][0]
    lines = {f["line"] for t in main["threads"] for f in t["frames"] if f["file"] == str(script)}
    assert lines & {line_of(script, "time.sleep"), line_of(script, "sum(range")}


@needs_tools
def test_timeout_bounds_a_program_that_never_stops(tmp_path: Path) -> None:
    script = write(
        tmp_path,
        "forever.py",
        """\
        import itertools
        for i in itertools.count():
            if i % 2_000_000 == 0:
                print("still going", i, flush=True)
        """,
    )
    run = onboard_cli("stuck", "--timeout", "4", "--", PY, str(script))
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert "still going 0" in out  # the program's own output is not lost
    assert "--timeout: still running after 4 s" in out
    assert "stopped by onboard at --timeout (4 s)" in out


@needs_tools
def test_ctrl_c_stops_the_program_and_exits_130(tmp_path: Path) -> None:
    started = Fifo(tmp_path / "started")
    script = write(
        tmp_path,
        "wait.py",
        f"""\
        import os
        open({str(started)!r}, "w").write(f"{{os.getpid()}}\\n")
        while True:
            sum(range(10000))
        """,
    )
    run = onboard_cli("stuck", "--", PY, str(script))
    child = int(started.line("the program running under onboard stuck", process=run))
    run.send_signal(signal.SIGINT)
    _out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert gone(child, 10)


def test_no_such_pid_and_not_python() -> None:
    ended = subprocess.Popen([PY, "-c", "pass"])
    ended.wait()
    with pytest.raises(BadInput, match=f"no running process {ended.pid}"):
        stuck(StuckRequest(pid=ended.pid))
    sleeper = subprocess.Popen(["sleep", "60"])  # exec'd once Popen returns: no wait needed
    try:
        with pytest.raises(BadInput, match="is not a Python interpreter"):
            stuck(StuckRequest(pid=sleeper.pid))
    finally:
        sleeper.kill()
        sleeper.wait()


@needs_tools
def test_a_python_process_without_torch_is_read_with_a_note(tmp_path: Path) -> None:
    script = write(tmp_path, "plain.py", "import time\nprint('up', flush=True)\ntime.sleep(120)\n")
    child = subprocess.Popen([PY, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "up"
        result = stuck(StuckRequest(pid=child.pid))
        assert any("has not loaded torch" in n for n in result.notes)
        main = result.snapshots[0].pictures[0]
        assert any(
            f.kind == PYTHON and f.file == str(script) and f.line == line_of(script, "sleep")
            for t in main.threads
            for f in t.frames
        )
        assert child.poll() is None  # left running as it was
    finally:
        child.kill()
        child.wait()


def test_process_gone_before_it_is_read() -> None:
    ended = subprocess.Popen([PY, "-c", "pass"])
    ended.wait()
    if not tools.available():
        pytest.skip("no stack tool installed")
    with pytest.raises(tools.Gone):
        tools.dump(ended.pid, tools.available())


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists() or not Path("/usr/bin/gdb").exists(),
    reason="needs root, setpriv and gdb to make a tool that is refused ptrace",
)
def test_attach_refused_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # gdb run as `nobody` may not trace a root process: the kernel refuses ptrace.
    wrapper = tmp_path / "gdb-as-nobody"
    wrapper.write_text(
        "#!/bin/sh\nexec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups "
        '/usr/bin/gdb "$@"\n'
    )
    wrapper.chmod(0o755)
    target = subprocess.Popen(["sleep", "60"])  # exec'd once Popen returns: no wait needed
    try:
        with pytest.raises(tools.AttachDenied) as refused:
            tools.dump(target.pid, [tools.Tool("gdb", str(wrapper))])
        assert "CAP_SYS_PTRACE" in refused.value.message
        assert "--cap-add=SYS_PTRACE" in (refused.value.next_step or "")
        # As another user than the process's owner, the fix is to run as root.
        monkeypatch.setattr(os, "geteuid", lambda: 65534)
        as_user = tools.denied(target.pid, "gdb")
        assert "belongs to user 0" in as_user.message
        assert f'sudo env PATH="$PATH" onboard stuck {target.pid}' in (as_user.next_step or "")
    finally:
        target.kill()
        target.wait()


def test_cuda_wait_is_named_and_not_checked_without_a_gpu() -> None:
    frames = [
        Frame(PYTHON, "<module>", "/tmp/train.py", 7),
        Frame(PYTHON, "synchronize", "/site-packages/torch/cuda/__init__.py", 1080),
        Frame(NATIVE, "c10::cuda::device_synchronize()", library="/x/torch/lib/libc10_cuda.so"),
        Frame(NATIVE, "cudaDeviceSynchronize", library="/x/torch/lib/libcudart.so.12"),
    ]
    picture = Picture(
        11, "python train.py", "the program", "pystack", [Thread(11, "python", frames)]
    )
    found = cuda.diagnose([picture], Context(gpu=False))
    assert [d.kind for d in found] == ["cuda"]
    assert not found[0].checked and "no CUDA device" in found[0].unchecked_why
    assert "cudaDeviceSynchronize" in found[0].title
    assert cuda.diagnose([picture], Context(gpu=True))[0].checked


def test_gil_holder_busy_blocked_or_not_sampled() -> None:
    """One stack cannot tell a holder that computes in a native call from one blocked
    in it: the CPU sampled from /proc decides, and without it the answer says so."""
    from onboard.workflows.stuck.diagnoses import diagnose
    from onboard.workflows.stuck.model import HOLDS_GIL, WAITS_GIL

    def picture(cpu: float | None) -> Picture:
        holder = Thread(
            11,
            "producer",
            [
                Frame(PYTHON, "produce", "/tmp/p.py", 9),
                Frame(NATIVE, "PyLong_AsLongLongAndOverflow", library="libpython3.11.so"),
            ],
            gil=HOLDS_GIL,
            cpu_seconds=cpu,
            sampled_seconds=None if cpu is None else 0.5,
        )
        waiter = Thread(12, "MainThread", [Frame(PYTHON, "<module>", "/tmp/p.py", 20)])
        waiter.gil, waiter.cpu_seconds, waiter.sampled_seconds = WAITS_GIL, 0.0, 0.5
        return Picture(11, "python p.py", "the program", "pystack", [holder, waiter])

    busy = diagnose([picture(0.4)], Context(gpu=False))
    assert [d.kind for d in busy] == ["busy"]
    assert "it used 0.40 s of CPU in 0.50 s" in busy[0].evidence[0]
    assert not any("never" in d.meaning for d in busy)
    blocked = diagnose([picture(0.0)], Context(gpu=False))
    assert [d.kind for d in blocked] == ["gil"] and blocked[0].checked
    assert "it used 0.00 s of CPU" in blocked[0].evidence[0]
    unsampled = diagnose([picture(None)], Context(gpu=False))
    assert [d.kind for d in unsampled] == ["gil"] and not unsampled[0].checked
    assert "could not be read" in unsampled[0].unchecked_why
    assert "never" not in unsampled[0].meaning and "not checked" in unsampled[0].meaning


def test_bad_arguments() -> None:
    with pytest.raises(BadInput):
        stuck(StuckRequest())
    with pytest.raises(BadInput):
        stuck(StuckRequest(pid=1, command=["python"]))
    with pytest.raises(BadInput, match="above 0"):
        stuck(StuckRequest(command=[PY, "x.py"], after=0))


# --- slow: distributed, JIT pool, native crash ----------------------------------


@pytest.fixture(scope="module")
def wheel_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `onboard setup --from-wheel` workspace (it has torch/csrc's headers)."""
    from onboard.cli import cli
    from onboard.crash import run_cli

    root = tmp_path_factory.mktemp("stuck-ws") / "ws"
    assert run_cli(cli, ["setup", str(root), "--from-wheel"]) == 0
    return root


def _header_line(ws: Path, rel: str, owner: str, member: str) -> int:
    """The line of ``member(`` inside ``class ... owner`` in the workspace's header."""
    lines = (ws / "pytorch" / rel).read_text(encoding="utf-8").splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith("class") and f" {owner} " in t)
    return next(i + 1 for i in range(start, len(lines)) if f" {member}(" in lines[i])


@pytest.mark.slow
@needs_tools
def test_gloo_rank_that_skips_all_reduce(tmp_path: Path, wheel_ws: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = write(
        tmp_path,
        "ranks.py",
        f"""\
        import time
        from datetime import timedelta
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp


        def run(rank, world):
            dist.init_process_group(
                "gloo", init_method="tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                timeout=timedelta(seconds=300),
            )
            t = torch.ones(4)
            if rank == 0:
                dist.all_reduce(t)
            else:
                time.sleep(600)  # this rank skips the all_reduce


        if __name__ == "__main__":
            mp.spawn(run, args=(2,), nprocs=2)
        """,
    )
    result = stuck(
        StuckRequest(
            command=[PY, str(script)], after=3, kill=True, timeout=300, workspace=str(wheel_ws)
        )
    )
    diag = next(d for s in result.snapshots for d in s.diagnoses if d.kind == "collective")
    assert diag.title == "gloo: all_reduce waits for its peers"
    joined = "\n".join(diag.evidence)
    assert "c10d::Work::wait" in joined and "ProcessGroupGloo" not in diag.title
    assert f"{script}:{line_of(script, 'time.sleep(600)')}" in joined  # the rank that is elsewhere
    paths = {s.path for s in diag.sites}
    assert "torch/distributed/distributed_c10d.py" in paths
    work = next(s for s in diag.sites if s.path == "torch/csrc/distributed/c10d/Work.hpp")
    assert work.line == _header_line(wheel_ws, work.path, "Work", "wait")
    assert "Backend.hpp" in diag.meaning  # the default timeout, read from the checkout


JIT_LOCK = """\
import threading
import torch

L = threading.Lock()


@torch.jit.ignore
def callback(x: torch.Tensor) -> torch.Tensor:
    with L:
        return x + 1


@torch.jit.script
def work(x: torch.Tensor) -> torch.Tensor:
    return callback(x)


@torch.jit.script
def launch(x: torch.Tensor) -> torch.Tensor:
    return torch.jit.wait(torch.jit.fork(work, x))


with L:
    print(launch(torch.ones(2)))
"""

JIT_GIL = """\
import ctypes, os, sys
import torch

sys.setswitchinterval(1000)  # the main thread keeps the GIL until it blocks
r, w = os.pipe()
libc = ctypes.PyDLL(None)  # like a C extension that blocks without releasing the GIL


@torch.jit.ignore
def callback(x: torch.Tensor) -> torch.Tensor:
    os.write(w, b"x")
    return x + 1


@torch.jit.script
def work(x: torch.Tensor) -> torch.Tensor:
    return callback(x)


@torch.jit.script
def launch(x: torch.Tensor) -> torch.jit.Future[torch.Tensor]:
    return torch.jit.fork(work, x)


fut = launch(torch.ones(2))
libc.read(r, ctypes.create_string_buffer(1), 1)  # waits for the callback, holding the GIL
print(fut.wait())
"""


@pytest.mark.slow
@needs_tools
def test_cpp_pool_callback_waits_on_a_lock_its_caller_holds(tmp_path: Path) -> None:
    script = write(tmp_path, "jit_lock.py", JIT_LOCK)
    result = stuck(StuckRequest(command=[PY, str(script)], after=2, kill=True, timeout=300))
    diag = next(d for s in result.snapshots for d in s.diagnoses if d.kind == "callback_lock")
    assert "`L`" in diag.title and "inter-op pool" in diag.title
    joined = "\n".join(diag.evidence)
    assert f"{script}:{line_of(script, '    with L:')}" in joined  # the callback waits
    assert f"{script}:{line_of(script, 'print(launch')}" in joined  # inside `with L:`


@pytest.mark.slow
@needs_tools
def test_gil_deadlock_with_a_cpp_pool_thread(tmp_path: Path) -> None:
    script = write(tmp_path, "jit_gil.py", JIT_GIL)
    result = stuck(StuckRequest(command=[PY, str(script)], after=2, kill=True, timeout=300))
    diag = next(d for s in result.snapshots for d in s.diagnoses if d.kind == "gil")
    joined = "\n".join(diag.evidence)
    assert f"called from {script}:{line_of(script, 'libc.read(')}" in joined
    assert "inter-op pool" in joined and "waits for the GIL" in joined


@pytest.mark.slow
def test_locate_a_segfault_inside_torch(tmp_path: Path, reference_ws: Path) -> None:
    from onboard.workflows.locate import LocateRequest, locate

    script = write(
        tmp_path,
        "crash.py",
        """\
        import ctypes
        import torch

        buf = (ctypes.c_float * 1024).from_address(16)  # memory that is not ours
        t = torch.frombuffer(buf, dtype=torch.float32)
        print(t.sum())
        """,
    )
    result = locate(
        LocateRequest(command=[PY, str(script)], workspace=str(reference_ws), timeout=300)
    )
    assert result.verdict == "native_crash"
    assert result.command_exit == -signal.SIGSEGV
    assert "SIGSEGV" in (result.explanation or "")
    python = [layer for layer in result.chain if layer.layer == "python"]
    assert python and python[-1].location is not None
    assert python[-1].location.line == line_of(script, "t.sum()")
    ops = {layer.op for layer in result.chain if layer.layer == "dispatcher"}
    assert "sum" in ops
    assert not any("FatalSignalHandler" in layer.name for layer in result.chain)


def test_mapping_names_and_class_headers(reference_ws: Path) -> None:
    from onboard.report import Reporter
    from onboard.workflows.opsource.context import TreeContext
    from onboard.workflows.stuck.mapping import Mapper, name_of

    name = name_of(
        "bool torch::jit::InterpreterStateImpl::runTemplate<false>(std::vector<c10::IValue, "
        "std::allocator<c10::IValue> >&)"
    )
    assert name is not None and name.qualified == "torch::jit::InterpreterStateImpl::runTemplate"
    lambda_name = name_of(
        "torch::jit::(anonymous namespace)::createPythonOperation(torch::jit::Node const*)"
        "::{lambda(std::vector<c10::IValue>&)#1}::operator()(std::vector<c10::IValue>&)"
    )
    assert lambda_name is not None and lambda_name.function == "createPythonOperation"
    ctx = TreeContext.open(str(reference_ws), None, Reporter())
    frame = Frame(
        NATIVE,
        "at::TensorIteratorBase::serial_for_each(c10::function_ref<void (char**, long const*, "
        "long, long)>, at::Range) const",
        library="/site-packages/torch/lib/libtorch_cpu.so",
    )
    Mapper(ctx).map_pictures([Picture(1, "", "", "", [Thread(1, "", [frame])])])
    assert isinstance(frame.where, SourceLoc)
    text = (reference_ws / "pytorch" / frame.where.path).read_text().splitlines()
    assert "serial_for_each(" in text[(frame.where.line or 0) - 1]


def test_no_stack_tool_is_one_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "available", lambda *a: [])
    with pytest.raises(OnboardError, match="No stack tool is installed"):
        stuck(StuckRequest(pid=os.getpid()))
