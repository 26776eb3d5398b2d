"""Frames to source: a torch native frame to its function in the workspace
checkout, a Python frame to its file and line, each with a link at the
installed commit (``SourceMap``, as `where` and `locate` give them).

The wheel has no DWARF, so a native frame is a symbol name
(``c10d::ProcessGroupGloo::AsyncWork::execute(...)``). ATen's structured
kernels are found by their macros (the kernel index `where` builds); any
other function by one ``git grep`` over the checkout's C++ files for its
out-of-line definition (``AsyncWork::execute(``), else its declaration in
its class (a reference tree has the headers but no .cpp files), else a
free function's definition in its namespace's folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from onboard import git
from onboard.errors import OnboardError
from onboard.workflows.opsource import cpp_trace, scan
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.stuck.model import NATIVE, PYTHON, Frame, Picture

# The folder each of PyTorch's C++ namespaces is written in.
NAMESPACE_DIRS = {
    "c10d": "torch/csrc/distributed/c10d/",
    "jit": "torch/csrc/jit/",
    "autograd": "torch/csrc/autograd/",
    "cuda": "c10/cuda/",
    "native": "aten/src/ATen/native/",
    "at": "aten/src/ATen/",
    "c10": "c10/",
    "torch": "torch/csrc/",
    "caffe2": "caffe2/",
}
# Namespaces in torch's libraries that are not PyTorch's own source.
THIRD_PARTY = {
    "gloo": "gloo (third_party/gloo)",
    "fmt": "fmt (third_party/fmt)",
    "pybind11": "pybind11 (third_party/pybind11)",
    "std": "the C++ standard library",
    "__gnu_cxx": "the C++ standard library",
    "dnnl": "oneDNN (third_party/ideep)",
    "mkldnn": "oneDNN (third_party/ideep)",
    "google": "a third-party library",
    "uv": "libuv (third_party/libuv)",
    "nccl": "NCCL",
}
_CPP_SPECS = ["*.cpp", "*.cc", "*.h", "*.hpp", "*.cu", "*.cuh"]


@dataclass(frozen=True)
class Name:
    """What a symbol names: ``c10d::ProcessGroupGloo::AsyncWork::execute``."""

    parts: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return "::".join(self.parts)

    @property
    def function(self) -> str:
        return self.parts[-1]

    @property
    def owner(self) -> str | None:
        return self.parts[-2] if len(self.parts) > 1 else None

    @property
    def folder(self) -> str | None:
        for part in self.parts[:-1][::-1]:
            if part in NAMESPACE_DIRS:
                return NAMESPACE_DIRS[part]
        return None


_TEMPLATE = re.compile(r"<[^<>]*>")


def name_of(symbol: str) -> Name | None:
    """The function a demangled symbol names (no return type, arguments or templates)."""
    base = cpp_trace.classify(symbol).name
    while True:  # nested template arguments, innermost first
        stripped = _TEMPLATE.sub("", base)
        if stripped == base:
            break
        base = stripped
    base = base.split(" ")[-1] if " " in base.split("::")[0] else base
    base = re.sub(r"\s*\[clone[^\]]*\]", "", base).strip()
    parts = tuple(p for p in base.split("::") if p)
    if not parts or not all(re.fullmatch(r"~?[A-Za-z_]\w*", p) for p in parts):
        return None
    return Name(parts)


@dataclass
class Mapper:
    """Maps the frames of pictures for one workspace (None: no workspace found)."""

    ctx: TreeContext | None
    _found: dict[str, tuple[SourceLoc | None, str]] = field(default_factory=dict)

    def map_pictures(self, pictures: list[Picture]) -> None:
        frames = [f for p in pictures for t in p.threads for f in t.frames]
        self._locate_native([f for f in frames if f.kind == NATIVE and self._wanted(f)])
        for frame in frames:
            if frame.kind == PYTHON:
                self.map_python(frame)
            elif self._wanted(frame):
                name = name_of(frame.function)
                key = name.qualified if name else ""
                frame.where, frame.note = self._found.get(key, (None, "not found"))
            else:
                frame.note = _foreign(frame)

    def map_python(self, frame: Frame) -> None:
        if not frame.file or frame.file.startswith("<"):
            return
        if self.ctx is not None:
            frame.where = self.ctx.source_map.map(frame.file, frame.line)
            return
        path = Path(frame.file)
        text = None
        if path.is_file() and frame.line:
            lines = scan.read(path).splitlines()
            text = lines[frame.line - 1].rstrip() if frame.line <= len(lines) else None
        frame.where = SourceLoc(frame.file, frame.line, text=text, local=frame.file, in_torch=False)

    @staticmethod
    def _wanted(frame: Frame) -> bool:
        if frame.kind != NATIVE or not frame.in_torch_library:
            return False
        name = name_of(frame.function)
        return name is not None and name.parts[0] not in THIRD_PARTY and len(name.parts) > 1

    def _locate_native(self, frames: list[Frame]) -> None:
        names = {n.qualified: n for f in frames if (n := name_of(f.function)) is not None}
        todo = {k: n for k, n in names.items() if k not in self._found}
        if not todo:
            return
        if self.ctx is None:
            for key in todo:
                self._found[key] = (
                    None,
                    "no onboard workspace: `onboard setup DIR --from-wheel` maps it to source",
                )
            return
        for key, name in todo.items():
            self._found[key] = self._kernel(name) or (None, "")
        rest = {k: n for k, n in todo.items() if self._found[k][0] is None}
        if rest:
            self._grep(rest)

    def _kernel(self, name: Name) -> tuple[SourceLoc | None, str] | None:
        """ATen's structured kernels and meta functions, by their macros (as `where` finds)."""
        assert self.ctx is not None
        role = cpp_trace.classify(name.qualified)
        if role.macro is None or not role.op:
            return None
        index = self.ctx.kernels()
        hits = index.impl(role.op) if role.macro == "TORCH_IMPL_FUNC" else index.meta(role.op)
        if not hits:
            return None
        return self.ctx.source_map.loc(hits[0].path, hits[0].line), f"{role.macro}({role.op})"

    def _grep(self, names: dict[str, Name]) -> None:
        assert self.ctx is not None
        checkout = self.ctx.checkout
        alternatives: list[str] = []
        for name in names.values():
            if name.owner:
                alternatives.append(
                    rf"{re.escape(name.owner)}::{re.escape(name.function)}[[:space:]]*\("
                )
                alternatives.append(
                    rf"^(class|struct)[[:space:]][^;(]*{re.escape(name.owner)}([^[:alnum:]_;]|$)"
                )
            alternatives.append(
                rf"^[A-Za-z_][^;=(]*[[:space:]*&]{re.escape(name.function)}[[:space:]]*\("
            )
        try:
            text = git.worktree.grep_null(checkout, "|".join(alternatives), _CPP_SPECS, timeout=60)
        except OnboardError:
            text = ""
        hits: list[tuple[str, int, str]] = []
        for row in text.splitlines():
            parts = row.split("\0", 2)
            if len(parts) == 3 and parts[1].isdigit():
                hits.append((parts[0], int(parts[1]), parts[2]))
        for key, name in names.items():
            self._found[key] = self._pick(name, hits)

    def _pick(self, name: Name, hits: list[tuple[str, int, str]]) -> tuple[SourceLoc | None, str]:
        assert self.ctx is not None
        smap = self.ctx.source_map
        folder = name.folder
        if name.owner:
            qualified = re.compile(
                rf"^[\w:<>,*&\s~]*\b{re.escape(name.owner)}::{re.escape(name.function)}\s*\("
            )
            defs = [h for h in hits if qualified.match(h[2]) and not h[2].rstrip().endswith(";")]
            defs.sort(key=lambda h: (folder is not None and not h[0].startswith(folder), h[0]))
            if defs:
                return smap.loc(defs[0][0], defs[0][1]), "defined here"
            declared = self._in_class(name, hits)
            if declared is not None:
                note = "declared in its class here"
                if self.ctx.ws.is_reference:
                    note += "; its definition is in a .cpp file, not in this reference tree"
                return declared, note
        if folder:
            free = re.compile(rf"^[A-Za-z_][^;=(]*[\s*&]{re.escape(name.function)}\s*\(")
            defs = [
                h
                for h in hits
                if h[0].startswith(folder) and free.match(h[2]) and not h[2].rstrip().endswith(";")
            ]
            if defs:
                return smap.loc(defs[0][0], defs[0][1]), "defined here"
        why = "not in this checkout"
        if self.ctx.ws.is_reference:
            why += " (a reference tree holds headers only: `onboard setup NEW_DIR` for all files)"
        return None, why

    def _in_class(self, name: Name, hits: list[tuple[str, int, str]]) -> SourceLoc | None:
        """The member's line inside ``class Owner { ... }`` (a header's declaration)."""
        assert self.ctx is not None and name.owner
        # `class TORCH_API Work : ...`, not `class FakeWork : public Work`.
        head = re.compile(
            rf"^(?:class|struct)\s+(?:[A-Z][A-Z0-9_]*\s+)*{re.escape(name.owner)}\b(?!\s*;)"
        )
        member = re.compile(rf"\b{re.escape(name.function)}\s*\(")
        for path, line, text in hits:
            if not head.match(text):
                continue
            lines = self.ctx.source_map.lines(self.ctx.checkout / path) or []
            depth, opened = 0, False
            for number in range(line, len(lines) + 1):
                body = lines[number - 1]
                if opened and depth == 1 and member.search(body):
                    return self.ctx.source_map.loc(path, number)
                depth += body.count("{") - body.count("}")
                opened = opened or "{" in body
                if opened and depth <= 0:
                    break
        return None


def _foreign(frame: Frame) -> str:
    if frame.kind != NATIVE:
        return ""
    name = name_of(frame.function)
    if name is not None and name.parts[0] in THIRD_PARTY and frame.in_torch_library:
        return f"{THIRD_PARTY[name.parts[0]]}, built into torch's library"
    return ""
