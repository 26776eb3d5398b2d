"""What an op check reports: its steps, and the small helpers every check shares.

A ``Step`` is one line of the report (passed / failed / not checked, with the
file and line to look at); ``OpVerification`` is one op's list of them, the
object the verify table, the JSON and the tests read.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from onboard import proc
from onboard.jsonable import spec

PASSED = "passed"
FAILED = "failed"
NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class Step:
    name: str
    status: str
    detail: str
    location: str | None = None  # "path:line" to look at
    seconds: float = field(default=0.0, metadata=spec(digits=2))
    cached: bool = False


@dataclass
class OpVerification:
    """JSON keys: ``op``, ``ok``, ``steps`` [{name, status, detail, location,
    seconds, cached}], ``seconds``."""

    op: str
    steps: list[Step] = field(default_factory=list)
    seconds: float = field(default=0.0, metadata=spec(digits=2))

    @property
    def ok(self) -> bool:
        return not any(s.status == FAILED for s in self.steps)

    def json_extra(self) -> dict[str, object]:
        return {"ok": self.ok}


def fingerprint(*parts: object) -> str:
    """A short hash of files' contents (a Path) and values (anything else)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            h.update(part.read_bytes() if part.is_file() else b"<missing>")
        else:
            h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def first_line_of(path: Path, needle: str | re.Pattern[str], after: int = 0) -> int | None:
    """The 1-based line of the first match of ``needle`` after line ``after``."""
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for i, line in enumerate(lines[after:], start=after + 1):
        if needle.search(line) if isinstance(needle, re.Pattern) else needle in line:
            return i
    return None


def loc(rel: str, line: int | None) -> str:
    return f"{rel}:{line}" if line else rel


def reference(checkout: Path, rel: str) -> tuple[str | None, int | None, str | None]:
    """(REFERENCE expression, its line, error) from the scaffold's test file."""
    path = checkout / rel
    try:
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    except (OSError, SyntaxError) as exc:
        return None, getattr(exc, "lineno", None), f"{type(exc).__name__}: {exc}"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "REFERENCE" for t in node.targets
        ):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value, node.lineno, None
            return None, node.lineno, "REFERENCE must be a string literal (a Python expression)"
    return None, None, 'no top-level `REFERENCE = "..."` assignment'


def write_if_changed(path: Path, text: str) -> None:
    """Keep mtimes of unchanged inputs, so ninja does not rebuild them."""
    try:
        if path.read_text("utf-8") == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def tail(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def child_failure(result: proc.Result) -> str:
    """How a child failed, in words: its exit, its last lines (stderr, else stdout
    without the answer protocol's lines), and that its answer was unreadable when an
    answer line was there (``proc.ask_child`` raised ``Unreadable``)."""
    shown = proc.without_answers(result.stdout)
    unread = shown != "\n".join(result.stdout.splitlines())
    said = "; it gave an answer onboard cannot read (not JSON)" if unread else ""
    return f"exit {result.returncode}{said}: {tail(result.stderr or shown)}"


_GCC_ERROR = re.compile(
    r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(?P<msg>.*)$"
)
_NVCC_ERROR = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+)\):\s*error:\s*(?P<msg>.*)$")


def first_compiler_error(log: str, checkout: Path) -> tuple[str | None, str]:
    """(checkout-relative "path:line", message) of the first error, preferring checkout files."""
    errors: list[tuple[str, int, str]] = []
    for text in log.splitlines():
        mo = _GCC_ERROR.match(text.strip()) or _NVCC_ERROR.match(text.strip())
        if mo:
            errors.append((mo.group("path"), int(mo.group("line")), mo.group("msg")))
    if not errors:
        return None, "the compiler failed: " + tail(log, 4)
    root = str(checkout.resolve())
    ours = [e for e in errors if os.path.abspath(e[0]).startswith(root + os.sep)]
    path, line, msg = (ours or errors)[0]
    shown = os.path.relpath(os.path.abspath(path), root) if ours else path
    return f"{shown}:{line}", f"error: {msg}"
