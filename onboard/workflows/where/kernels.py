"""The kernels of an op in the checkout: the structured meta/impl functions
(TORCH_META_FUNC / TORCH_IMPL_FUNC) or the plain functions the yaml's ``dispatch:``
names, and the DispatchStubs they call, each stub's declare / define / register
lines and kernel bodies. `trace` and `graph` show the same places.

Stubs are looked up by name (``copy_stub``), and ATen has namesakes:
``at::native::copy_stub`` (aten/src/ATen/native/Copy.h, the one ``copy_``
calls) and ``at::native::cpublas::copy_stub`` (aten/src/ATen/native/CPUBlas.h,
BLAS's copy). A kernel named in native_functions.yaml is a function in
``at::native``, and C++ resolves its unqualified ``copy_stub`` there first;
so of namesakes declared in different namespaces, the one declared (or
defined, or registered) in ``at::native`` itself is the one. When that does
not single one out, every namesake is kept and marked as ambiguous
(`namesake_stubs`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from onboard.workflows.opsource import scan
from onboard.workflows.opsource.anatomy import KernelSite
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.kernels import Hit, stubs_near
from onboard.workflows.opsource.native_yaml import NativeEntry
from onboard.workflows.opsource.paths import SourceMap

KERNEL_NAMESPACE = "at::native"
_STUB_ROLES = ("stub_declare", "stub_define", "stub_register")
_TOKEN = re.compile(r"\bnamespace\s+([\w:]*)\s*\{|\{|\}")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


@dataclass
class _Sites:
    """Sites in the order found, each (role, path, line) once."""

    smap: SourceMap
    found: list[KernelSite] = field(default_factory=list)
    _seen: set[tuple[str, str, int]] = field(default_factory=set)

    def add(self, role: str, name: str, hit: Hit, keys: tuple[str, ...] = ()) -> None:
        if (role, hit.path, hit.line) in self._seen:
            return
        self._seen.add((role, hit.path, hit.line))
        self.found.append(
            KernelSite(role, name, self.smap.loc(hit.path, hit.line), keys, hit.detail)
        )


def kernel_sites(
    ctx: TreeContext, functions: list[NativeEntry]
) -> tuple[list[KernelSite], dict[str, list[str]]]:
    """The sites of ``functions`` (yaml entries of one op), and the kernels the yaml names
    that the checkout does not define (kernel -> its dispatch keys)."""
    kidx = ctx.kernels()
    sites = _Sites(ctx.source_map)
    stub_names: list[str] = []
    missing: dict[str, list[str]] = {}
    for f in functions:
        if not f.dispatch:
            continue
        if f.structured:
            for hit in kidx.meta(*_meta_name(f, functions)):
                sites.add("meta", hit.name, hit)
        for kernel, keys in _keys_by_kernel(f).items():
            hits = kidx.impl(kernel) + kidx.created(kernel) if f.structured else []
            if not hits:
                hits = kidx.definitions(kernel)[:3]
            if not hits:
                missing.setdefault(kernel, [])
                missing[kernel].extend(k for k in keys if k not in missing[kernel])
            for hit in hits:
                sites.add(hit.role, kernel, hit, tuple(keys))
                used = _stubs_used(ctx, hit)
                stub_names.extend(s for s in used if s not in stub_names)
        guess = f"{f.base}_stub"
        if guess not in stub_names and kidx.stub(guess):
            stub_names.append(guess)
    for stub in stub_names:
        for hit in kidx.stub(stub):
            sites.add(hit.role, hit.name, hit)
    return namesake_stubs(sites.found, lambda rel: scan.read(ctx.checkout / rel)), missing


def with_python_sites(sites: list[KernelSite], python_sites: list[KernelSite]) -> list[KernelSite]:
    """``sites`` and, after them, the Python kernels not already among them."""
    out = list(sites)
    placed = {(k.role, k.location.label) for k in out}
    for site in python_sites:
        if (site.role, site.location.label) not in placed:
            placed.add((site.role, site.location.label))
            out.append(site)
    return out


def _meta_name(f: NativeEntry, functions: list[NativeEntry]) -> tuple[str, str]:
    """TORCH_META_FUNC is named after the functional op of the structured group."""
    functional = next(
        (g for g in functions if g.structured_delegate == f.name and g.kind == "functional"),
        None,
    )
    if functional is None:
        return f.base, ""
    return functional.base, functional.overload


def _keys_by_kernel(f: NativeEntry) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, kernel in f.dispatch.items():
        out.setdefault(kernel, []).append(key)
    return out


def _stubs_used(ctx: TreeContext, hit: Hit) -> list[str]:
    """The DispatchStubs a kernel (or a CREATE_* macro line) names."""
    if hit.detail.startswith("CREATE_"):
        return re.findall(r"\b(\w+_stub)\b", hit.detail)
    lines = ctx.source_map.lines(ctx.checkout / hit.path) or []
    return stubs_near(lines, hit.line)


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


def namesake_stubs(sites: list[KernelSite], read: Callable[[str], str]) -> list[KernelSite]:
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
