"""Real comments only: find the tagged comments of one source file.

A grep hit on ``TODO`` may sit in a string (``"TODO"`` in a test, an error
message, a docstring); only comments count. One small lexer per language
knows what hides or fakes a comment: for Python, strings with every prefix,
triple-quoted strings and backslash continuations; for C, C++, CUDA and
Objective-C++, string and char literals, C++11 raw strings
(``R"delim(...)delim"``, used for the schema strings in ``torch/csrc`` and
for inline kernels), C++14 digit separators (``1'000``) and block comments.

Only the lines that matter are lexed, not the whole file. A token can span
lines only if it starts on a line holding a *hazard*: a triple quote or a
backslash-newline in Python; ``/*``, ``R"`` or a backslash-newline in C. Every
other line ends in the state it began in, so the lexer jumps from hazard to
hazard (``bytes.find``), lexes each grep hit's line and the lines right after
a comment (which may continue it), and never pays for the rest of the file.
``tests/harvest_reference.py`` keeps the whole-file lexer (Python through
``tokenize``) that a test compares this one against on the wheel's tree.

Python f-strings are lexed as plain strings: a replacement field holding the
f-string's own quote (allowed since 3.12) is not used in PyTorch's source,
which supports 3.10.

YAML, JavaScript and Jinja templates are few and small: ``whole_file`` lexes
each from its start (a Jinja template's own text, Jinja's constructs blanked,
goes through this module's lexer for the language it writes).

``assemble`` joins the continuation lines of one comment (the following
``#``/``//`` lines at the same column, or the following lines of the same
``/* */`` block) to the tagged line.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from onboard.workflows.harvest import whole_file
from onboard.workflows.harvest.tags import (
    C_SUFFIXES,
    JINJA_SUFFIXES,
    JS_SUFFIXES,
    PYTHON_SUFFIXES,
    TAG_RE,
    YAML_SUFFIXES,
    Comment,
    Segment,
    language,
)

__all__ = ["Comment", "Segment", "assemble", "comments_on_lines", "language", "tagged_comments"]


# --------------------------------------------------------------------------
# The tokens: comments, and what can hide one. Each alternative also matches a
# token cut short by ``endpos`` (the end of the line being lexed), so a search
# bounded to one line finds the same token starts as one over the whole file;
# the token is then matched again without the bound.

# Python: raw or not, a backslash escapes the quote lexically, so prefixes do
# not matter.
_PY_TOKEN = re.compile(
    rb"""(?P<line>\#[^\r\n]*)
    | \"\"\"(?:[^"\\]+|\\.|"(?!""))*(?:\"\"\"|\Z)
    | '''(?:[^'\\]+|\\.|'(?!''))*(?:'''|\Z)
    | "(?:[^"\\\r\n]|\\(?:\r\n|.))*(?:"|$)
    | '(?:[^'\\\r\n]|\\(?:\r\n|.))*(?:'|$)""",
    re.S | re.M | re.X,
)
_PY_HAZARDS = (b'"""', b"'''", b"\\\n", b"\\\r\n")

_C_TOKEN = re.compile(
    rb"""(?P<line>//(?:[^\n\\]|\\(?:\r?\n|.))*)
    | (?P<block>/\*(?:[^*]+|\*(?!/))*(?:\*/|\Z))
    | (?<![\w])(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)"
    | "(?:[^"\\\n]|\\(?:\r?\n|.))*"?
    | (?<![\w])(?:u8|[uUL])?'(?:[^'\\\n]|\\.){1,8}'
    | (?<![\w])\.?\d(?:[\w.]|'(?=\w)|[eEpP][+-])*""",
    re.S | re.X,
)
# The same, with a raw string that is cut short (by ``endpos``) still matching
# from its ``R"``; what the whole file holds there is decided by _C_TOKEN.
_RAW_BODY = rb'\(.*?\)(?P=delim)"'
assert _RAW_BODY in _C_TOKEN.pattern
_C_TOKEN_START = re.compile(
    _C_TOKEN.pattern.replace(_RAW_BODY, rb'\((?:.*?\)(?P=delim)"|.*\Z)'), re.S | re.X
)
_C_HAZARDS = (b"/*", b'R"', b"\\\n", b"\\\r\n")
_BLOCK_LINE_RE = re.compile(r"^\s*\*+(?!/)\s?")
# TAG_RE over bytes (the grep's pattern: ``scan.RG_PATTERN``).
_TAG_BYTES = re.compile(TAG_RE.pattern.encode())
# The C lexer looks this many lines past the last hit for lines continuing its comment.
C_LOOKAHEAD_LINES = 40


