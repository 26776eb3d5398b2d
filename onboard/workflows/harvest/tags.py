"""The tags harvested and the files they are looked for in (shared, import-light)."""

from __future__ import annotations

import re
from dataclasses import dataclass

TAGS = ("TODO", "FIXME", "XXX", "HACK")
TAG_RE = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b")

PYTHON_SUFFIXES = (".py", ".pyi")
C_SUFFIXES = (
    ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp",
    ".cu", ".cuh", ".m", ".mm", ".metal",
)  # fmt: skip


def language(path: str) -> str | None:
    if path.endswith(PYTHON_SUFFIXES):
        return "python"
    if path.endswith((".cu", ".cuh")):
        return "cuda"
    if path.endswith((".m", ".mm", ".metal")):
        return "objc++"
    if path.endswith(C_SUFFIXES):
        return "c++"
    return None


@dataclass(frozen=True)
class Comment:
    """A tagged comment: its first line, last joined line and joined text."""

    line: int
    end_line: int
    col: int
    text: str  # the comment's words, continuation lines joined by one space
