"""Walking a PyTorch tree and reading C++/Python argument text.

Shared by the code index (kernel macros, definitions) and the check index
(TORCH_CHECK-style and `raise` sites). Both need the text of a macro's
arguments across lines, with string literals decoded and comments skipped.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

CPP_SUFFIXES = (".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh", ".mm")
# Never indexed: vendored code, build output, and the wheel's header copy.
SKIP_DIRS = {"third_party", "build", "__pycache__", "node_modules"}
# The installed-package folders a reference tree or an editable build may hold.
SKIP_PATHS = {"torch/include", "torch/lib", "torch/share", "torch/bin", "torch/test"}


def walk(
    root: Path, subdirs: tuple[str, ...], suffixes: tuple[str, ...]
) -> tuple[list[str], list[Path]]:
    """(repo-relative files with one of ``suffixes``, folders walked) under ``root/subdir``."""
    files: list[str] = []
    folders: list[Path] = []
    for sub in subdirs:
        top = root / sub
        if not top.is_dir():
            folders.append(top)  # its later appearance changes the fingerprint
            continue
        for folder, dirs, names in os.walk(top):
            here = Path(folder)
            rel = here.relative_to(root).as_posix()
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in SKIP_DIRS and not d.startswith(".") and f"{rel}/{d}" not in SKIP_PATHS
            )
            folders.append(here)
            files.extend(f"{rel}/{n}" for n in sorted(names) if n.endswith(suffixes))
    return files, folders


# One token of C/C++ argument text: a raw string, a string, a char, a comment, a paren.
CPP_TOKEN = re.compile(
    r'R"(?P<delim>[^(\s]{0,16})\((?P<raw>.*?)\)(?P=delim)"'
    r'|"(?P<str>(?:[^"\\\n]|\\.)*)"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|//[^\n]*"
    r"|/\*.*?\*/"
    r"|(?P<paren>[()])"
    r"|(?P<comma>,)",
    re.S,
)
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\", "0": "\0", "r": "\r"}
_ESCAPE_RE = re.compile(r"\\(.)")


def unescape(text: str) -> str:
    return _ESCAPE_RE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def cpp_arguments(text: str, open_paren: int) -> tuple[list[list[str]], int]:
    """Split the call whose ``(`` is at ``open_paren`` into arguments.

    Returns (for each top-level argument, its decoded string literals with
    adjacent literals joined) and the offset after the closing paren.
    """
    args: list[list[str]] = [[]]
    depth = 0
    pos = open_paren
    last_end = -1  # end of the previous literal, to join "a" "b"
    for mo in CPP_TOKEN.finditer(text, open_paren):
        if mo.group("paren") == "(":
            depth += 1
        elif mo.group("paren") == ")":
            depth -= 1
            if depth == 0:
                return [a for a in args], mo.end()
        elif mo.group("comma") is not None:
            if depth == 1:
                args.append([])
                last_end = -1
        elif mo.group("str") is not None or mo.group("raw") is not None:
            value = mo.group("raw") if mo.group("raw") is not None else unescape(mo.group("str"))
            if depth >= 1:
                joined = last_end >= 0 and not text[last_end : mo.start()].strip()
                if joined and args[-1]:
                    args[-1][-1] += value
                else:
                    args[-1].append(value)
                last_end = mo.end()
        pos = mo.end()
    return args, max(pos, open_paren)


_PY_STRING = re.compile(r"(?P<prefix>[rRbBfFuU]{0,2})(?P<q>'''|\"\"\"|'|\")")
_PY_TOKEN = re.compile(r"#[^\n]*|(?P<paren>[(\[{])|(?P<close>[)\]}])|(?P<comma>,)")


def _py_string_end(text: str, start: int, quote: str, raw: bool) -> int:
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "\\" and not raw:
            i += 2
            continue
        if ch == "\\" and raw:
            i += 2
            continue
        if text.startswith(quote, i):
            return i
        if ch == "\n" and len(quote) == 1:
            return i
        i += 1
    return len(text)


_FSTRING_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")


def _fstring_pieces(body: str) -> list[str]:
    """The literal parts of an f-string body (``{...}`` fields split it)."""
    pieces: list[str] = []
    current = ""
    last = 0
    for mo in _FSTRING_FIELD.finditer(body):
        current += body[last : mo.start()]
        if mo.group(0) in ("{{", "}}"):
            current += mo.group(0)[0]
        else:
            pieces.append(current)
            current = ""
        last = mo.end()
    current += body[last:]
    pieces.append(current)
    return pieces


def py_call_strings(text: str, open_paren: int) -> tuple[list[str], int]:
    """The string-literal pieces inside a Python call starting at ``open_paren``.

    Adjacent literals are joined; an f-string's ``{...}`` fields split it into
    pieces (a runtime value goes there). ``.format`` and ``%`` placeholders are
    split the same way.
    """
    pieces: list[str] = []
    depth = 0
    i = open_paren
    joinable = False
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "([{":
            depth += 1
            joinable = False
            i += 1
            continue
        if ch in ")]}":
            depth -= 1
            i += 1
            joinable = False
            if depth == 0:
                return [p for p in pieces if p.strip()], i
            continue
        if ch == "#":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        mo = _PY_STRING.match(text, i) if ch in "rRbBfFuU'\"" else None
        if mo and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            prefix = mo.group("prefix").lower()
            quote = mo.group("q")
            body_start = mo.end()
            end = _py_string_end(text, body_start, quote, "r" in prefix)
            body = text[body_start:end]
            if "r" not in prefix:
                body = unescape(body.replace("\\\n", ""))
            parts = _fstring_pieces(body) if "f" in prefix else _split_placeholders(body)
            if joinable and pieces:
                pieces[-1] += parts[0]
                pieces.extend(parts[1:])
            else:
                pieces.extend(parts)
            joinable = True
            i = end + len(quote)
            continue
        if not ch.isspace():
            joinable = False
        i += 1
    return [p for p in pieces if p.strip()], n


_PLACEHOLDER = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?[sdrifgxe]|\{[^{}]*\}")


def _split_placeholders(body: str) -> list[str]:
    return _PLACEHOLDER.split(body)


def line_of(text: str, offset: int, line_starts: list[int]) -> int:
    """1-based line number of ``offset`` (``line_starts`` from ``line_starts_of``)."""
    import bisect

    return bisect.bisect_right(line_starts, offset)


def line_starts_of(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


# The wheel's installed headers gain this first line (and a closing #else/#error/#endif)
# that the source files do not have: every line sits one below its source line and
# below the __LINE__ the binary reports (checked on 2.13.0: InferSize.h:30 in the
# binary is line 31 of torch/include/ATen/InferSize.h).
INSTALLED_HEADER_GUARD = "#if !defined(TORCH_STABLE_ONLY) && !defined(TORCH_TARGET_VERSION)"


def read(path: Path) -> str:
    """A file's text in source numbering (an installed header's guard line dropped)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    if text.startswith(INSTALLED_HEADER_GUARD):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text
