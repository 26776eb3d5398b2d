"""What the diagnoses share: which thread waits on a lock, which locks its frames
hold (the ``with NAME:`` blocks its lines sit in), and small wording helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from onboard.workflows.opsource import scan
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.stuck.model import NATIVE, Frame, Picture, Thread

# Native frames of a thread blocked acquiring a Python lock (threading.Lock / RLock).
LOCK_WAIT = ("PyThread_acquire_lock_timed", "lock_PyThread_acquire_lock", "rlock_acquire")
# Native frames of a thread waiting for the GIL.
GIL_WAIT = ("take_gil", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyGILState_Ensure")
_WITH = re.compile(r"^\s*(?:async\s+)?with\s+(?P<names>[^:]+):")
_ACQUIRE = re.compile(r"(?P<name>[\w.]+)\.acquire\(")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s")


@dataclass
class Context:
    """What the diagnoses may need beyond the stacks."""

    gpu: bool  # a CUDA device is visible on this machine
    default_timeout: SourceLoc | None = None  # where the backends' default timeout is written


def loc(frame: Frame | None) -> SourceLoc | None:
    return frame.where if frame is not None else None


def at(frame: Frame | None) -> str:
    """``file:line in function`` of a frame, as mapped."""
    if frame is None:
        return "?"
    where = frame.where.label if frame.where is not None else f"{frame.file}:{frame.line}"
    return f"{where} in {frame.function}"


def source_line(frame: Frame) -> str:
    if frame.text:
        return frame.text
    if frame.where is not None and frame.where.text:
        return frame.where.text.strip()
    lines = _lines(frame)
    if lines and frame.line and frame.line <= len(lines):
        return lines[frame.line - 1].strip()
    return ""


def _lines(frame: Frame) -> list[str] | None:
    path = frame.where.local if frame.where is not None and frame.where.local else frame.file
    if not path or path.startswith("<") or not Path(path).is_file():
        return None
    return scan.read(Path(path)).splitlines()


def blocked_on_lock(thread: Thread) -> bool:
    """The thread's innermost frames acquire a Python lock."""
    tail = thread.native_after_python
    return any(f.kind == NATIVE and f.function.startswith(LOCK_WAIT) for f in tail)


def waits_for_gil(thread: Thread) -> bool:
    if thread.gil == "waits":
        return True
    tail = thread.frames[-4:]
    return any(f.kind == NATIVE and f.function.startswith(GIL_WAIT) for f in tail)


def wanted_lock(thread: Thread) -> str | None:
    """The lock the innermost Python line acquires: ``with L:`` or ``L.acquire()``."""
    frame = thread.last_python
    if frame is None:
        return None
    text = source_line(frame)
    mo = _WITH.match(text)
    if mo:
        return mo.group("names").split(",")[0].split(" as ")[0].strip()
    mo = _ACQUIRE.search(text)
    return mo.group("name") if mo else None


@dataclass(frozen=True)
class Held:
    """A lock a thread holds: the frame inside the block, and the ``with NAME:`` line
    that took it (in that frame's file)."""

    frame: Frame
    line: int
    text: str

    @property
    def label(self) -> str:
        """``file:line in function`` of the ``with`` line."""
        path = self.frame.where.path if self.frame.where is not None else self.frame.file
        return f"{path}:{self.line} in {self.frame.function}"

    @property
    def site(self) -> SourceLoc | None:
        where = self.frame.where
        if where is None:
            return None
        url = where.url
        if url and where.line and url.endswith(f"#L{where.line}"):
            url = url[: -len(f"#L{where.line}")] + f"#L{self.line}"
        return replace(where, line=self.line, text=self.text, url=url)


def held_locks(thread: Thread) -> dict[str, Held]:
    """Locks the thread's Python frames hold: every ``with NAME:`` block (in the same
    function) that a frame's current line sits in, outer frames included."""
    held: dict[str, Held] = {}
    for frame in thread.python_frames:
        lines = _lines(frame)
        if not lines or not frame.line or frame.line > len(lines):
            continue
        indent = _indent(lines[frame.line - 1])
        for number in range(frame.line - 1, 0, -1):
            text = lines[number - 1]
            if not text.strip():
                continue
            level = _indent(text)
            if level >= indent:
                continue
            indent = level
            mo = _WITH.match(text)
            if mo:
                for name in mo.group("names").split(","):
                    held.setdefault(
                        name.split(" as ")[0].strip(), Held(frame, number, text.strip())
                    )
            if _DEF.match(text) or level == 0:
                break
    return held


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def started_in_cpp(thread: Thread) -> bool:
    """A thread C++ started (a pool's worker) that runs Python: native torch frames
    come before its first Python frame."""
    for frame in thread.frames:
        if frame.kind != NATIVE:
            return False
        if frame.in_torch_library:
            return True
    return False


def cpp_pool(thread: Thread) -> str:
    """What C++ pool or thread it is, from its outermost torch frames."""
    names = [f.function for f in thread.frames if f.kind == NATIVE and f.in_torch_library]
    text = " ".join(names[:3])
    if "at::launch" in text or "c10::ThreadPool" in text:
        return "ATen's inter-op pool (at::launch, c10::ThreadPool)"
    if "autograd::Engine" in text:
        return "the autograd engine's worker"
    if "ProcessGroupGloo" in text:
        return "a gloo worker of ProcessGroupGloo"
    return f"a C++ thread ({thread.kernel_name or thread.name or 'unnamed'})"


def thread_label(picture: Picture, thread: Thread) -> str:
    name = f" '{thread.name}'" if thread.name else ""
    return f"{picture.role} (pid {picture.pid}), thread {thread.tid}{name}"


def where_ids(*pairs: tuple[Picture, Thread]) -> tuple[tuple[int, int], ...]:
    return tuple((p.pid, t.tid) for p, t in pairs)


def first_native(thread: Thread, *needles: str) -> Frame | None:
    return next(
        (f for f in thread.frames if f.kind == NATIVE and any(n in f.function for n in needles)),
        None,
    )


def innermost_torch(thread: Thread) -> Frame | None:
    """The deepest frame in torch's own libraries (where it waits)."""
    return next(
        (f for f in reversed(thread.frames) if f.kind == NATIVE and f.in_torch_library), None
    )
