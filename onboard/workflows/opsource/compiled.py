"""A message's text in the installed torch's compiled libraries, and the file it sits with.

A reference tree has no .cpp/.cu files, so a check written in one is not among
the sites `locate` matches a message against. Its literal text is still in the
binary: each piece of a TORCH_CHECK message is a string constant of the library
(``torch/lib/libtorch_cpu.so``). The linker keeps the string constants of one
source file together, and the build path of that file (``__FILE__``, passed by
every check) is one of them. When the nearest build path before the text and the
nearest one after it name the same file, the text was very probably compiled from
that file: it is said with that reason, as "probably". The line is not in the
binary; running the code through `onboard locate -- ...` gets it.
"""

from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import torchenv
from onboard.errors import OnboardError
from onboard.jsonable import spec

# How far from the text a build path still counts as its neighbour.
WINDOW = 1 << 16
# Occurrences of one anchor read per library (common words repeat).
_MAX_HITS = 20
_MIN_TEXT = 10
_SOURCE = rb"([A-Za-z0-9_./+-]+\.(?:cpp|cc|cu|h|hpp|cuh))"


@dataclass(frozen=True)
class CompiledText:
    library: str  # file name under torch/lib
    text: str  # the string constant that holds part of the message
    # the nearest build path before it (repo-relative)
    before: str | None = field(metadata=spec(key="nearest_path_before"))
    after: str | None = field(metadata=spec(key="nearest_path_after"))  # ...and after it
    url: str | None = None  # the file at the installed commit

    @property
    def file(self) -> str | None:
        """The source file, when both neighbours name it."""
        return self.before if self.before is not None and self.before == self.after else None

    def json_extra(self) -> dict[str, Any]:
        return {"file": self.file}


def _anchors(message: str) -> list[str]:
    """The message's longest runs without digits (digits are mostly runtime values)."""
    runs = {r.strip() for r in re.split(r"\d+", message) if len(r.strip()) >= _MIN_TEXT}
    return sorted(runs, key=lambda r: (-len(r), r))[:3]


def _string_at(data: mmap.mmap, offset: int) -> tuple[str, int]:
    start = data.rfind(b"\0", max(0, offset - 4096), offset) + 1
    end = data.find(b"\0", offset, offset + 4096)
    return data[start : end if end >= 0 else offset].decode("utf-8", "replace"), start


def _neighbours(data: mmap.mmap, offset: int, prefix: bytes) -> tuple[str | None, str | None]:
    low = max(0, offset - WINDOW)
    window = data[low : min(len(data), offset + WINDOW)]
    before = after = None
    for mo in re.finditer(re.escape(prefix) + _SOURCE, window):
        at = low + mo.start()
        if at < offset:
            before = mo.group(1).decode()
        else:
            after = mo.group(1).decode()
            break
    return before, after


def libraries(python: str) -> list[Path]:
    """The compiled libraries of the interpreter's torch (found, not imported)."""
    try:
        torch_dir = torchenv.find_packages(python, "torch").folders["torch"]
    except OnboardError:
        return []  # no libraries to read: the answer goes on without their text
    return sorted((torch_dir / "lib").glob("lib*.so*")) if torch_dir else []


def search(
    libs: list[Path], message: str, prefix: str, pieces: tuple[str, ...] = ()
) -> list[CompiledText]:
    """The string constants of ``libs`` that are literal pieces of ``message``, each with
    the build paths next to it (``prefix``: the build prefix, ``/__w/pytorch/pytorch/``).
    ``pieces``: literal text known to be in the message (another site's with the same
    words), tried after its own digit-free runs (a runtime value without digits, such
    as a dtype, joins the runs around it)."""
    marker = prefix.rstrip("/").encode() + b"/"
    anchors = _anchors(message)
    anchors += sorted(
        {p.strip() for p in pieces if len(p.strip()) >= _MIN_TEXT and p.strip() in message}
        - set(anchors),
        key=lambda r: (-len(r), r),
    )[:3]
    for anchor in anchors:
        found: list[CompiledText] = []
        for lib in libs:
            try:
                with (
                    lib.open("rb") as fh,
                    mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data,
                ):
                    found += _in_library(data, lib.name, anchor, message, marker)
            except (OSError, ValueError):
                continue
        if found:
            return found
    return []


def _in_library(
    data: mmap.mmap, name: str, anchor: str, message: str, marker: bytes
) -> list[CompiledText]:
    found: list[CompiledText] = []
    seen: set[int] = set()
    offset = data.find(anchor.encode())
    while offset >= 0 and len(seen) < _MAX_HITS:
        text, start = _string_at(data, offset)
        if start not in seen and len(text.strip()) >= _MIN_TEXT and text.strip() in message:
            found.append(CompiledText(name, text, *_neighbours(data, start, marker)))
        seen.add(start)
        offset = data.find(anchor.encode(), offset + 1)
    return found


def interpreter_holding(python: str, text: str) -> str | None:
    """The file of the Python interpreter itself (its executable, or the libpython
    beside it) that holds ``text``: the interpreter raises messages with it (``'%.100s'
    object has no attribute '%U'``), so a torch site with the same words need not be
    the one that raised."""
    if len(text.strip()) < _MIN_TEXT:
        return None
    exe = Path(os.path.realpath(python))
    files = [exe, *sorted((exe.parent.parent / "lib").glob("libpython3*.so*"))]
    needle = text.strip().encode()
    for path in files:
        try:
            with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data.find(needle) >= 0:
                    return path.name
        except (OSError, ValueError):
            continue
    return None