@dataclass(frozen=True)
class _Language:
    start: re.Pattern[bytes]  # finds token starts within one line
    full: re.Pattern[bytes]  # the whole token from its start
    hazards: tuple[bytes, ...]
    python: bool

    def finders(self, data: bytes) -> tuple[re.Pattern[bytes], ...]:
        """The hazards' searches that can match in ``data``."""
        crlf = b"\r" in data  # no line of a file without CRLF ends in backslash-CRLF
        return tuple(_FINDERS[h] for h in self.hazards if crlf or not h.endswith(b"\r\n"))


# Each hazard as a one-literal pattern: its search skips to the literal's first byte
# and is 2-3x faster than ``bytes.find`` for these 2-3 byte needles (measured on
# the wheel's tree, CPython 3.11), and the search for them is most of the lexing.
_FINDERS = {h: re.compile(re.escape(h)) for h in (*_PY_HAZARDS, *_C_HAZARDS)}
_LENGTH = {finder: len(h) for h, finder in _FINDERS.items()}

_PYTHON = _Language(_PY_TOKEN, _PY_TOKEN, _PY_HAZARDS, True)
_C = _Language(_C_TOKEN_START, _C_TOKEN, _C_HAZARDS, False)


def _open_triple_quote(token: bytes) -> bool:
    """A triple-quoted string the file ends inside (tokenize rejects such a file)."""
    quote = token[:3]
    return quote in (b'"""', b"'''") and (len(token) < 6 or not token.endswith(quote))


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class _Skim:
    """The lexer over one file, lexing only the lines that matter."""

    def __init__(self, data: bytes, hits: Sequence[tuple[int, int]], lang: _Language) -> None:
        self.data = data
        self.lang = lang
        self.hit_lines = [line for line, _ in hits]
        self.hit_starts = [start for _, start in hits]
        self.segments: list[Segment] = []
        self.blocks = 0
        self.unterminated = False  # a string or comment runs to the end of the file
        # The whole-file C lexer this one replaces stopped 40 lines past the last
        # hit (lines continuing a comment further down were not joined): so does this one.
        self.stop_at = len(data) if lang.python or not hits else self._c_stop(hits[-1][1])

    def _c_stop(self, last_start: int) -> int:
        """The start of the line C_LOOKAHEAD_LINES + 1 lines below the last hit (or of the
        file's last line); the whole file when the hit is on one of the last two lines."""
        at, steps = last_start, 0
        while steps <= C_LOOKAHEAD_LINES:
            nxt = self.data.find(b"\n", at) + 1
            if nxt == 0:
                break
            at, steps = nxt, steps + 1
        return at if steps > 1 else len(self.data)

    def _line_of(self, offset: int) -> int:
        """1-based line of ``offset``, counted from the nearest grep hit."""
        i = bisect.bisect_right(self.hit_starts, offset) - 1
        if i >= 0:
            return self.hit_lines[i] + self.data.count(b"\n", self.hit_starts[i], offset)
        return self.hit_lines[0] - self.data.count(b"\n", offset, self.hit_starts[0])

    def _covers_hit(self, start: int, end: int) -> bool:
        """Whether the token [start, end) touches a hit's line."""
        line_start = self.data.rfind(b"\n", 0, start) + 1
        i = bisect.bisect_left(self.hit_starts, line_start)
        return i < len(self.hit_starts) and self.hit_starts[i] < end

    def run(self) -> list[Segment]:
        data = self.data
        # Per hazard: its next position, or -1 when there is none before `searched`.
        finders = self.lang.finders(data)
        hazards = dict.fromkeys(finders, -1)
        searched = dict.fromkeys(finders, 0)
        pos = 0  # the lexer is between tokens here, at the start of a line
        hit = 0
        follow = -1  # the start of a line that may continue the last comment
        n_hits = len(self.hit_starts)
        while True:
            while hit < n_hits and self.hit_starts[hit] < pos:
                hit += 1  # inside a token lexed already (a string, a block comment)
            if follow < pos:
                follow = -1
            targets = [s for s in (follow, self.hit_starts[hit] if hit < n_hits else -1) if s >= 0]
            if not targets:
                return self.segments
            target = min(targets)
            first = target  # the first hazard before the target, if any
            for h, at in hazards.items():
                if at < pos:
                    # Only hazards that start before the target matter: never look further.
                    start = max(pos, searched[h])
                    found = (
                        h.search(data, start, target + _LENGTH[h] - 1) if start < target else None
                    )
                    at = found.start() if found else -1
                    searched[h] = target if at < 0 else at
                    hazards[h] = at
                if 0 <= at < first:
                    first = at
            if first < target:
                # A token may start on the hazard's line and run over the target: lex
                # that line first, keeping only comments that reach a hit.
                emitted, pos = self._lex_line(data.rfind(b"\n", 0, first) + 1, False)
            else:
                emitted, pos = self._lex_line(target, True)
            follow = pos if emitted and pos < len(data) else -1

    def _lex_line(self, start: int, important: bool) -> tuple[bool, int]:
        """Lex from ``start`` to the end of its line, and of any line a token runs
        onto. ``important``: emit every comment (a hit's line or a line after a
        comment); otherwise only comments that cover a hit. Returns (emitted?,
        the start of the next line)."""
        data = self.data
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        pos = start
        emitted = False
        while True:
            m = self.lang.start.search(data, pos, end + 1)
            if m is None:
                return emitted, end + 1
            full = self.lang.full.match(data, m.start())
            if full is None:  # a raw string that never closes: its R is no token
                pos = m.start() + 1
                continue
            pos = full.end()
            kind = full.lastgroup
            if pos >= len(data) and self.lang.python and kind is None:
                self.unterminated = self.unterminated or _open_triple_quote(full.group())
            if pos > end:
                end = data.find(b"\n", pos)
                if end < 0:
                    end = len(data)
            if kind not in ("line", "block") or full.start() > self.stop_at:
                continue
            if important or self._covers_hit(full.start(), full.end()):
                self._emit(full, kind)
                emitted = True

    def _emit(self, m: re.Match[bytes], kind: str | None) -> None:
        data = self.data
        start = m.start()
        line_start = data.rfind(b"\n", 0, start) + 1
        before = _decode(data[line_start:start])
        col, own = len(before), not before.strip()
        line = self._line_of(start)
        raw = _decode(m.group())
        if self.lang.python:
            self.segments.append(Segment(line, col, raw.lstrip("#").strip(), own, 0))
        elif kind == "line":
            body = raw.replace("\\\r\n", " ").replace("\\\n", " ")
            self.segments.append(Segment(line, col, body.lstrip("/").lstrip("!<").strip(), own, 0))
        else:
            self.blocks += 1
            body = raw[2:]
            if body.endswith("*/"):
                body = body[:-2]
            for i, part in enumerate(body.split("\n")):
                if i == 0:
                    text = part.lstrip("*!<").strip()
                else:
                    text = _BLOCK_LINE_RE.sub("", part).strip()
                self.segments.append(
                    Segment(line + i, col if i == 0 else 0, text, own if i == 0 else True,
                            self.blocks)
                )  # fmt: skip


