"""The kernels of an op in the checkout: the structured meta/impl functions
(TORCH_META_FUNC / TORCH_IMPL_FUNC) or the plain functions the yaml's ``dispatch:``
names, and the DispatchStubs they call, each stub's declare / define / register
lines and kernel bodies. `trace` and `graph` show the same places."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from onboard.workflows.opsource import scan
from onboard.workflows.opsource.anatomy import KernelSite
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.kernels import Hit, stubs_near
from onboard.workflows.opsource.paths import SourceMap
from onboard.workflows.where import stubs


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
    ctx: TreeContext, functions: list[dict[str, Any]]
) -> tuple[list[KernelSite], dict[str, list[str]]]:
    """The sites of ``functions`` (yaml entries of one op), and the kernels the yaml names
    that the checkout does not define (kernel -> its dispatch keys)."""
    kidx = ctx.kernels()
    sites = _Sites(ctx.source_map)
    stub_names: list[str] = []
    missing: dict[str, list[str]] = {}
    for f in functions:
        if not f["dispatch"]:
            continue
        if f["structured"]:
            for hit in kidx.meta(*_meta_name(f, functions)):
                sites.add("meta", hit.name, hit)
        for kernel, keys in _keys_by_kernel(f).items():
            hits = kidx.impl(kernel) + kidx.created(kernel) if f["structured"] else []
            if not hits:
                hits = kidx.definitions(kernel)[:3]
            if not hits:
                missing.setdefault(kernel, [])
                missing[kernel].extend(k for k in keys if k not in missing[kernel])
            for hit in hits:
                sites.add(hit.role, kernel, hit, tuple(keys))
                used = _stubs_used(ctx, hit)
                stub_names.extend(s for s in used if s not in stub_names)
        guess = f"{f['base']}_stub"
        if guess not in stub_names and kidx.stub(guess):
            stub_names.append(guess)
    for stub in stub_names:
        for hit in kidx.stub(stub):
            sites.add(hit.role, hit.name, hit)
    return stubs.resolve(sites.found, lambda rel: scan.read(ctx.checkout / rel)), missing


def with_python_sites(sites: list[KernelSite], python_sites: list[KernelSite]) -> list[KernelSite]:
    """``sites`` and, after them, the Python kernels not already among them."""
    out = list(sites)
    placed = {(k.role, k.location.label) for k in out}
    for site in python_sites:
        if (site.role, site.location.label) not in placed:
            placed.add((site.role, site.location.label))
            out.append(site)
    return out


def _meta_name(f: dict[str, Any], functions: list[dict[str, Any]]) -> tuple[str, str]:
    """TORCH_META_FUNC is named after the functional op of the structured group."""
    functional = next(
        (
            g
            for g in functions
            if g["structured_delegate"] == f["name"] and g["kind"] == "functional"
        ),
        None,
    )
    if functional is None:
        return f["base"], ""
    return functional["base"], functional["overload"]


def _keys_by_kernel(f: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, kernel in f["dispatch"].items():
        out.setdefault(kernel, []).append(key)
    return out


def _stubs_used(ctx: TreeContext, hit: Hit) -> list[str]:
    """The DispatchStubs a kernel (or a CREATE_* macro line) names."""
    if hit.detail.startswith("CREATE_"):
        return re.findall(r"\b(\w+_stub)\b", hit.detail)
    lines = ctx.source_map.lines(ctx.checkout / hit.path) or []
    return stubs_near(lines, hit.line)
