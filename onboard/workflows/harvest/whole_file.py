"""The comments of the files lexed whole: YAML, JavaScript and Jinja templates.

PyTorch has few of them (the YAML files codegen reads, model_dump's viewer,
inductor's kernel templates) and they are small, so each is lexed from its
first character, not from hazard to hazard as ``lexer`` does for Python and C.

- YAML (the YAML 1.2 rule): ``#`` starts a comment at the start of a line or
  after whitespace, outside quoted scalars (``'...'`` with ``''`` for a quote,
  ``"..."`` with backslash escapes; both may span lines) and outside block
  scalars (``|`` or ``>``, and the lines indented under them).
- JavaScript: ``//`` and ``/* */`` outside strings, template literals (whose
  ``${...}`` holds code, and templates in that), and regular-expression literals
  (a ``/`` where a value can start).
- Jinja: ``{# ... #}`` is a comment; ``{{ ... }}`` and ``{% ... %}`` are blanked
  in place (offsets and lines kept) and ``lexer`` reads the rest as the
  language the template writes (``x.py.jinja``: Python).
"""

from __future__ import annotations

import bisect
import re

from onboard.workflows.harvest.tags import Segment

# --------------------------------------------------------------------------
# YAML

# A block scalar's header: the indicator, optional chomping/indentation, nothing else
# but a comment.
_YAML_BLOCK_HEADER = re.compile(r"[|>][-+1-9]{0,2}(?=[ \t\r]|$)")
_YAML_DOUBLE_END = re.compile(r'(?:[^"\\]|\\.)*"')


def yaml_segments(text: str) -> list[Segment]:
    """Every comment of a YAML document, one segment per line."""
    out: list[Segment] = []
    quote = ""  # the quote of a scalar still open at the end of the last line
    flow = 0  # depth of [ ] and { } collections
    block_parent = -1  # a block scalar is open: its lines are indented past this
    block_indent = -1  # its content's indentation, once its first line is seen
    for number, line in enumerate(text.split("\n"), 1):
        if block_parent >= 0:
            stripped = line.strip()
            indent = len(line) - len(line.lstrip(" "))
            if not stripped or (block_indent >= 0 and indent >= block_indent):
                continue
            if block_indent < 0 and indent > block_parent:
                block_indent = indent
                continue
            block_parent = block_indent = -1
        i, n = 0, len(line)
        at_start = True  # a node may start here (a quote opens a quoted scalar)
        node_col = -1  # where the first node of the line starts (after "- " entries)
        dash_col = -1  # the last "- " entry indicator before it
        while i < n:
            if quote == "'":
                j = line.find("'", i)
                if j < 0:
                    break
                if line.startswith("''", j):
                    i = j + 2
                    continue
                quote, i, at_start = "", j + 1, False
                continue
            if quote == '"':
                m = _YAML_DOUBLE_END.match(line, i)
                if m is None:
                    break
                quote, i, at_start = "", m.end(), False
                continue
            c = line[i]
            if c in " \t\r":
                i += 1
                continue
            if c == "#" and (i == 0 or line[i - 1] in " \t"):
                out.append(Segment(number, i, line[i + 1 :].strip(), not line[:i].strip(), 0))
                break
            if at_start:
                if c in "-?" and (i + 1 == n or line[i + 1] in " \t\r"):
                    if node_col < 0:
                        dash_col = i
                    i += 1
                    continue
                if node_col < 0:
                    node_col = i
                if c in "'\"":
                    quote, i = c, i + 1
                    continue
                if c in "[{":
                    flow, i = flow + 1, i + 1
                    continue
                header = _YAML_BLOCK_HEADER.match(line, i) if c in "|>" and not flow else None
                if header is not None:
                    # Its lines are indented past the node that holds it: the key's
                    # mapping, or the sequence whose entry it is.
                    block_parent = dash_col if node_col == i else node_col
                    i, at_start = header.end(), False
                    continue
                at_start = False
            if (
                c == ":"
                and (i + 1 == n or line[i + 1] in " \t\r" or (flow and line[i + 1] in ",]}"))
                or flow
                and c == ","
            ):
                at_start = True
            elif flow and c in "]}":
                flow -= 1
            i += 1
    return out


# --------------------------------------------------------------------------
# JavaScript

_JS_CODE = re.compile(
    r"""(?P<line>//[^\n]*)
    | (?P<block>/\*(?:[^*]|\*(?!/))*(?:\*/|\Z))
    | (?P<string>"(?:[^"\\\n]|\\(?:\r?\n|.))*"?|'(?:[^'\\\n]|\\(?:\r?\n|.))*'?)
    | (?P<tick>`)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<slash>/)
    | (?P<word>[\w$]+)
    | (?P<punct>[^\s\w$"'`/{}])""",
    re.S | re.X,
)
# A template's text up to its end or to the next ``${``.
_JS_TEMPLATE = re.compile(r"(?:[^`\\$]|\\.|\$(?!\{))*(?:`|\$\{|\Z)", re.S)
_JS_REGEX = re.compile(r"/(?![*/])(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[A-Za-z]*")
# After these words a ``/`` starts a regular expression, not a division.
_JS_OPERATOR_WORDS = frozenset(
    [
        "return",
        "typeof",
        "instanceof",
        "in",
        "of",
        "new",
        "delete",
        "void",
        "throw",
        "case",
        "do",
        "else",
        "yield",
        "await",
    ]
)


