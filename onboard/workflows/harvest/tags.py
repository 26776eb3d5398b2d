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
# Lexed over the whole file (few files, small): ``onboard/workflows/harvest/whole_file.py``.
# YAML: native_functions.yaml, derivatives.yaml, tags.yaml (codegen's inputs).
YAML_SUFFIXES = (".yaml", ".yml")
# JavaScript: torch/utils/model_dump's viewer.
JS_SUFFIXES = (".js", ".mjs")
# Jinja templates (inductor's kernel templates, ``*.py.jinja``): Jinja's own
# ``{# #}`` comments, and the comments of the language the template writes.
JINJA_SUFFIXES = (".jinja", ".jinja2", ".j2")
WHOLE_FILE_SUFFIXES = (*YAML_SUFFIXES, *JS_SUFFIXES, *JINJA_SUFFIXES)
# Every suffix harvest searches. Files of any other suffix are not read at all
# (prose such as .md/.rst/.txt, and CMake, shell, Bazel and TOML files):
# docs/guide/harvest.md says so, and tests/test_harvest_sweep.py holds it to that.
SUFFIXES = (*PYTHON_SUFFIXES, *C_SUFFIXES, *WHOLE_FILE_SUFFIXES)


def language(path: str) -> str | None:
    if path.endswith(PYTHON_SUFFIXES):
        return "python"
    if path.endswith(JINJA_SUFFIXES):
        return "jinja"
    if path.endswith(YAML_SUFFIXES):
        return "yaml"
    if path.endswith(JS_SUFFIXES):
        return "javascript"
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


@dataclass(frozen=True)
class Segment:
    """One line of a comment: where it is, its text without the markers."""

    line: int
    col: int
    text: str
    own_line: bool  # nothing but whitespace before the comment on its line
    block: int  # > 0: the id of the block comment this line belongs to; 0: a line comment
