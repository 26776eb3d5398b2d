"""A program that dies by a signal in native code (SIGSEGV, SIGABRT, SIGBUS,
SIGFPE) under `onboard locate -- python crash.py`: its C++ frames at their
source in the checkout, with the Python frames that called in.

torch's own fatal-signal handler prints the C++ frames with symbols
(``torch._C._set_print_stack_traces_on_fatal_signal(True)``, see
c10/util/signal_handler.cpp); it must be switched on inside the program, so
the program is run once more through a small boot that switches it on and
then runs it as ``python SCRIPT`` / ``-m MODULE`` / ``-c CODE`` would, under
``-X faulthandler`` (whose handler torch's calls after its own: the Python
frames). Where the wheel has no such handler, gdb runs it instead (native
frames only).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from onboard import proc
from onboard.errors import OnboardError
from onboard.workflows.opsource import chain, cpp_trace
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.stuck import readers, tools

if TYPE_CHECKING:
    from onboard.workflows.locate import LocateResult

FATAL = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE}
NATIVE_CRASH = "native_crash"
_BLOCK = re.compile(r"^(?P<sig>SIG[A-Z]+)\(\d+\), PID: (?P<pid>\d+), Thread (?P<tid>\d+):", re.M)
# A thread of a parallel region's pool (OpenMP's libgomp/libiomp, ATen's own pool), and
# the call that opens a region in the thread that waits for it.
_WORKER = re.compile(r"libgomp|libiomp|c10::ThreadPool::main_loop")
_LAUNCH = re.compile(r"GOMP_parallel|__kmpc_fork_call|at::internal::invoke_parallel")
_HANDLER = ("FatalSignalHandler", "<unknown function>")
# Runs the program the way `python SCRIPT` / `-m MODULE` / `-c CODE` would, after
# switching on torch's handler (an older wheel without it runs the program as is).
_BOOT = """\
import runpy, sys
kind, target = sys.argv[1], sys.argv[2]
try:
    import torch
    torch._C._set_print_stack_traces_on_fatal_signal(True)
except (ImportError, AttributeError):
    print("onboard: no fatal-signal handler in this torch", file=sys.stderr)
if kind == "code":
    sys.argv = ["-c", *sys.argv[3:]]
    exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
elif kind == "module":
    sys.argv = [target, *sys.argv[3:]]
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    sys.argv = [target, *sys.argv[3:]]
    runpy.run_path(target, run_name="__main__")
"""


@dataclass
class Crash:
    signal: str
    cpp_frames: list[cpp_trace.CppFrame] = field(default_factory=list)  # callee first
    python_frames: list[cpp_trace.PyFrame] = field(default_factory=list)  # caller first
    source: str = ""  # "torch's fatal-signal handler" / "gdb"
    reran: bool = False
    thread: str = ""  # which thread crashed, when it is not the one that called the op


def fatal(returncode: int) -> bool:
    return returncode < 0 and -returncode in FATAL


def read(output: str) -> Crash | None:
    """The crashing thread's C++ frames (torch's handler) and Python frames (faulthandler).

    torch's handler prints a block per thread; the crashing one is the block whose
    frames pass through ``fatalSignalHandler`` (the others were stopped by it). When
    that thread is a worker of a parallel region (an OpenMP thread: large ops run
    there), its own frames name no op; the op is the main thread's, which opened the
    region (``GOMP_parallel``): its frames follow the worker's, as its callers."""
    blocks = list(_BLOCK.finditer(output))
    if not blocks:
        return None

    def text_of(mo: re.Match[str]) -> str:
        i = blocks.index(mo)
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(output)
        return "\n".join(line.strip() for line in output[mo.start() : end].splitlines())

    def frames_of(mo: re.Match[str]) -> list[cpp_trace.CppFrame]:
        return [
            f
            for f in cpp_trace.parse(text_of(mo)).cpp_frames
            if not any(h in f.symbol for h in _HANDLER)
        ]

    chosen = next((mo for mo in blocks if "fatalSignalHandler(" in text_of(mo)), blocks[0])
    frames = frames_of(chosen)
    python = _python_frames(output, current=True)
    thread = ""
    main = next((mo for mo in blocks if mo.group("tid") == mo.group("pid")), None)
    if (
        main is not None
        and main is not chosen
        and _WORKER.search(text_of(chosen))
        and _LAUNCH.search(text_of(main))
    ):
        frames += frames_of(main)
        thread = (
            f"It crashed in a worker thread (thread {chosen.group('tid')}) of the parallel "
            f"region the main thread (thread {main.group('tid')}) opened: the op's layers "
            "are the main thread's, which waits for the worker in the region."
        )
        if not python:
            python = _python_frames(output, current=False)
    return Crash(chosen.group("sig"), frames, python, "torch's fatal-signal handler", thread=thread)


def _python_frames(output: str, *, current: bool) -> list[cpp_trace.PyFrame]:
    """faulthandler's frames: of the crashing thread (``current``), else of the one
    Python thread there is (a worker of a parallel region has none of its own)."""
    if current:
        found = readers.faulthandler(output)
    else:
        heads = [ln for ln in output.splitlines() if ln.startswith("Thread 0x")]
        found = readers.faulthandler(output.replace("Thread 0x", "Current thread 0x"))
        found = found if len(heads) == 1 else []
    return [
        cpp_trace.PyFrame(f.file or "", f.line or 0, f.function)
        for f in found
        if f.file and not f.file.startswith("<")
    ]


