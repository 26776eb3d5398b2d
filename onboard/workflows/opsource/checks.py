"""The check index: every site that can raise or warn with a literal message.

C++: ``TORCH_CHECK`` and its ``TORCH_CHECK_*`` kinds, ``TORCH_INTERNAL_ASSERT``,
``AT_ERROR``, ``TORCH_WARN*``, ``C10_THROW_ERROR`` (c10/util/Exception.h) in
.cpp/.h/.cu files under aten/src, c10 and torch/csrc. Python: ``raise X(...)``,
``warnings.warn(...)`` and ``torch._check*(...)`` under torch/. Each site keeps
its message as literal pieces: the runtime values (``self.sizes()[0]``, an
f-string field) are the gaps between them, so "(2x3 and 4x5)" matches
``"(", a, "x", b, " and ", ...``.

The index is cached per checkout and commit, one record per folder with the
folder's mtime, so an added file re-reads only its folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard.cache import Row
from onboard.report import Reporter
from onboard.workflows.opsource import cache, scan

CPP_ROOTS = ("aten/src", "c10", "torch/csrc")
PY_ROOTS = ("torch",)

_CPP_CHECK = re.compile(
    r"\b(TORCH_CHECK(?:_[A-Z_]+)?|TORCH_INTERNAL_ASSERT(?:_DEBUG_ONLY)?|AT_ERROR"
    r"|TORCH_WARN(?:_ONCE|_DEPRECATION)?|C10_THROW_ERROR|AT_ASSERTM)\s*\("
)
# These take (a, b) and stream their message with <<: nothing literal to index.
_NO_MESSAGE = re.compile(r"^TORCH_CHECK_(?:EQ|NE|LE|LT|GE|GT|NOTNULL)$")
_PY_CHECK = re.compile(
    r"^[ \t]*(?:raise[ \t]+(?P<exc>[\w.]+)[ \t]*\("
    r"|(?P<call>warnings\.warn|torch\._check\w*)[ \t]*\()",
    re.M,
)
_MIN_PIECE = 3


def _message_args(macro: str, args: list[list[str]]) -> list[str]:
    """The literal pieces of the arguments that make the message (not the condition)."""
    if macro in ("AT_ERROR",) or macro.startswith("TORCH_WARN"):
        chosen = args
    elif macro == "TORCH_CHECK_WITH":
        chosen = args[2:]
    else:  # (cond, msg...) and C10_THROW_ERROR(ErrorType, msg...)
        chosen = args[1:]
    return [p for arg in chosen for p in arg]


def scan_cpp(text: str) -> list[list[Any]]:
    """[[line, macro, [pieces]]] for one C/C++ file."""
    if "TORCH_" not in text and "AT_ERROR" not in text and "C10_THROW" not in text:
        return []
    starts = scan.line_starts_of(text)
    sites: list[list[Any]] = []
    for mo in _CPP_CHECK.finditer(text):
        macro = mo.group(1)
        if _NO_MESSAGE.match(macro):
            continue
        line = scan.line_of(text, mo.start(), starts)
        line_start = starts[line - 1]
        head = text[line_start : mo.start()].lstrip()
        # A macro's own definition (c10/util/Exception.h) is not a site.
        if head.startswith("#") or (
            line >= 2 and text[starts[line - 2] : line_start].rstrip().endswith("\\")
        ):
            continue
        if head.startswith("//") or head.startswith("*"):
            continue
        args, _end = scan.cpp_arguments(text, mo.end() - 1)
        pieces = [p for p in _message_args(macro, args) if p.strip()]
        if pieces and max(len(p.strip()) for p in pieces) >= _MIN_PIECE:
            sites.append([line, macro, pieces])
    return sites


def scan_python(text: str) -> list[list[Any]]:
    if "raise" not in text and "warn" not in text and "_check" not in text:
        return []
    starts = scan.line_starts_of(text)
    sites: list[list[Any]] = []
    for mo in _PY_CHECK.finditer(text):
        kind = mo.group("exc") or mo.group("call")
        pieces, _end = scan.py_call_strings(text, mo.end() - 1)
        if pieces and max(len(p.strip()) for p in pieces) >= _MIN_PIECE:
            sites.append(
                [scan.line_of(text, mo.start(), starts) + _leading_newlines(mo), kind, pieces]
            )
    return sites


def _leading_newlines(mo: re.Match[str]) -> int:
    return mo.group(0).count("\n")


def _scan_file(root: Path, rel: str) -> list[list[Any]]:
    text = scan.read(root / rel)
    return scan_python(text) if rel.endswith(".py") else scan_cpp(text)


def _wanted(rel: str) -> bool:
    if rel.endswith(".py"):
        return rel.startswith("torch/")
    return rel.endswith(scan.CPP_SUFFIXES)


def _build(root: Path, reporter: Reporter) -> dict[str, Any]:
    cpp, cpp_folders = scan.walk(root, CPP_ROOTS, scan.CPP_SUFFIXES)
    py, py_folders = scan.walk(root, PY_ROOTS, (".py",))
    files = sorted(set(cpp) | set(py))
    folders = sorted({*cpp_folders, *py_folders})
    out: dict[str, list[list[Any]]] = {}
    with reporter.task(
        "Indexing TORCH_CHECK and raise sites (once per commit)", total=len(files)
    ) as task:
        for i, rel in enumerate(files):
            sites = _scan_file(root, rel)
            if sites:
                out[rel] = sites
            if i % 500 == 0:
                task.update(completed=i, detail=rel)
        task.update(completed=len(files))
    return {
        "folders": {
            str(f.relative_to(root)) if f.is_relative_to(root) else str(f): _mtime(f)
            for f in folders
        },
        "files": out,
        "file_count": len(files),
    }


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def _refresh(root: Path, data: dict[str, Any]) -> bool:
    """Re-read the folders whose mtime moved; True when anything changed."""
    changed = [rel for rel, stamp in data["folders"].items() if _mtime(root / rel) != stamp]
    if not changed:
        return False
    files: dict[str, Any] = data["files"]
    folders: dict[str, int] = data["folders"]
    for rel in changed:
        folder = root / rel
        prefix = "" if rel == "." else rel + "/"
        for name in [f for f in files if f.startswith(prefix) and "/" not in f[len(prefix) :]]:
            del files[name]
        if not folder.is_dir():
            for sub in [f for f in folders if f.startswith(prefix)]:
                folders.pop(sub, None)
            for name in [f for f in files if f.startswith(prefix)]:
                del files[name]
            folders[rel] = -1
            continue
        folders[rel] = _mtime(folder)
        for entry in os.scandir(folder):
            child = f"{prefix}{entry.name}"
            if entry.is_file() and _wanted(child):
                sites = _scan_file(root, child)
                if sites:
                    files[child] = sites
            elif entry.is_dir() and child not in folders and entry.name not in scan.SKIP_DIRS:
                suffixes = (
                    (".py",)
                    if child.startswith("torch/") and not child.startswith("torch/csrc")
                    else scan.CPP_SUFFIXES
                )
                new_files, new_folders = scan.walk(root, (child,), suffixes)
                for new_folder in new_folders:
                    folders[str(new_folder.relative_to(root))] = _mtime(new_folder)
                for new_file in new_files:
                    sites = _scan_file(root, new_file)
                    if sites:
                        files[new_file] = sites
    return True


@dataclass
class CheckIndex:
    root: Path
    files: dict[str, list[list[Any]]]
    warm: bool

    def site_count(self) -> int:
        return sum(len(v) for v in self.files.values())


# folder -> mtime; file -> [[line, macro or exception, [message pieces]]].
SHAPE = {"folders": {str: int}, "files": {str: [Row(int, str, [str])]}}


def load(root: Path, tree_id: str, reporter: Reporter, *, refresh: bool = False) -> CheckIndex:
    name = "checks-" + cache.key(root.resolve(), tree_id) + ".json"
    data = None if refresh else cache.load(name, SHAPE)
    if data is not None:
        if _refresh(root, data):
            cache.store(name, data)
            return CheckIndex(root, data["files"], warm=False)
        return CheckIndex(root, data["files"], warm=True)
    data = _build(root, reporter)
    cache.store(name, data)
    return CheckIndex(root, data["files"], warm=False)


# --- matching ---------------------------------------------------------------

_WS = re.compile(r"\s+")


def normalize(text: str) -> str:
    return _WS.sub(" ", text).strip()


@dataclass(frozen=True)
class Match:
    path: str
    line: int
    macro: str
    pieces: tuple[str, ...]
    matched: int  # characters of the message the literal pieces account for
    missed: int  # characters of literal pieces not found in the message
    coverage: float  # matched / message length

    @property
    def score(self) -> float:
        return self.matched - 2 * self.missed + self.coverage


def match_pieces(message: str, pieces: list[str]) -> tuple[int, int]:
    """(matched, missed): the pieces found in order in ``message``."""
    pos = 0
    matched = missed = 0
    for raw in pieces:
        piece = _WS.sub(" ", raw)
        if not piece.strip():
            continue
        i = message.find(piece, pos)
        if i < 0 and piece != piece.strip():
            piece = piece.strip()
            i = message.find(piece, pos)
        if i < 0:
            missed += len(piece.strip())
            continue
        matched += len(piece)
        pos = i + len(piece)
    return matched, missed


def search(index: CheckIndex, message: str, *, limit: int = 10) -> list[Match]:
    """Sites whose literal pieces explain ``message``, best first."""
    msg = normalize(message)
    if len(msg) < 4:
        return []
    found: list[Match] = []
    for path, sites in index.files.items():
        for line, macro, pieces in sites:
            longest = max(pieces, key=len)
            if normalize(longest) not in msg:
                continue
            matched, missed = match_pieces(msg, pieces)
            coverage = matched / len(msg)
            if matched < min(8, len(msg)) or missed > matched or coverage < 0.25:
                continue
            found.append(Match(path, line, macro, tuple(pieces), matched, missed, coverage))
    found.sort(key=lambda m: (-m.score, m.path, m.line))
    return found[:limit]
