"""Reading what each stack tool prints into threads of frames, caller first.

- pystack (``pystack remote PID --native-all``): every thread, the ones the
  interpreter does not know too (gloo's and ATen's pools), Python and C frames
  interleaved, and whether a thread has or waits for the GIL. Text only::

      Traceback for thread 25628 (PTThreadPool) [Waiting for the GIL] (most recent call last):
          (C) File "???", line 0, in c10::ThreadPool::main_loop(unsigned long) (/.../libc10.so)
          (Python) File "/tmp/gil.py", line 6, in callback
              with L:

- py-spy (``py-spy dump --pid PID --native --json``): the threads the
  interpreter knows, innermost frame first, ``owns_gil`` per thread.
- gdb (``thread apply all bt``): native frames only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from onboard.workflows.stuck.model import HOLDS_GIL, NATIVE, PYTHON, WAITS_GIL, Frame, Thread

_PYSTACK_THREAD = re.compile(
    r"^Traceback for thread (?P<tid>\d+) \((?P<name>.*?)\) \[(?P<flags>[^\]]*)\]"
)
_PYSTACK_FRAME = re.compile(
    r'^\s+\((?P<kind>C|Python)\) File "(?P<file>[^"]*)", line (?P<line>\d+), in (?P<rest>.*)$'
)


def pystack(text: str) -> list[Thread]:
    threads: list[Thread] = []
    last_python: Frame | None = None
    for raw in text.splitlines():
        head = _PYSTACK_THREAD.match(raw)
        if head:
            flags = {f.strip() for f in head.group("flags").split(",")}
            gil = (
                HOLDS_GIL
                if "Has the GIL" in flags
                else WAITS_GIL
                if "Waiting for the GIL" in flags
                else None
            )
            threads.append(Thread(int(head.group("tid")), head.group("name"), gil=gil))
            last_python = None
            continue
        if not threads:
            continue
        frame = _PYSTACK_FRAME.match(raw)
        if frame is None:
            if last_python is not None and raw.startswith("        ") and raw.strip():
                last_python.text = raw.strip()  # the source line under a Python frame
            last_python = None
            continue
        line = int(frame.group("line")) or None
        if frame.group("kind") == "Python":
            last_python = Frame(PYTHON, frame.group("rest"), frame.group("file"), line)
            threads[-1].frames.append(last_python)
            continue
        last_python = None
        rest = frame.group("rest")
        symbol, library = rest, None
        if rest.endswith(")") and " (" in rest:
            symbol, library = rest.rsplit(" (", 1)
            library = library[:-1]
        symbol = symbol.removesuffix(" (inlined)")
        source = frame.group("file")
        threads[-1].frames.append(
            Frame(
                NATIVE,
                symbol,
                None if source in ("???", library) or source.startswith("/usr/lib") else source,
                line,
                library,
            )
        )
    return threads


def py_spy(text: str) -> list[Thread]:
    data: Any = json.loads(text or "[]")
    threads = []
    for item in data if isinstance(data, list) else []:
        frames = []
        for raw in reversed(item.get("frames") or []):  # printed innermost first
            library = raw.get("module")
            is_native = bool(library) or int(raw.get("line") or 0) == 0
            name = str(raw.get("name") or "???")
            if is_native:
                frames.append(Frame(NATIVE, name, None, None, library or raw.get("filename")))
            else:
                frames.append(
                    Frame(PYTHON, name.rsplit(".", 1)[-1], raw.get("filename"), raw.get("line"))
                )
        threads.append(
            Thread(
                int(item.get("os_thread_id") or item.get("thread_id") or 0),
                str(item.get("thread_name") or ""),
                frames,
                HOLDS_GIL if item.get("owns_gil") else None,
            )
        )
    return threads


_GDB_THREAD = re.compile(r'^Thread \d+ \(.*?LWP (?P<tid>\d+)\)(?: "(?P<name>[^"]*)")?\)?:?')
_GDB_FRAME = re.compile(
    r"^#\d+\s+(?:0x[0-9a-f]+ in )?(?P<sym>.+?)(?: \(.*?\))?"
    r"(?: at (?P<file>\S+):(?P<line>\d+)| from (?P<lib>\S+))?$"
)


def gdb(text: str) -> list[Thread]:
    threads: list[Thread] = []
    for raw in text.splitlines():
        head = _GDB_THREAD.match(raw)
        if head:
            threads.append(Thread(int(head.group("tid")), head.group("name") or ""))
            continue
        frame = _GDB_FRAME.match(raw)
        if frame and threads:
            line = frame.group("line")
            threads[-1].frames.insert(
                0,
                Frame(
                    NATIVE,
                    frame.group("sym").strip(),
                    frame.group("file"),
                    int(line) if line else None,
                    frame.group("lib"),
                ),
            )
    return threads


_FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+)$')


def faulthandler(text: str) -> list[Frame]:
    """The Python frames ``faulthandler`` prints for the crashing thread, caller first
    (its lines read ``File "x.py", line 5 in <module>``, most recent call first)."""
    frames: list[Frame] = []
    block = False
    for raw in text.splitlines():
        if raw.startswith(("Current thread", "Thread 0x")):
            block = raw.startswith("Current thread")
            if block:
                frames = []
            continue
        mo = _FAULT_FRAME.match(raw)
        if mo and block:
            frames.insert(
                0, Frame(PYTHON, mo.group("func"), mo.group("file"), int(mo.group("line")))
            )
    return frames