def rerun(argv: list[str], timeout: float) -> tuple[Crash | None, str]:
    """Run the program again with torch's handler on; (the crash, or why there is none)."""
    from onboard.errors import BadInput
    from onboard.workflows.trace import launch

    try:
        program = launch.parse(argv)
    except BadInput as exc:
        return None, f"it is not a Python program onboard can run again ({exc.message})"
    words = [program.python, "-X", "faulthandler", *program.options, "-c", _BOOT]
    words += [program.kind, program.target, *program.args]
    try:
        ran = proc.run(words, timeout=timeout, check=False, what=f"`{program.shown}`")
    except OnboardError as exc:
        return None, exc.message
    output = ran.stderr + "\n" + ran.stdout
    if not fatal(ran.returncode):
        return None, f"run again, it did not crash (exit {ran.returncode})"
    crash = read(output)
    if crash is None and "no fatal-signal handler" in output:
        crash = _under_gdb(program.python, words[1:], timeout)
    if crash is not None:
        crash.reran = True
        return crash, ""
    return None, "run again, it crashed without printing C++ frames"


def _under_gdb(python: str, rest: list[str], timeout: float) -> Crash | None:
    gdb = tools.find("gdb")
    if gdb is None:
        return None
    ran = proc.run(
        [gdb, "-batch", "-nx", "-ex", "run", "-ex", "bt", "--args", python, *rest],
        timeout=timeout,
        check=False,
    )
    threads = readers.gdb("Thread 1 (LWP 0):\n" + ran.stdout)
    if not threads or not threads[0].frames:
        return None
    frames = [
        cpp_trace.CppFrame(i, f.function, f.library, f.line)
        for i, f in enumerate(reversed(threads[0].frames))
    ]
    mo = re.search(r"received signal (SIG[A-Z]+)", ran.stdout)
    return Crash(mo.group(1) if mo else "a signal", frames, [], "gdb")


def answer(
    ctx: TreeContext, argv: list[str], code: int, output: str, timeout: float, result: LocateResult
) -> None:
    """The answer for a command that died by a fatal signal: its frames from this run's
    output (when the program switched torch's handler on itself), else from one more run."""
    crash = read(output)
    why = ""
    if crash is None:
        crash, why = rerun(argv, timeout)
    if crash is None:
        not_read(argv, code, why, result)
    else:
        explain(ctx, crash, argv, result)


def explain(ctx: TreeContext, crash: Crash, argv: list[str], result: LocateResult) -> None:
    """Fill a LocateResult with the crash: the chain (Python -> binding -> dispatcher ->
    kernel) of the crashing thread, and the innermost named frame of torch's."""
    smap = ctx.source_map
    trace = cpp_trace.Trace(python_frames=crash.python_frames, cpp_frames=crash.cpp_frames)
    python_locs = [smap.map(f.path, f.line) for f in crash.python_frames]
    layers = chain.build(ctx, trace, python_locs, None, None)
    inner = next((f for f in crash.cpp_frames if cpp_trace.classify(f.symbol).layer), None)
    shown = " ".join(argv)
    where = f" The innermost named frame is {_short(inner.symbol)}." if inner else ""
    how = "run once more" if crash.reran else "as it ran"
    result.verdict = NATIVE_CRASH
    result.chain = layers
    result.python_frames = python_locs
    result.explanation = (
        f"`{shown}` was killed by {crash.signal} in native code: no Python exception was "
        f"raised. Its C++ frames come from {crash.source} ({how}), mapped to the checkout "
        f"below with the Python frames that called in.{where}"
    )
    if crash.thread:
        result.explanation += " " + crash.thread
    if not crash.python_frames:
        result.limitations.append(
            "faulthandler named no Python frame for the crashing thread (several Python "
            "threads, or none), so the chain starts at the binding, not at your line."
        )
    result.next_step = (
        "Read the kernel's source at the deepest layer: an invalid pointer (a tensor made "
        "from foreign memory: torch.frombuffer, from_blob, DLPack, ctypes), a wrong size or "
        "stride, or an extension's kernel are the usual causes. `onboard build` gives a "
        "debug build that gdb can step through."
    )
    if ctx.ws.is_reference:
        limit = ctx.ws.limitation("The kernels' .cpp source")
        if limit:
            result.limitations.append(limit)


def not_read(argv: list[str], code: int, why: str, result: LocateResult) -> None:
    name = signal.Signals(-code).name
    result.verdict = NATIVE_CRASH
    result.explanation = (
        f"`{' '.join(argv)}` was killed by {name} in native code; its C++ frames could not "
        f"be read: {why}."
    )
    result.next_step = (
        "Run it under gdb (`gdb -batch -ex run -ex bt --args python crash.py`) or call "
        "torch._C._set_print_stack_traces_on_fatal_signal(True) at its start."
    )


def _short(symbol: str) -> str:
    return cpp_trace.classify(symbol).name or symbol