def comments_on_lines(
    path: str, data: bytes, hits: Sequence[tuple[int, int]]
) -> tuple[list[Comment], bool]:
    """The tagged comments of a file whose grep hits are ``hits``: (line, byte
    offset of the line's start), sorted. The flag: a string or comment runs to
    the end of the file (Python's tokenize rejects such a file)."""
    # A hit past the end (the file shrank after the grep: ``scan`` reads it again)
    # would have the skimmer wait for ever for a line that never comes.
    hits = [h for h in hits if h[1] <= len(data)]
    if not hits:
        return [], False
    if path.endswith(YAML_SUFFIXES):
        return assemble(whole_file.yaml_segments(_decode(data))), False
    if path.endswith(JS_SUFFIXES):
        segments, unterminated = whole_file.js_segments(_decode(data))
        return assemble(segments), unterminated
    if path.endswith(JINJA_SUFFIXES):
        # Jinja's own comments, then the template's text without Jinja's constructs
        # (blanked in place: the hits' offsets still hold) in the language it writes.
        blanked, segments = whole_file.jinja_blanked(data)
        written = path[: path.rfind(".")]
        if not written.endswith((*PYTHON_SUFFIXES, *C_SUFFIXES)):
            return assemble(segments), False
        skim = _Skim(blanked, hits, _PYTHON if written.endswith(PYTHON_SUFFIXES) else _C)
        inner = skim.run()
        return assemble(sorted([*segments, *inner], key=lambda s: (s.line, s.col))), (
            skim.unterminated
        )
    skim = _Skim(data, hits, _PYTHON if path.endswith(PYTHON_SUFFIXES) else _C)
    return assemble(skim.run()), skim.unterminated


