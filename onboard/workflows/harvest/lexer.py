"""Real comments only: find the tagged comments of one source file.

A grep hit on ``TODO`` may sit in a string (``"TODO"`` in a test, an error
message, a docstring); only comments count. Python goes through the standard
``tokenize`` module (the interpreter's own view of what a comment is). C, C++,
CUDA and Objective-C++ go through a small comment lexer that knows string
literals, char literals, C++11 raw strings (``R"delim(...)delim"``, used for
the schema strings in ``torch/csrc`` and for inline kernels) and C++14 digit
separators (``1'000``), so that none of them hides or fakes a comment.

Both lexers yield ``Segment`` lines; ``assemble`` joins the continuation lines
of one comment (the following ``#``/``//`` lines at the same column, or the
following lines of the same ``/* */`` block) to the tagged line.
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from onboard.workflows.harvest.tags import PYTHON_SUFFIXES, TAG_RE, Comment, language

__all__ = ["Comment", "Segment", "assemble", "c_segments", "language", "python_segments",
           "tagged_comments"]  # fmt: skip


@dataclass(frozen=True)
class Segment:
    """One line of a comment: where it is, its text without the markers."""

    line: int
    col: int
    text: str
    own_line: bool  # nothing but whitespace before the comment on its line
    block: int  # > 0: the id of the /* */ comment this line belongs to; 0: a line comment


# --------------------------------------------------------------------------
# Python


# Tokens that neither end a run of comment lines nor start code.
_LAYOUT = frozenset(
    (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
)


def python_segments(source: str, stop_line: int | None = None) -> Iterator[Segment]:
    """COMMENT tokens as segments, from ``tokenize`` (stops after ``stop_line``).

    Raises ``tokenize.TokenError`` / ``SyntaxError`` for a file tokenize
    cannot read (the caller falls back to ``python_segments_fallback``).
    """
    readline = io.StringIO(source).readline
    last = stop_line + 1 if stop_line is not None else None
    for tok in tokenize.generate_tokens(readline):
        row = tok.start[0]
        if last is not None and row > last and tok.type not in _LAYOUT:
            return  # past the last hit and past any comment continuing it
        if tok.type == tokenize.COMMENT:
            col = tok.start[1]
            own = not tok.line[:col].strip()
            yield Segment(row, col, _strip_hash(tok.string), own, 0)


def _strip_hash(raw: str) -> str:
    return raw.lstrip("#").strip()


# The fallback for a file tokenize rejects (a template, Python 2, a syntax
# error in a fixture): strings and comments by one regular expression. Raw or
# not, a backslash escapes the quote lexically, so prefixes do not matter.
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
        yield Segment(line, col, _strip_hash(tok), own, 0)


# --------------------------------------------------------------------------
# C, C++, CUDA

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
    """Comment lines of a C-family file (strings, chars, raw strings skipped)."""
    starts = _line_starts(source)
    stop_at = len(source)
    if stop_line is not None and stop_line + 1 < len(starts):
        # A little past the last hit, for the lines that continue its comment.
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
                if i == 0:
                    text = part.lstrip("*!<").strip()
                else:
                    text = _BLOCK_LINE_RE.sub("", part).strip()
                yield Segment(
                    line + i, col if i == 0 else 0, text, own if i == 0 else True, block_id
                )


# --------------------------------------------------------------------------
# Joining


def assemble(segments: Iterable[Segment]) -> list[Comment]:
    """Tagged comments, each joined with the lines that continue it.

    A line continues the open comment when it is the next line and either
    belongs to the same ``/* */`` block or is a line comment alone on its line
    at the same column. An empty comment line (a paragraph break) or a line
    with its own tag ends it; every tagged line starts a comment of its own.
    """
    out: list[Comment] = []
    open_: list[Segment] = []

    def close() -> None:
        if open_:
            first = open_[0]
            text = " ".join(" ".join(s.text.split()) for s in open_ if s.text)
            out.append(Comment(first.line, open_[-1].line, first.col, text))
            open_.clear()

    for seg in segments:
        tagged = TAG_RE.search(seg.text) is not None
        if open_ and not tagged and seg.text and _continues(open_[-1], seg):
            open_.append(seg)
            continue
        close()
        if tagged:
            open_.append(seg)
    close()
    return out


def _continues(prev: Segment, seg: Segment) -> bool:
    if seg.line != prev.line + 1:
        return False
    if prev.block:
        return seg.block == prev.block
    return seg.block == 0 and seg.own_line and seg.col == prev.col


def tagged_comments(
    path: str, source: str, stop_line: int | None = None
) -> tuple[list[Comment], bool]:
    """The tagged comments of one file; the flag says the Python fallback was used."""
    if path.endswith(PYTHON_SUFFIXES):
        try:
            return assemble(list(python_segments(source, stop_line))), False
        except (tokenize.TokenError, SyntaxError):
            return assemble(python_segments_fallback(source)), True
    return assemble(c_segments(source, stop_line)), False


# --------------------------------------------------------------------------


def _line_starts(source: str) -> list[int]:
    starts = [0]
    find = source.find
    i = find("\n")
    while i != -1:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based line and 0-based column of ``offset``."""
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index]
