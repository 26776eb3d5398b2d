"""Reading the build's output: ninja's ``[N/M]`` progress and the first error."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from onboard.jsonable import spec

# ninja prints "[1234/9876] Building CXX object ..." (NINJA_STATUS default "[%f/%t] ").
PROGRESS_RE = re.compile(r"^\s*\[(\d+)/(\d+)\]\s*(.*)$")
# gcc/clang/nvcc: "path:line:col: error: ..." / "fatal error:"; the linker: "undefined reference".
_COMPILER_ERROR_RE = re.compile(
    r"(\b(fatal )?error:|undefined reference to|\berror\s*:)", re.IGNORECASE
)
_OTHER_ERROR_RE = re.compile(
    r"^\s*(FAILED: |CMake Error|ninja: build stopped|ERROR: |error: subprocess-exited-with-error|"
    r"subprocess\.CalledProcessError|RuntimeError: )"
)
CONTEXT_BEFORE = 3
CONTEXT_AFTER = 12


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    what: str


def parse_progress(line: str) -> Progress | None:
    mo = PROGRESS_RE.match(line)
    if not mo:
        return None
    done, total = int(mo.group(1)), int(mo.group(2))
    if total <= 0 or done > total:
        return None
    return Progress(done, total, mo.group(3).strip())


@dataclass(frozen=True)
class FirstError:
    line_number: int = field(metadata=spec(key="line"))  # 1-based, in the log
    lines: tuple[str, ...]


def first_error(log: Path) -> FirstError | None:
    """The first compiler error (``error:``) with its context, else the first failure line.

    A compiler's ``error:`` comes first because ninja's ``FAILED:`` line only
    names the command; the message a person needs is the compiler's.
    """
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    index = next((i for i, ln in enumerate(lines) if _COMPILER_ERROR_RE.search(ln)), None)
    if index is None:
        index = next((i for i, ln in enumerate(lines) if _OTHER_ERROR_RE.search(ln)), None)
    if index is None:
        if not lines:
            return None
        start = max(0, len(lines) - CONTEXT_AFTER)
        return FirstError(start + 1, tuple(lines[start:]))
    start = max(0, index - CONTEXT_BEFORE)
    end = min(len(lines), index + CONTEXT_AFTER + 1)
    # Stop at the next ninja step: its lines belong to another target.
    for j in range(index + 1, end):
        if PROGRESS_RE.match(lines[j]):
            end = j
            break
    return FirstError(start + 1, tuple(lines[start:end]))
