"""torch's side of a graph break: its entry in the graph break registry
(``torch/_dynamo/graph_break_registry.json``: id -> type, explanation, hints) and the
``unimplemented(gb_type=...)`` call in ``torch/_dynamo`` that raised it (every call
names its registry entry by ``gb_type``, ``torch/_dynamo/exc.py``), read in the
workspace checkout when there is one, else in the installed wheel."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from onboard.workflows.compile.result import Place, RegistryEntry

# `gb_type="..."` or `gb_type=("..." "...")`: one literal or several written apart.
_GB_TYPE = re.compile(
    r"gb_type\s*=\s*\(?\s*((?:(?:[rRbBuUfF]{0,2})(?:\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')\s*)+)"
)
_CALLS = ("unimplemented(", "unimplemented_with_warning(")
_LOOK_BACK = 12  # lines between a call's opening and its gb_type keyword, at most
_TRACE_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


@dataclass
class Site:
    relative: str  # "torch/_dynamo/symbolic_convert.py"
    line: int  # the unimplemented( call's line
    code: str


@dataclass
class TorchSources:
    """Where torch's Python files are read: the workspace checkout's torch/ (when it has
    torch/_dynamo) else the installed package's."""

    torch_dir: Path | None  # the installed torch package
    checkout: Path | None = None  # a workspace checkout holding torch/_dynamo
    _sites: dict[str, list[Site]] | None = None
    _registry: dict[str, RegistryEntry] | None = None
    _lines: dict[Path, list[str]] = field(default_factory=dict)

    @property
    def root(self) -> Path | None:
        """The folder that holds torch/ for the lines shown."""
        if self.checkout is not None:
            return self.checkout
        return self.torch_dir.parent if self.torch_dir is not None else None

    def registry(self) -> dict[str, RegistryEntry]:
        """The installed torch's registry by id (the wheel's: it is what ran)."""
        if self._registry is None:
            self._registry = {}
            if self.torch_dir is not None:
                self._registry = read_registry(self.torch_dir / "_dynamo/graph_break_registry.json")
        return self._registry

    def entry(self, gb_id: str | None) -> RegistryEntry | None:
        return self.registry().get(gb_id) if gb_id else None

    def sites(self, gb_type: str) -> list[Place]:
        """Every unimplemented(...) call in torch/_dynamo naming ``gb_type``."""
        if self._sites is None:
            self._sites = scan_sites(self.root / "torch/_dynamo") if self.root else {}
        return [self._place(s.relative, s.line, s.code) for s in self._sites.get(gb_type, [])]

    def place(self, raw_path: str, line: int, function: str = "") -> Place:
        """A torch file named in a traceback (the wheel's path), shown where it is read."""
        relative = torch_relative(raw_path)
        if relative is None or self.root is None:
            return Place(raw_path, line, function, self.line_text(Path(raw_path), line))
        return self._place(relative, line, self.line_text(self.root / relative, line), function)

    def _place(self, relative: str, line: int, code: str, function: str = "") -> Place:
        assert self.root is not None
        return Place(
            str(self.root / relative), line, function, code, in_checkout=self.checkout is not None
        )

    def line_text(self, path: Path, line: int) -> str:
        if path not in self._lines:
            try:
                self._lines[path] = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._lines[path] = []
        lines = self._lines[path]
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def torch_relative(raw: str) -> str | None:
    """``torch/_dynamo/exc.py`` for any path of a torch package or checkout."""
    cut = raw.replace("\\", "/").rfind("/torch/")
    return raw[cut + 1 :] if cut >= 0 else None


def torch_dir_of(paths: list[str]) -> Path | None:
    """The torch package the traced process imported, from the files its trace names."""
    for raw in paths:
        norm = raw.replace("\\", "/")
        cut = norm.rfind("/torch/_")
        if cut >= 0 and Path(norm[: cut + 6], "_dynamo").is_dir():
            return Path(norm[: cut + 6])
    return None


def read_registry(path: Path) -> dict[str, RegistryEntry]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, RegistryEntry] = {}
    for gb_id, entries in data.items():
        if not entries:
            continue
        first = entries[0]
        out[gb_id] = RegistryEntry(
            gb_id,
            str(first.get("Gb_type", "")),
            str(first.get("Explanation", "")),
            [str(h) for h in first.get("Hints", [])],
        )
    return out


def scan_sites(dynamo: Path) -> dict[str, list[Site]]:
    """gb_type -> the unimplemented(...) calls naming it, in every file of ``dynamo``."""
    found: dict[str, list[Site]] = {}
    if not dynamo.is_dir():
        return found
    base = dynamo.parent.parent
    for path in sorted(dynamo.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "gb_type" not in text:
            continue
        lines = text.splitlines()
        for match in _GB_TYPE.finditer(text):
            try:
                gb_type = ast.literal_eval(match.group(1).strip())
            except (ValueError, SyntaxError):
                continue
            if not isinstance(gb_type, str):
                continue
            at = text.count("\n", 0, match.start())  # 0-based line of `gb_type=`
            call = _call_line(lines, at)
            if call is None:
                continue
            relative = path.relative_to(base).as_posix()
            found.setdefault(gb_type, []).append(Site(relative, call + 1, lines[call].strip()))
    return found


def _call_line(lines: list[str], at: int) -> int | None:
    for i in range(at, max(at - _LOOK_BACK, -1), -1):
        if any(c in lines[i] for c in _CALLS) and "def " not in lines[i]:
            return i
    return None


def traceback_frames(text: str) -> list[tuple[str, int, str, str]]:
    """(path, line, function, code) of each frame of a Python traceback in ``text``."""
    frames = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _TRACE_FRAME.match(line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if _TRACE_FRAME.match(code) or code.startswith("^"):
                code = ""
            frames.append((m["path"], int(m["line"]), m["func"], code))
    return frames


def deciding_frame(traceback_text: str) -> tuple[str, int, str] | None:
    """In a traceback through torch/_dynamo: the frame that called unimplemented(...)
    (the decision), else the last torch/_dynamo frame before exc.py raised."""
    frames = [f for f in traceback_frames(traceback_text) if "/torch/_dynamo/" in f[0]]
    for path, line, func, code in reversed(frames):
        calls = code.startswith(_CALLS) or any(code.startswith("_" + c) for c in _CALLS)
        if calls and not (path.endswith("/_dynamo/exc.py") and func == "unimplemented"):
            return path, line, func
    for path, line, func, _ in reversed(frames):
        if not path.endswith("/_dynamo/exc.py"):
            return path, line, func
    return None
