"""What a picture of a process is made of: threads, their frames, caller first.

Frames come from the stack tool (pystack, py-spy or gdb) as it printed them;
``where`` is filled in later by ``mapping`` (a torch frame's function in the
checkout, a Python frame's line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.stuck.processes import Syscall

PYTHON = "python"
NATIVE = "native"
# What a thread does with the GIL, as the tool read it from the interpreter.
HOLDS_GIL = "holds"
WAITS_GIL = "waits"
# A thread that used at least this share of one core while it was sampled runs:
# it is busy, not blocked (a blocked thread uses none; a poll with a timeout, ~0; a
# rendezvous polling its store, ~4%; a loop at 100% still gets ~30% of a core on a
# loaded machine).
BUSY_SHARE = 0.10


@dataclass
class Frame:
    kind: str  # PYTHON / NATIVE
    function: str  # Python: the function; native: the symbol as printed (demangled)
    file: str | None = None  # Python: the file; native: a source file when the binary has one
    line: int | None = None
    library: str | None = None  # native: the shared object it is in
    text: str | None = None  # Python: the source line, when the tool printed it
    # mapped: the place in PyTorch's source (or the user's file)
    where: SourceLoc | None = field(default=None, metadata=spec(key="source"))
    # mapped: why there is no place ("not in this checkout", ...)
    note: str = field(default="", metadata=spec(empty=None))

    @property
    def in_torch_library(self) -> bool:
        lib = (self.library or "").rsplit("/", 1)[-1]
        return lib.startswith(("libtorch", "libc10", "libshm", "_C.")) or (
            "/torch/lib/" in (self.library or "")
        )

    @property
    def label(self) -> str:
        if self.kind == PYTHON:
            return f"{self.function} ({self.file}:{self.line})"
        lib = (self.library or "").rsplit("/", 1)[-1]
        return f"{self.function} [{lib}]" if lib else self.function


@dataclass
class Thread:
    tid: int
    name: str  # the Python name (threading.Thread(name=...)) where read, else the kernel's
    frames: list[Frame] = field(default_factory=list)  # caller first
    gil: str | None = None  # HOLDS_GIL / WAITS_GIL / None (neither, or not known)
    # Sampled just before the stacks were read (None: could not be sampled):
    # CPU the thread used over ``sampled_seconds``
    cpu_seconds: float | None = field(default=None, metadata=spec(digits=3))
    sampled_seconds: float | None = field(default=None, metadata=spec(digits=3))
    line_moved: bool | None = None  # its innermost Python line differed between two stacks
    # the system call it was blocked in (/proc); JSON: its label
    syscall: Syscall | None = field(default=None, metadata=spec(convert=lambda s: s.label))
    # /proc/PID/task/TID/comm ("python", "pt_main_thread" ...)
    kernel_name: str = field(default="", metadata=spec(omit=True))

    @property
    def busy(self) -> bool | None:
        """Whether the thread ran while it was sampled (None: not sampled)."""
        if self.cpu_seconds is None or not self.sampled_seconds:
            return None
        return self.cpu_seconds >= BUSY_SHARE * self.sampled_seconds

    @property
    def cpu_label(self) -> str:
        if self.cpu_seconds is None or self.sampled_seconds is None:
            return "its CPU time could not be sampled"
        return (
            f"it used {self.cpu_seconds:.2f} s of CPU in {self.sampled_seconds:.2f} s "
            f"({self.cpu_seconds / self.sampled_seconds:.0%} of a core)"
        )

    @property
    def python_frames(self) -> list[Frame]:
        return [f for f in self.frames if f.kind == PYTHON]

    @property
    def last_python(self) -> Frame | None:
        frames = self.python_frames
        return frames[-1] if frames else None

    @property
    def native_after_python(self) -> list[Frame]:
        """The native frames the innermost Python frame called into, caller first."""
        out: list[Frame] = []
        for frame in reversed(self.frames):
            if frame.kind == PYTHON:
                break
            out.append(frame)
        return out[::-1]

    def has_python(self, file_end: str, *functions: str) -> bool:
        return any(
            (f.file or "").endswith(file_end) and (not functions or f.function in functions)
            for f in self.python_frames
        )

    def json_extra(self) -> dict[str, Any]:
        return {"busy": self.busy}


@dataclass
class Picture:
    """Every thread of one process at one moment, and how the tool got them."""

    pid: int
    command: str
    role: str  # "the program", "DataLoader worker 1", "rank 0", ...
    tool: str  # "pystack 1.7.2" / "py-spy 0.4.3" / "gdb"
    threads: list[Thread] = field(default_factory=list)
    seconds: float = field(default=0.0, metadata=spec(digits=3))  # the tool's run time
    # how long the process was seen stopped (None: not measured)
    paused: float | None = field(default=None, metadata=spec(key="paused_seconds", digits=3))
    error: str | None = None  # why there are no threads (exited, not Python, no permission)
    environ: dict[str, str] = field(default_factory=dict)  # RANK / LOCAL_RANK / WORLD_SIZE
    ppid: int = 0
    python: bool = True  # False: not an interpreter; its threads are read from /proc only
    # pipe -> its write fds
    pipe_writes: dict[str, list[int]] = field(default_factory=dict, metadata=spec(omit=True))


def _ids(where: tuple[tuple[int, int], ...]) -> list[dict[str, int]]:
    return [{"pid": p, "tid": t} for p, t in where]


@dataclass(frozen=True)
class Diagnosis:
    """One recognised wait: what it is, where, what it means, what to try."""

    kind: str  # dataloader / collective / gil / busy / callback_lock / cuda / python_deadlock
    # / child_process
    title: str
    # (pid, tid) of the threads it is about
    where: tuple[tuple[int, int], ...] = field(metadata=spec(key="threads", convert=_ids))
    evidence: tuple[str, ...]  # the frames that show it, as read
    meaning: str
    try_next: tuple[str, ...] = field(metadata=spec(key="try"))
    sites: tuple[SourceLoc, ...] = ()  # the wait's source lines
    checked: bool = True  # False: named from the stacks, not checked on this machine
    unchecked_why: str = field(default="", metadata=spec(key="not_checked_because", empty=None))
