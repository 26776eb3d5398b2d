"""The code index: where ATen's kernels are written, under aten/src/ATen.

Records the structured-kernel macros (``TORCH_META_FUNC(trunc)``,
``TORCH_META_FUNC2(add, Tensor)``, ``TORCH_IMPL_FUNC(trunc_out)``, see
aten/src/ATen/TensorMeta.h), the DispatchStub macros (``DECLARE_DISPATCH``,
``DEFINE_DISPATCH``, ``REGISTER_*DISPATCH``, aten/src/ATen/native/DispatchStub.h)
and every function defined at the start of a line (ATen does not indent
namespace bodies), so the plain kernels named in a yaml ``dispatch:`` block
are found by name. Cached per checkout and commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.cache import Row
from onboard.report import Reporter
from onboard.workflows.opsource import cache, scan

ROOTS = ("aten/src/ATen",)

_MACRO = re.compile(
    r"^[ \t]*(?P<macro>TORCH_META_FUNC2?|TORCH_IMPL_FUNC|DECLARE_DISPATCH|DEFINE_DISPATCH"
    r"|(?:ALSO_)?REGISTER_\w*DISPATCH)[ \t]*\((?P<args>[^;{]*?)\)",
    re.M,
)
_KEYWORDS = {
    "if", "for", "while", "switch", "return", "sizeof", "defined", "decltype", "catch",
    "static_assert", "alignof", "namespace", "using", "template", "typedef",
}  # fmt: skip
# A return type and qualifiers, then the name and "(" at the start of a line. Type
# tokens and the separators between them share no character, so a line of "****"
# or of words cannot make the regex backtrack exponentially.
_DEF = re.compile(
    r"^(?![#/ \t*])(?:[\w:<>,]+(?:[ \t]*[*&]+[ \t]*|[ \t]+))+(?P<name>[A-Za-z_]\w*)[ \t]*\(",
    re.M,
)
_CREATE_MACRO = re.compile(r"^[ \t]*(?P<macro>CREATE_\w+)\((?P<args>[^)]*)\)", re.M)


def _scan(text: str) -> tuple[list[list[Any]], dict[str, list[int]]]:
    starts = scan.line_starts_of(text)
    macros: list[list[Any]] = []
    for mo in _MACRO.finditer(text):
        args = [a.strip() for a in " ".join(mo.group("args").split()).split(",")]
        macros.append([scan.line_of(text, mo.start("macro"), starts), mo.group("macro"), args])
    for mo in _CREATE_MACRO.finditer(text):
        args = [a.strip() for a in mo.group("args").split(",")]
        macros.append([scan.line_of(text, mo.start("macro"), starts), mo.group("macro"), args])
    defs: dict[str, list[int]] = {}
    for mo in _DEF.finditer(text):
        name = mo.group("name")
        if name in _KEYWORDS or name.isupper():
            continue
        end = text.find("\n", mo.end())
        head = text[mo.start() : end if end >= 0 else len(text)]
        if head.split("//", 1)[0].rstrip().endswith(";"):
            continue  # a declaration
        defs.setdefault(name, []).append(scan.line_of(text, mo.start(), starts))
    return macros, defs


def _build(root: Path, reporter: Reporter) -> dict[str, Any]:
    files, folders = scan.walk(root, ROOTS, scan.CPP_SUFFIXES)
    macros: list[list[Any]] = []
    defs: dict[str, list[list[Any]]] = {}
    with reporter.task("Indexing ATen kernels (once per commit)", total=len(files)) as task:
        for i, rel in enumerate(files):
            text = scan.read(root / rel)
            file_macros, file_defs = _scan(text)
            macros.extend([rel, *m] for m in file_macros)
            for name, lines in file_defs.items():
                defs.setdefault(name, []).extend([rel, ln] for ln in lines)
            if i % 500 == 0:
                task.update(completed=i, detail=rel)
        task.update(completed=len(files))
    return {
        "fingerprint": cache.folder_fingerprint(folders),
        "folders": [str(f) for f in folders],
        "macros": macros,
        "defs": defs,
    }


@dataclass(frozen=True)
class Hit:
    role: str  # meta / impl / kernel / stub_declare / stub_define / stub_register / stub_kernel
    name: str
    path: str
    line: int
    detail: str = ""


@dataclass
class KernelIndex:
    root: Path
    macros: list[list[Any]]
    defs: dict[str, list[list[Any]]]
    warm: bool = False
    _by_macro: dict[tuple[str, str], list[list[Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for entry in self.macros:
            rel, line, macro, args = entry
            first = args[0] if args else ""
            key_name = first
            if macro == "DECLARE_DISPATCH" and len(args) > 1:
                key_name = args[1]
            if macro == "TORCH_META_FUNC2" and len(args) > 1:
                key_name = f"{args[0]}.{args[1]}"
            if macro.startswith("CREATE_"):
                for arg in args:
                    self._by_macro.setdefault(("CREATE", arg), []).append(entry)
                continue
            kind = "REGISTER" if "REGISTER" in macro else macro
            self._by_macro.setdefault((kind, key_name), []).append(entry)

    def meta(self, base: str, overload: str = "") -> list[Hit]:
        hits = self._by_macro.get(("TORCH_META_FUNC", base), [])
        if overload:
            hits = hits + self._by_macro.get(("TORCH_META_FUNC2", f"{base}.{overload}"), [])
        return [Hit("meta", base, r, ln, m) for r, ln, m, _a in hits]

    def impl(self, kernel: str) -> list[Hit]:
        return [
            Hit("impl", kernel, r, ln, m)
            for r, ln, m, _a in self._by_macro.get(("TORCH_IMPL_FUNC", kernel), [])
        ]

    def created(self, kernel: str) -> list[Hit]:
        """``CREATE_UNARY_TORCH_IMPL_FUNC(trunc_out, trunc_stub)``-style definitions."""
        return [
            Hit("impl", kernel, r, ln, m + "(" + ", ".join(a) + ")")
            for r, ln, m, a in self._by_macro.get(("CREATE", kernel), [])
        ]

    def definitions(self, name: str, *, prefer: str | None = None) -> list[Hit]:
        hits = [Hit("kernel", name, r, ln) for r, ln in self.defs.get(name, [])]
        # Definitions in .cpp/.cu files first (a header's inline helpers after).
        hits.sort(key=lambda h: (h.path != prefer, h.path.endswith((".h", ".cuh")), h.path, h.line))
        return hits

    def stub(self, stub: str) -> list[Hit]:
        out = [
            Hit("stub_declare", stub, r, ln, m)
            for r, ln, m, _a in self._by_macro.get(("DECLARE_DISPATCH", stub), [])
        ]
        out += [
            Hit("stub_define", stub, r, ln, m)
            for r, ln, m, _a in self._by_macro.get(("DEFINE_DISPATCH", stub), [])
        ]
        for r, ln, m, args in self._by_macro.get(("REGISTER", stub), []):
            target = args[-1].lstrip("&").strip() if len(args) > 1 else ""
            out.append(Hit("stub_register", stub, r, ln, f"{m} -> {target}" if target else m))
            if target and target not in ("nullptr",):
                fn = target.split("::")[-1]
                out += [
                    Hit("stub_kernel", fn, h.path, h.line)
                    for h in self.definitions(fn, prefer=r)[:1]
                ]
        return out


# [path, line, macro, [args]] per macro; name -> [[path, line]] per definition.
SHAPE = {
    "fingerprint": str,
    "folders": [str],
    "macros": [Row(str, int, str, [str])],
    "defs": {str: [Row(str, int)]},
}


def load(root: Path, tree_id: str, reporter: Reporter, *, refresh: bool = False) -> KernelIndex:
    name = "kernels-" + cache.key(root.resolve(), tree_id) + ".json"
    data = None if refresh else cache.load(name, SHAPE)
    if data is not None:
        folders = [Path(f) for f in data.get("folders", [])]
        if cache.folder_fingerprint(folders) == data.get("fingerprint"):
            return KernelIndex(root, data["macros"], data["defs"], warm=True)
    data = _build(root, reporter)
    cache.store(name, data)
    return KernelIndex(root, data["macros"], data["defs"], warm=False)


_STUB_USE = re.compile(r"\b(\w+_stub)\b")


def stubs_near(lines: list[str], line: int) -> list[str]:
    """The ``*_stub`` names a kernel body (or a CREATE_* macro line) at ``line`` uses."""
    found: list[str] = []
    for i in range(line - 1, min(len(lines), line + 80)):
        text = lines[i]
        found.extend(s for s in _STUB_USE.findall(text) if s not in found)
        if i > line - 1 and (text.startswith("}") or text.startswith("TORCH_")):
            break
    return found