class _Lines:
    """Line and column of an offset in a text."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index]


def _block_segments(text: str, lines: _Lines, start: int, body: str, block: int) -> list[Segment]:
    """A block comment's lines (``body``: its text without the markers)."""
    line, col = lines.at(start)
    own = not text[start - col : start].strip()
    out = []
    for i, part in enumerate(body.split("\n")):
        words = part.lstrip("*!<").strip() if i == 0 else re.sub(r"^\s*\*+(?!/)\s?", "", part)
        out.append(Segment(line + i, col if i == 0 else 0, words.strip(), own if i == 0 else True,
                           block))  # fmt: skip
    return out


def js_segments(text: str) -> tuple[list[Segment], bool]:
    """Every comment of a JavaScript file; the flag: a string, template or comment
    runs to the end of the file."""
    out: list[Segment] = []
    lines = _Lines(text)
    stack: list[str] = []  # "{" a brace, "${" a template's code
    value = False  # the last token ends a value: a "/" after it divides
    blocks = 0
    pos, n = 0, len(text)
    unterminated = False
    while pos < n:
        m = _JS_CODE.search(text, pos)
        if m is None:
            break
        kind, pos = m.lastgroup, m.end()
        if kind == "line":
            line, col = lines.at(m.start())
            own = not text[m.start() - col : m.start()].strip()
            out.append(Segment(line, col, m.group().lstrip("/").strip(), own, 0))
        elif kind == "block":
            blocks += 1
            body = m.group()[2:]
            unterminated = unterminated or not body.endswith("*/")
            body = body[:-2] if body.endswith("*/") else body
            out += _block_segments(text, lines, m.start(), body, blocks)
        elif kind == "string":
            value = True
        elif kind == "tick" or (kind == "close" and stack and stack[-1] == "${"):
            if kind == "close":
                stack.pop()
            t = _JS_TEMPLATE.match(text, pos)
            assert t is not None  # the pattern matches the empty string at the end
            pos = t.end()
            if t.group().endswith("${"):
                stack.append("${")
                value = False
            else:
                unterminated = unterminated or not t.group().endswith("`")
                value = True
        elif kind == "open":
            stack.append("{")
            value = False
        elif kind == "close":
            if stack:
                stack.pop()
            value = True
        elif kind == "slash":
            regex = None if value else _JS_REGEX.match(text, m.start())
            if regex is not None:
                pos = regex.end()
            value = regex is not None
        elif kind == "word":
            value = m.group() not in _JS_OPERATOR_WORDS
        else:
            value = m.group() in ")]"
    return out, unterminated


# --------------------------------------------------------------------------
# Jinja

_JINJA = re.compile(
    rb"""(?P<comment>\{\#(?:[^#]|\#(?!\}))*(?:\#\}|\Z))
    | (?P<raw>\{%[-+]?\s*raw\s*[-+]?%\})
    | \{%(?:[^%'"]|'[^']*'|"[^"]*"|%(?!\}))*(?:%\}|\Z)
    | \{\{(?:[^}'"]|'[^']*'|"[^"]*"|\}(?!\}))*(?:\}\}|\Z)""",
    re.S | re.X,
)
_JINJA_ENDRAW = re.compile(rb"\{%[-+]?\s*endraw\s*[-+]?%\}")
_NOT_A_LINE_END = re.compile(rb"[^\r\n]")
# Block ids of Jinja comments, apart from those the lexer gives /* */ blocks.
_JINJA_BLOCKS = 1_000_000_000


def jinja_blanked(data: bytes) -> tuple[bytes, list[Segment]]:
    """The template with every Jinja construct blanked (each byte but line ends a
    space), and Jinja's own comments as segments."""
    text = data.decode("utf-8", "replace")
    lines = _Lines(text) if b"{#" in data else None
    out = bytearray(data)
    segments: list[Segment] = []
    pos = 0
    while True:
        m = _JINJA.search(data, pos)
        if m is None:
            break
        start, pos = m.start(), m.end()
        if m.lastgroup == "raw":  # {% raw %}...{% endraw %}: the inside is the template's text
            end = _JINJA_ENDRAW.search(data, pos)
            out[start:pos] = _NOT_A_LINE_END.sub(b" ", m.group())
            if end is None:
                break
            out[end.start() : end.end()] = _NOT_A_LINE_END.sub(b" ", end.group())
            pos = end.end()
            continue
        out[start:pos] = _NOT_A_LINE_END.sub(b" ", m.group())
        if m.lastgroup == "comment" and lines is not None:
            body = m.group()[2:]
            body = body[:-2] if body.endswith(b"#}") else body
            words = body.decode("utf-8", "replace").strip("-+") if body else ""
            at = len(data[:start].decode("utf-8", "replace"))
            segments += _block_segments(text, lines, at, words, _JINJA_BLOCKS + len(segments) + 1)
    return bytes(out), segments
