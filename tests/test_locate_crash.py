"""`onboard locate -- python crash.py` on real segfaults inside a torch op: in the main
thread and in an OpenMP worker of the op's parallel region, after a torch warning and
without one, and what a run that dies by a signal or fails after a warning is answered.

The crashes are made from Python: ``torch.frombuffer`` over memory the process does
not have (small: ``sum`` runs in the main thread), or over an mmap'd buffer with one
half made PROT_NONE (4M floats, far above ATen's grain size, so ``sum`` splits the
work between two OpenMP threads statically: the main thread takes the first half, a
worker the second, and the PROT_NONE half decides which one faults). The truth of
which kernel crashed is torch's own fatal-signal handler's block for each thread, read
here from a run of the script with that handler on, never from onboard.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    reference_ws_fixture,  # noqa: F401 (a pytest fixture)
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.workflows.locate import COMMAND_FAILED, LocateRequest, LocateResult, locate

PY = sys.executable
SMALL = """\
import ctypes
import torch

buf = (ctypes.c_float * 1024).from_address(16)  # memory that is not ours
t = torch.frombuffer(buf, dtype=torch.float32)
print(t.sum())
"""
PARALLEL = """\
import ctypes
import mmap
import sys

import torch

torch.set_num_threads(2)
size = (1 << 22) * 4  # 4M floats: sum() splits them between two OpenMP threads
m = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
buf = (ctypes.c_char * size).from_buffer(m)
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
half = size // 2
start = ctypes.addressof(buf) + (half if sys.argv[1] == "worker" else 0)
assert libc.mprotect(start, half, 0) == 0  # PROT_NONE: the thread reading it faults
t = torch.frombuffer(buf, dtype=torch.float32)
print(t.sum())
"""
# torch's handler switched on, then the script, as `python SCRIPT ARGS` runs it.
_WITH_HANDLER = (
    "import runpy, sys, torch; torch._C._set_print_stack_traces_on_fatal_signal(True); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)
_BLOCK = re.compile(r"^SIGSEGV\(11\), PID: (?P<pid>\d+), Thread (?P<tid>\d+):", re.M)
_NAMED = re.compile(r"frame #\d+: (?P<sym>(?:at|c10|torch)::[^(]+)\(")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if needle in t)


def handler_blocks(script: Path, *args: str) -> tuple[str, dict[str, list[str]]]:
    """torch's own account of the crash: which thread faulted ("main" or "worker") and
    the named at::/c10::/torch:: functions of each thread's block, callee first."""
    ran = subprocess.run(
        [PY, "-c", _WITH_HANDLER, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == -signal.SIGSEGV, ran.stderr[-2000:]
    blocks = list(_BLOCK.finditer(ran.stderr))
    named: dict[str, list[str]] = {}
    crashed = ""
    for i, mo in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(ran.stderr)
        body = ran.stderr[mo.start() : end]
        who = "main" if mo.group("tid") == mo.group("pid") else f"thread {mo.group('tid')}"
        named[who] = [
            m.group("sym").strip()
            for m in _NAMED.finditer(body)
            if "SignalHandler" not in m.group(0)
        ]
        if "fatalSignalHandler(" in body:
            crashed = "main" if who == "main" else "worker"
    assert crashed, "torch's handler printed no block for the faulting thread"
    return crashed, named


def no_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The venv of someone who only ran `pip install torch`: `import numpy` fails, and
    torch warns at import ("Failed to initialize NumPy", a TORCH_WARN)."""
    stub = tmp_path / "without_numpy" / "numpy"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(stub.parent))


def run(script: Path, ws: Path, *args: str) -> LocateResult:
    return locate(LocateRequest(command=[PY, str(script), *args], workspace=str(ws), timeout=120))


def assert_the_crash(result: LocateResult, script: Path, main_frames: list[str]) -> None:
    """The answer is the crash: the main thread's op chain torch's handler printed, from
    the Python line that called it."""
    assert result.verdict == "native_crash" and result.exit_code == 1
    assert result.command_exit == -signal.SIGSEGV
    assert result.check is None and "SIGSEGV" in (result.explanation or "")
    python = [layer for layer in result.chain if layer.layer == "python"]
    assert python and python[-1].location is not None
    assert python[-1].location.line == line_of(script, "print(t.sum())")
    names = [layer.name for layer in result.chain if layer.layer != "python"]
    # Every op layer of torch's main-thread block (dispatcher, kernel) is in the chain.
    ops = [s for s in main_frames if s.startswith(("at::_ops::", "at::native::"))]
    assert ops and set(ops) <= set(names), (ops, names)


def test_a_segfault_after_a_torch_warning_is_the_crash(
    tmp_path: Path, reference_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_numpy(tmp_path, monkeypatch)
    script = write(tmp_path, "crash.py", SMALL)
    crashed, named = handler_blocks(script)
    assert crashed == "main"
    result = run(script, reference_ws)
    assert_the_crash(result, script, named["main"])
    # The warning is listed as what was printed before, not answered as the cause.
    assert [w.location.path for w in result.warnings] == ["torch/csrc/utils/tensor_numpy.cpp"]
    assert "1 torch warning" in (result.explanation or "")


@pytest.mark.parametrize(
    ("faulting", "warned"),
    [("worker", True), ("worker", False), ("main", False)],
    ids=["worker-after-a-warning", "worker", "main"],
)
def test_a_segfault_in_a_parallel_region_names_the_op(
    tmp_path: Path,
    reference_ws: Path,
    monkeypatch: pytest.MonkeyPatch,
    faulting: str,
    warned: bool,
) -> None:
    if warned:
        no_numpy(tmp_path, monkeypatch)
    script = write(tmp_path, "crash_parallel.py", PARALLEL)
    crashed, named = handler_blocks(script, faulting)
    assert crashed == faulting  # torch's handler agrees on which thread faulted
    if faulting == "worker":
        worker = next(v for k, v in named.items() if k != "main" and not v)
        assert worker == []  # the worker's own block names no op at all
    assert "at::_ops::sum::call" in named["main"]
    result = run(script, reference_ws, faulting)
    assert_the_crash(result, script, named["main"])
    said = "crashed in a worker thread" in (result.explanation or "")
    assert said == (faulting == "worker")
    assert bool(result.warnings) == warned


def test_a_run_killed_by_a_signal_after_a_warning_is_not_the_warning(
    tmp_path: Path, reference_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_numpy(tmp_path, monkeypatch)
    script = write(
        tmp_path, "killed.py", "import os, signal, torch\nos.kill(os.getpid(), signal.SIGTERM)\n"
    )
    result = run(script, reference_ws)
    assert result.verdict == COMMAND_FAILED and result.check is None
    assert result.command_exit == -signal.SIGTERM
    assert "SIGTERM" in (result.explanation or "") and result.warnings


def test_a_run_that_fails_without_an_exception_after_a_warning_is_not_the_warning(
    tmp_path: Path, reference_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_numpy(tmp_path, monkeypatch)
    script = write(tmp_path, "exits.py", "import sys, torch\nsys.exit(3)\n")
    result = run(script, reference_ws)
    assert result.verdict == COMMAND_FAILED and result.check is None
    assert result.command_exit == 3 and result.exit_code == 1
    assert "failed (exit 3)" in (result.explanation or "")