def hit_lines(data: bytes, lines: Iterable[int]) -> list[tuple[int, int]]:
    """(line, byte offset of its start) for 1-based ``lines`` (when a grep gave no offsets)."""
    wanted = sorted(set(lines))
    out: list[tuple[int, int]] = []
    find = data.find
    line, at = 1, 0
    for want in wanted:
        while line < want:
            nxt = find(b"\n", at) + 1
            if nxt == 0:
                return out
            line, at = line + 1, nxt
        out.append((line, at))
    return out


def hits_hold(data: bytes, hits: Sequence[tuple[int, int]]) -> bool:
    """Whether ``hits`` (line, offset of its start) describe ``data``: each offset starts
    its line at that line number and the line holds a tag. False when the file
    changed after the grep that found them."""
    line, at = 1, 0
    for want, start in hits:
        if start < at or start > len(data) or (start and data[start - 1] != 0x0A):
            return False
        line += data.count(b"\n", at, start)
        end = data.find(b"\n", start)
        if line != want or not _TAG_BYTES.search(data, start, len(data) if end < 0 else end):
            return False
        at = start
    return True


def find_hits(data: bytes) -> list[tuple[int, int]]:
    """(line, offset of its start) of every line of ``data`` holding a tag: the grep's
    answer again, for a file that changed after it."""
    out: list[tuple[int, int]] = []
    line, at = 1, 0
    for m in _TAG_BYTES.finditer(data):
        start = data.rfind(b"\n", 0, m.start()) + 1
        if out and out[-1][1] == start:
            continue
        line += data.count(b"\n", at, start)
        at = start
        out.append((line, start))
    return out


def tagged_comments(path: str, source: str) -> tuple[list[Comment], bool]:
    """The tagged comments of a whole file's text (its hits found here, not by a grep)."""
    lines = [n for n, text in enumerate(source.split("\n"), 1) if TAG_RE.search(text)]
    data = source.encode("utf-8", "surrogateescape")
    return comments_on_lines(path, data, hit_lines(data, lines))


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
