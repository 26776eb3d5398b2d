"""The whole-file lexer harvest used before it lexed only the lines that matter.

Python goes through the standard ``tokenize`` module (the interpreter's own
view of what a comment is), falling back to one regular expression for a file
tokenize rejects; C, C++, CUDA and Objective-C++ through one regular
expression over the whole file up to 40 lines past the last hit. Kept here as
the reference that tests compare ``onboard.workflows.harvest.lexer`` against
(on small sources and on the installed wheel's whole tree): it is exact and
slow (~13 s of CPU for the wheel's Python files).
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Iterator

from onboard.workflows.harvest.lexer import Segment, assemble
from onboard.workflows.harvest.tags import PYTHON_SUFFIXES, Comment

# Tokens that neither end a run of comment lines nor start code.
_LAYOUT = frozenset(
    (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
)


def python_segments(source: str, stop_line: int | None = None) -> Iterator[Segment]:
    """COMMENT tokens as segments, from ``tokenize`` (stops after ``stop_line``)."""
    readline = io.StringIO(source).readline
    last = stop_line + 1 if stop_line is not None else None
    for tok in tokenize.generate_tokens(readline):
        row = tok.start[0]
        if last is not None and row > last and tok.type not in _LAYOUT:
            return
        if tok.type == tokenize.COMMENT:
            col = tok.start[1]
            own = not tok.line[:col].strip()
            yield Segment(row, col, tok.string.lstrip("#").strip(), own, 0)


_PY_FALLBACK_RE = re.compile(
    r"""\#[^\r\n]*
    | \"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|\Z)
    | '''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z)
    | "(?:[^"\\\r\n]|\\(?:\r\n|.))*(?:"|$)
    | '(?:[^'\\\r\n]|\\(?:\r\n|.))*(?:'|$)""",
    re.S | re.M | re.X,
)


def python_segments_fallback(source: str) -> Iterator[Segment]:
    starts = _line_starts(source)
    for m in _PY_FALLBACK_RE.finditer(source):
        tok = m.group()
        if tok[0] != "#":
            continue
        line, col = _position(starts, m.start())
        own = not source[m.start() - col : m.start()].strip()
        yield Segment(line, col, tok.lstrip("#").strip(), own, 0)


_C_RE = re.compile(
    r"""(?P<line>//(?:[^\n\\]|\\(?:\r?\n|.))*)
    | (?P<block>/\*.*?(?:\*/|\Z))
    | (?<![\w])(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)"
    | "(?:[^"\\\n]|\\(?:\r?\n|.))*"?
    | (?<![\w])(?:u8|[uUL])?'(?:[^'\\\n]|\\.){1,8}'
    | (?<![\w])\.?\d(?:[\w.]|'(?=\w)|[eEpP][+-])*""",
    re.S | re.X,
)
_BLOCK_LINE_RE = re.compile(r"^\s*\*+(?!/)\s?")


def c_segments(source: str, stop_line: int | None = None) -> Iterator[Segment]:
    starts = _line_starts(source)
    stop_at = len(source)
    if stop_line is not None and stop_line + 1 < len(starts):
        stop_at = starts[min(stop_line + 40, len(starts) - 1)]
    block_id = 0
    for m in _C_RE.finditer(source):
        if m.start() > stop_at:
            return
        kind = m.lastgroup
        if kind == "line":
            line, col = _position(starts, m.start())
            own = not source[m.start() - col : m.start()].strip()
            body = m.group().replace("\\\r\n", " ").replace("\\\n", " ")
            yield Segment(line, col, body.lstrip("/").lstrip("!<").strip(), own, 0)
        elif kind == "block":
            block_id += 1
            line, col = _position(starts, m.start())
            own = not source[m.start() - col : m.start()].strip()
            body = m.group()[2:]
            if body.endswith("*/"):
                body = body[:-2]
            for i, part in enumerate(body.split("\n")):
                text = (
                    part.lstrip("*!<").strip() if i == 0 else _BLOCK_LINE_RE.sub("", part).strip()
                )
                yield Segment(
                    line + i, col if i == 0 else 0, text, own if i == 0 else True, block_id
                )


def tagged_comments(
    path: str, source: str, stop_line: int | None = None
) -> tuple[list[Comment], bool]:
    """The tagged comments of one file; the flag says tokenize rejected it."""
    if path.endswith(PYTHON_SUFFIXES):
        try:
            return assemble(list(python_segments(source, stop_line))), False
        except (tokenize.TokenError, SyntaxError):
            return assemble(python_segments_fallback(source)), True
    return assemble(c_segments(source, stop_line)), False


def _line_starts(source: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", source)]


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index]
