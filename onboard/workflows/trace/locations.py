"""Where an op's kernels live: the same places `onboard where` prints.

The tree is the workspace's checkout when there is a workspace (found as
`where` finds it), else a view of the installed torch: a folder in onboard's
cache holding links, at PyTorch's repository paths, to the yaml torchgen
ships (``native_functions.yaml``, ``tags.yaml``, ``derivatives.yaml``) and to
the installed ``torch/`` package, so Python kernels show their lines and
everything else its GitHub link at the installed commit. Paths from the live
dispatch table go through the same ``SourceMap`` as `where`'s, and the kernel
functions and DispatchStubs come from `where`'s own kernel search, so both
commands always name the same lines.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.cache import cache_dir
from onboard.jsonable import spec
from onboard.report import Reporter
from onboard.workflows.opsource.anatomy import KernelSite
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.native_yaml import DERIVATIVES, NATIVE_FUNCTIONS, TAGS
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.where.kernels import kernel_sites
from onboard.workspace import REFERENCE, Workspace
from onboard.workspace import find as find_workspace

_SHA = re.compile(r"^[0-9a-f]{40}$")
# repo path -> path inside the installed site-packages
_VIEW_LINKS = {
    NATIVE_FUNCTIONS: "torchgen/packaged/ATen/native/native_functions.yaml",
    TAGS: "torchgen/packaged/ATen/native/tags.yaml",
    DERIVATIVES: "torchgen/packaged/autograd/derivatives.yaml",
    "torch": "torch",
    "torchgen": "torchgen",
}


def installed_view(torch_file: str, version: str) -> Path:
    """A folder of links that lays the installed wheel's yaml and Python out at repo paths."""
    site = Path(torch_file).resolve().parent.parent
    digest = hashlib.sha1(f"{site}\0{version}".encode()).hexdigest()[:16]
    root = cache_dir("trace", f"installed-{digest}") / "pytorch"
    for rel, target in _VIEW_LINKS.items():
        link = root / rel
        source = site / target
        if link.is_symlink() and os.readlink(link) == str(source):
            continue
        if not source.exists():
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source)
    return root


@dataclass
class OpPlaces:
    op: str  # aten::empty.memory_format
    yaml: SourceLoc | None
    kernels: list[KernelSite] = field(default_factory=list)
    not_found: dict[str, list[str]] = field(
        default_factory=dict, metadata=spec(key="kernels_not_found")
    )


@dataclass
class Sources:
    """One tree (a workspace checkout or the installed view) and the places of ops in it."""

    ctx: TreeContext
    in_workspace: bool
    _places: dict[str, OpPlaces] = field(default_factory=dict)

    @classmethod
    def open(
        cls, workspace: str | None, python: str, torch: dict[str, Any], reporter: Reporter
    ) -> Sources:
        ws = find_workspace(workspace)
        if ws is not None:
            return cls(TreeContext.open(str(ws.root), python, reporter), True)
        git_version = str(torch.get("git_version") or "")
        view = installed_view(str(torch["file"]), str(torch["version"]))
        installed = Workspace(
            root=view.parent,
            torch_version=str(torch["version"]),
            commit=git_version if _SHA.match(git_version) else None,
            commit_kind="installed",
            build_prefix=None,
            python=python,
            checkout_kind=REFERENCE,
        )
        return cls(TreeContext(ws=installed, python=python, reporter=reporter), False)

    @property
    def commit(self) -> str | None:
        return self.ctx.ws.commit

    def where_label(self) -> str:
        if self.in_workspace:
            return f"{self.ctx.ws.checkout_kind} checkout {self.ctx.checkout}"
        return "the installed torch (no workspace)"

    def registration(self, path: str | None, line: int | None) -> SourceLoc | None:
        """A dispatch table's `registered at PATH:LINE`, as `where` shows it."""
        return self.ctx.source_map.map(path, line) if path else None

    def file(self, rel: str, line: int | None = None) -> SourceLoc:
        return self.ctx.source_map.loc(rel, line)

    def places(self, op: str) -> OpPlaces:
        """The yaml entry and kernel functions of ``aten::NAME.OVERLOAD``."""
        if op in self._places:
            return self._places[op]
        name = op.split("::", 1)[1] if op.startswith("aten::") else None
        yaml = self.ctx.yaml()
        entry = yaml.by_name.get(name) if name else None
        if entry is None:
            self._places[op] = OpPlaces(op, None)
            return self._places[op]
        delegate = entry.structured_delegate
        functions = [f for f in yaml.group(entry.base) if f.name in (name, delegate)]
        sites, missing = kernel_sites(self.ctx, functions)
        places = OpPlaces(op, self.ctx.source_map.loc(NATIVE_FUNCTIONS, entry.line), sites, missing)
        self._places[op] = places
        return places

    def derivative(self, name: str) -> tuple[SourceLoc, dict[str, str]] | None:
        """The derivatives.yaml entry of ``mul.Tensor``: its line and formulas."""
        for d in self.ctx.yaml().derivatives_for({name}):
            return self.ctx.source_map.loc(DERIVATIVES, d.line), dict(d.formulas)
        return None

    def limitation(self) -> str | None:
        if not self.in_workspace:
            return (
                "No onboard workspace: locations are the installed torch's Python files and "
                "GitHub links at its commit; kernel functions and DispatchStubs in .cpp files "
                "need a full checkout (`onboard setup DIR`, then run this inside DIR)."
            )
        return self.ctx.ws.limitation("Showing the kernel functions in .cpp/.cu files")
