"""From a changed file (and its changed lines) to the ATen ops it is part of.

What `where` follows forward (yaml entry -> kernel -> DispatchStub -> the stub's
kernels, see onboard/workflows/where/kernels.py), followed backward over the same
indexes (``opsource.kernels``, ``opsource.native_yaml``):

- a line in native_functions.yaml / derivatives.yaml: the entry it is in;
- a ``TORCH_META_FUNC(trunc)``: the op it names;
- a ``TORCH_IMPL_FUNC(trunc_out)``, a ``CREATE_*(trunc_out, trunc_stub)`` or a plain
  function: the yaml entries whose ``dispatch:`` names it (structured ``.out``
  entries name the impl);
- a ``REGISTER_DISPATCH(trunc_stub, &trunc_kernel)`` (in ``native/cpu/*``, the
  kernel the stub runs): the stub, then the functions in the file that
  ``DEFINE_DISPATCH``es it which call it (aten/src/ATen/native/DispatchStub.h), then
  their yaml entries.

A file's name is never used: UnaryOpsKernel.cpp holds dozens of ops, so only the
kernels whose lines the change touches count (the whole file when no lines are known).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.workflows.opsource import scan
from onboard.workflows.opsource.kernels import KernelIndex, stubs_near
from onboard.workflows.opsource.native_yaml import DERIVATIVES, NATIVE_FUNCTIONS, YamlIndex

KERNEL_ROOT = "aten/src/ATen/"
_HUNK = re.compile(r"^@@ -(?P<a>\d+)(?:,(?P<an>\d+))? \+(?P<b>\d+)(?:,(?P<bn>\d+))? @@", re.M)


@dataclass
class OpHit:
    """An op group (``base``) the change reaches, and how (``via``, in words)."""

    base: str
    via: list[str] = field(default_factory=list)


def changed_lines(diff: str) -> dict[str, set[int]]:
    """Per file of a ``git diff -U0``, the lines of the new side it touches (a pure
    deletion counts as the line after it)."""
    out: dict[str, set[int]] = {}
    current: str | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            current = target[2:] if target.startswith("b/") else None
            if current is not None:
                out.setdefault(current, set())
            continue
        mo = _HUNK.match(line)
        if mo and current is not None:
            start, count = int(mo.group("b")), int(mo.group("bn") or 1)
            out[current].update(range(start, start + max(count, 1)))
    return out


class OpMapper:
    """Backward over the `where` indexes of one checkout."""

    def __init__(self, checkout: Path, yaml: YamlIndex, kernels: KernelIndex) -> None:
        self.checkout = checkout
        self.yaml = yaml
        self.kernels = kernels
        # kernel function (unqualified) -> op groups whose dispatch names it
        self._by_kernel: dict[str, set[str]] = {}
        for entry in yaml.functions:
            for fn in entry.dispatch.values():
                self._by_kernel.setdefault(fn.split("::")[-1], set()).add(entry.base)
        self._defs_in: dict[str, list[tuple[str, int]]] | None = None
        self._yaml_lines = sorted((f.line, f.base) for f in yaml.functions)
        self._deriv_lines = sorted((d.line, d.op) for d in yaml.derivatives)

    # --- yaml ---

    def yaml_ops(self, path: str, lines: set[int] | None) -> list[OpHit]:
        rows = self._yaml_lines if path == NATIVE_FUNCTIONS else self._deriv_lines
        hits: dict[str, OpHit] = {}
        what = "native_functions.yaml" if path == NATIVE_FUNCTIONS else "derivatives.yaml"
        if lines is not None:  # a blank line between entries belongs to neither
            text = scan.read(self.checkout / path).splitlines()
            lines = {ln for ln in lines if ln > len(text) or text[ln - 1].strip()}
        for line, name in _entries_at(rows, lines):
            base = name if path == NATIVE_FUNCTIONS else self.yaml.base_of(name)
            hits.setdefault(base, OpHit(base)).via.append(f"{what}:{line} ({name})")
        return list(hits.values())

    # --- kernels ---

    def kernel_ops(self, path: str, lines: set[int] | None) -> list[OpHit]:
        text = scan.read(self.checkout / path)
        spans = self._spans(path, text)
        touched = [s for s in spans if lines is None or any(s[1] <= ln < s[2] for ln in lines)]
        hits: dict[str, OpHit] = {}

        def add(base: str, why: str) -> None:
            hit = hits.setdefault(base, OpHit(base))
            if why not in hit.via:
                hit.via.append(why)

        for kind, start, _end, name, args in touched:
            where = f"{path}:{start}"
            if kind in ("TORCH_META_FUNC", "TORCH_META_FUNC2"):
                add(self.yaml.base_of(args[0]), f"{where} TORCH_META_FUNC({args[0]})")
            elif kind == "REGISTER":
                stub = args[0]
                for fn, fn_at in self._stub_users(stub):
                    for base in sorted(self._by_kernel.get(fn, ())):
                        add(base, f"{where} registers {stub}, which {fn} ({fn_at}) calls")
            elif kind.startswith("CREATE_"):
                for base in sorted(self._by_kernel.get(args[0], ())):
                    add(base, f"{where} {kind}({', '.join(args)})")
            else:  # TORCH_IMPL_FUNC or a plain function
                for base in sorted(self._by_kernel.get(name, ())):
                    add(base, f"{where} {name}, named in the yaml's dispatch")
                if not self._by_kernel.get(name):
                    # A helper: the stubs it calls lead nowhere new, but a static
                    # kernel registered in this file does (REGISTER_DISPATCH below).
                    for kind2, s2, _e2, _n2, args2 in spans:
                        targets = {a.lstrip("&").split("::")[-1] for a in args2[1:]}
                        if kind2 != "REGISTER" or name not in targets:
                            continue
                        for fn, fn_at in self._stub_users(args2[0]):
                            for base in sorted(self._by_kernel.get(fn, ())):
                                add(
                                    base,
                                    f"{where} {name}, registered for {args2[0]} at "
                                    f"{path}:{s2}, which {fn} ({fn_at}) calls",
                                )
        return list(hits.values())

    def _spans(self, path: str, text: str) -> list[tuple[str, int, int, str, list[str]]]:
        """(kind, first line, line after, name, args) of each kernel-ish thing in the
        file, each reaching to the next one."""
        marks: list[tuple[int, str, str, list[str]]] = []
        for _rel, line, macro, args in self._macros_in(path):
            if macro.startswith(("DECLARE_", "DEFINE_")):
                continue
            kind = "REGISTER" if "REGISTER" in macro else macro
            marks.append((line, kind, args[0] if args else "", list(args)))
        for name, line in self._defs(path):
            marks.append((line, "def", name, []))
        marks.sort()
        rows = text.splitlines()
        out = []
        for i, (line, kind, name, args) in enumerate(marks):
            end = marks[i + 1][0] if i + 1 < len(marks) else len(rows) + 1
            if kind == "REGISTER" or kind.startswith("CREATE_"):
                end = line + 1  # one line: what follows it is not its body
            else:
                # A body ends at its closing brace in column 0 (ATen does not indent
                # namespace bodies): a comment after it belongs to no kernel.
                close = next((n for n in range(line + 1, end) if rows[n - 1].startswith("}")), None)
                end = close + 1 if close is not None else end
            out.append((kind, line, max(end, line + 1), name, args))
        return out

    def _macros_in(self, path: str) -> Iterable[list[Any]]:
        return (m for m in self.kernels.macros if m[0] == path)

    def _defs(self, path: str) -> list[tuple[str, int]]:
        if self._defs_in is None:
            self._defs_in = {}
            for name, places in self.kernels.defs.items():
                for rel, line in places:
                    self._defs_in.setdefault(rel, []).append((name, line))
        return self._defs_in.get(path, [])

    def _stub_users(self, stub: str) -> list[tuple[str, str]]:
        """The functions (kernel names) that call ``stub``: the CREATE_* macros that
        name it, and the functions in the file that DEFINE_DISPATCHes it whose body
        uses it."""
        users: list[tuple[str, str]] = []
        for rel, line, macro, args in self.kernels.macros:
            if macro.startswith("CREATE_") and stub in args and args:
                users.append((args[0], f"{rel}:{line}"))
        for define in self.kernels.stub(stub):
            if define.role != "stub_define":
                continue
            lines = scan.read(self.checkout / define.path).splitlines()
            for kind, start, _end, name, _args in self._spans(define.path, "\n".join(lines)):
                if kind in ("TORCH_IMPL_FUNC", "def") and stub in stubs_near(lines, start):
                    users.append((name, f"{define.path}:{start}"))
        return list(dict.fromkeys(users))


def _entries_at(rows: list[tuple[int, str]], lines: set[int] | None) -> list[tuple[int, str]]:
    """The (line, name) rows whose span (to the next row) holds one of ``lines``."""
    if lines is None:
        return rows
    found = []
    for i, (line, name) in enumerate(rows):
        end = rows[i + 1][0] if i + 1 < len(rows) else 1 << 30
        if any(line <= ln < end for ln in lines):
            found.append((line, name))
    return found


def is_kernel_file(path: str) -> bool:
    return path.startswith(KERNEL_ROOT) and Path(path).suffix in scan.CPP_SUFFIXES


def is_yaml(path: str) -> bool:
    return path in (NATIVE_FUNCTIONS, DERIVATIVES)
