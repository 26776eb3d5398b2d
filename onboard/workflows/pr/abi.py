"""Binary-compatibility hazards in a diff.

Extensions and other libraries built against a released libtorch keep working
only while a few things stay put: the layout of TensorImpl and StorageImpl
(c10/core/TensorImpl.h guards its size: see Note [TensorImpl size
constraints]), the virtual tables of c10's classes, the pybind11 signatures in
torch/csrc that Python code calls, and how IValues are serialized
(aten/src/ATen/core/ivalue*, torch/csrc/jit/serialization: saved TorchScript
models must still load). A reviewer wants to know up front; these are
warnings from a text scan of the changed lines, not proof of a break.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

LAYOUT_FILES = {
    "c10/core/TensorImpl.h": "TensorImpl",
    "c10/core/StorageImpl.h": "StorageImpl",
}
# Paths whose changed lines are scanned (passed to `git diff -- <paths>`).
SCAN_PATHS = ("c10/", "torch/csrc/", "aten/src/ATen/core/")

_MEMBER = re.compile(
    r"^(?P<indent>[ \t]*)"
    r"(?!return\b|using\b|friend\b|typedef\b|static\b|throw\b|delete\b|case\b|goto\b)"
    r"(?:mutable\s+|alignas\([^)]*\)\s+)?"
    r"[A-Za-z_][\w:<>,\s\*&]*?[\w>\*&]\s+[\*&]?\s*[A-Za-z_]\w*"
    r"(?:\s*\[[^\]]*\])?(?:\s*:\s*\d+)?(?:\s*=\s*[^;]*|\s*\{[^;]*\})?\s*;\s*(?://.*)?$"
)
_VIRTUAL = re.compile(r"\bvirtual\b")
_PYBIND = re.compile(
    r"\.def(?:_static|_readwrite|_readonly|_property(?:_readonly)?)?\s*\(|py::init<"
)


@dataclass(frozen=True)
class Hazard:
    kind: str  # layout / vtable / pybind / ivalue
    path: str
    message: str
    lines: tuple[str, ...]


def _code(line: str) -> str:
    """A changed line without its // comment; "" for comment-only lines."""
    stripped = line.strip()
    if stripped.startswith(("//", "/*", "*", "#")):
        return ""
    return line.split("//", 1)[0].rstrip()


def _net_changes(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop blank lines, and -/+ pairs whose code is the same (an edit of a
    comment or of whitespace changes no declaration)."""
    removed = Counter(c.strip() for sign, c in lines if sign == "-" and c.strip())
    added = Counter(c.strip() for sign, c in lines if sign == "+" and c.strip())
    skip = {"-": removed & added, "+": removed & added}
    skip = {sign: Counter(pairs) for sign, pairs in skip.items()}
    kept = []
    for sign, c in lines:
        key = c.strip()
        if not key:
            continue
        if skip[sign][key] > 0:
            skip[sign][key] -= 1
            continue
        kept.append((sign, c))
    return kept


def parse_diff(text: str) -> dict[str, list[str]]:
    """path -> changed lines ('+x' / '-x') from a unified diff."""
    changed: dict[str, list[str]] = {}
    old = new = None
    in_header = False  # between "diff --git" and the first "@@": ---/+++ name the files
    for line in text.splitlines():
        if line.startswith("diff --git "):
            old = new = None
            in_header = True
        elif line.startswith("@@"):
            in_header = False
        elif in_header and line.startswith("--- "):
            old = line[4:].removeprefix("a/") if line[4:] != "/dev/null" else None
        elif in_header and line.startswith("+++ "):
            new = line[4:].removeprefix("b/") if line[4:] != "/dev/null" else None
        elif not in_header and line[:1] in ("+", "-") and (new or old):
            changed.setdefault(new or old or "", []).append(line)
    return changed


def find_hazards(diff: str) -> list[Hazard]:
    hazards: list[Hazard] = []
    for path, lines in parse_diff(diff).items():
        code = _net_changes([(ln[0], _code(ln[1:])) for ln in lines])
        if path in LAYOUT_FILES:
            members = [
                f"{sign}{c.strip()}"
                for sign, c in code
                if (m := _MEMBER.match(c)) and len(m.group("indent").expandtabs(2)) <= 2
            ]
            if members:
                cls = LAYOUT_FILES[path]
                hazards.append(
                    Hazard(
                        "layout",
                        path,
                        f"data members of {cls} changed: its size and layout are part of "
                        "libtorch's ABI (extensions built against a released torch break), "
                        f"and {path} asserts the size; see Note [TensorImpl size constraints]",
                        tuple(members[:5]),
                    )
                )
        if path.startswith("c10/") and path.endswith((".h", ".hpp")):
            virtuals = [f"{sign}{c.strip()}" for sign, c in code if _VIRTUAL.search(c)]
            if virtuals:
                hazards.append(
                    Hazard(
                        "vtable",
                        path,
                        "a `virtual` function was added, removed or changed in a c10 header: "
                        "the class's virtual table changes, breaking binaries built against "
                        "the old one",
                        tuple(virtuals[:5]),
                    )
                )
        if path.startswith("torch/csrc/"):
            binds = [f"{sign}{c.strip()}" for sign, c in code if _PYBIND.search(c)]
            if binds:
                hazards.append(
                    Hazard(
                        "pybind",
                        path,
                        "pybind11 bindings changed (`.def(...)`): Python callers of these "
                        "functions see a new signature",
                        tuple(binds[:5]),
                    )
                )
        if path.startswith(("aten/src/ATen/core/ivalue", "torch/csrc/jit/serialization/")):
            hazards.append(
                Hazard(
                    "ivalue",
                    path,
                    "IValue or its serialization changed: TorchScript models and pickles "
                    "saved by released versions must still load (and old readers should "
                    "still read new files)",
                    tuple(f"{s}{c.strip()}" for s, c in code[:5]),
                )
            )
    return hazards
