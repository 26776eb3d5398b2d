"""Which DispatchStub an op's kernel calls, when several share its name.

Stubs are looked up by name (``copy_stub``), and ATen has namesakes:
``at::native::copy_stub`` (aten/src/ATen/native/Copy.h, the one ``copy_``
calls) and ``at::native::cpublas::copy_stub`` (aten/src/ATen/native/CPUBlas.h,
BLAS's copy). A kernel named in native_functions.yaml is a function in
``at::native``, and C++ resolves its unqualified ``copy_stub`` there first;
so of namesakes declared in different namespaces, the one declared (or
defined, or registered) in ``at::native`` itself is the one. When that does
not single one out, every namesake is kept and marked as ambiguous.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from onboard.workflows.opsource.anatomy import KernelSite

KERNEL_NAMESPACE = "at::native"
_STUB_ROLES = ("stub_declare", "stub_define", "stub_register")
_TOKEN = re.compile(r"\bnamespace\s+([\w:]*)\s*\{|\{|\}")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def namespace_at(text: str, line: int) -> str:
    """The C++ namespace open at the start of ``line`` (1-based) of ``text``."""
    head = "\n".join(text.splitlines()[: line - 1])
    stack: list[str | None] = []
    for mo in _TOKEN.finditer(_COMMENT.sub("", head)):
        token = mo.group(0)
        if token == "{":
            stack.append(None)
        elif token == "}":
            if stack:
                stack.pop()
        else:
            stack.append(mo.group(1) or "(anonymous)")
    return "::".join(name for name in stack if name)


def resolve(sites: list[KernelSite], read: Callable[[str], str]) -> list[KernelSite]:
    """``sites`` with the namesake stubs the kernel does not call dropped (or all of them
    marked ambiguous); ``read(path)`` gives a file's text in source numbering."""
    by_name: dict[str, list[KernelSite]] = {}
    for site in sites:
        if site.role in _STUB_ROLES:
            by_name.setdefault(site.name, []).append(site)
    drop: set[int] = set()
    marked: dict[int, KernelSite] = {}
    for name, group in by_name.items():
        if len({s.location.path for s in group if s.role == "stub_declare"}) < 2:
            continue
        spaces = {id(s): _space(s, read) for s in group}
        chosen = [s for s in group if spaces[id(s)] == KERNEL_NAMESPACE]
        if chosen and len({s.location.path for s in chosen if s.role == "stub_declare"}) == 1:
            drop.update(id(s) for s in group if spaces[id(s)] != KERNEL_NAMESPACE)
            continue
        files = sorted({s.location.path for s in group if s.role == "stub_declare"})
        note = f"ambiguous: {len(files)} DispatchStubs are named {name} ({', '.join(files)})"
        for s in group:
            detail = f"{s.detail}; {note}" if s.detail else note
            marked[id(s)] = dataclasses.replace(s, detail=detail)
    return [marked.get(id(s), s) for s in sites if id(s) not in drop]


def _space(site: KernelSite, read: Callable[[str], str]) -> str | None:
    text = read(site.location.path)
    if not text or not site.location.line:
        return None
    # (`where` finds a REGISTER_DISPATCH by its first argument as written: one that
    # names `cpublas::copy_stub` is not among the `copy_stub` sites at all)
    return namespace_at(text, site.location.line)
