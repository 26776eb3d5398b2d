"""Per op: the calls, the kernels that ran in them and the source of those kernels only.

An op's kernels differ between calls (``fill_`` runs ``AutogradCPU ->
ADInplaceOrView -> CPU`` when the program calls it, ``CPU`` alone inside
``torch.ones``): the summary lists every kernel that ran in some call, with
the number of calls that ran it. Of the kernel functions and DispatchStubs
`where` finds for the op, only those behind a dispatch key that ran are kept:
a CPU-only program did not run ``empty_cuda`` or a ``.cu`` file's stub.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from onboard.jsonable import spec
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.trace import optree
from onboard.workflows.trace.locations import OpPlaces, Sources
from onboard.workflows.where import KernelSite

# The dispatch table's kind for a kernel that came from an alias key in the yaml.
_ALIAS_KINDS = {
    "default backend kernel": "CompositeExplicitAutograd",  # ...and its NonFunctional twin
    "math kernel": "CompositeImplicitAutograd",
}
# Source folders and suffixes that hold one device's kernels: aten/src/ATen/native/cuda/,
# .cu files, aten/src/ATen/native/mps/ (Objective-C++ .mm), ...
_DEVICE_DIRS = {
    "cuda": "CUDA",
    "cudnn": "CUDA",
    "hip": "HIP",
    "miopen": "HIP",
    "mps": "MPS",
    "xpu": "XPU",
    "mkldnn/xpu": "XPU",
    "vulkan": "Vulkan",
    "metal": "Metal",
}
_DEVICE_SUFFIXES = {".cu": "CUDA", ".cuh": "CUDA", ".mm": "MPS"}
_BACKEND = re.compile(r"^(?:SparseCsr|Sparse|Quantized|NestedTensor|Mkldnn)?(\w+)$")


@dataclass
class KernelPlace:
    key: str
    kind: str
    registered: SourceLoc | None
    calls: int = 0  # how many of the op's calls ran it


@dataclass
class OpSummary:
    op: str
    calls: int
    ns: int
    self_ns: int
    kernels: list[KernelPlace] = field(metadata=spec(key="kernels_ran"))
    places: OpPlaces | None = field(metadata=spec(key="source"))


def summaries(all_ops: list[optree.Node], sources: Sources) -> dict[str, OpSummary]:
    out: dict[str, OpSummary] = {}
    kernels: dict[str, dict[tuple[str, str], KernelPlace]] = {}
    order: dict[str, int] = {}  # key -> its place in the chains seen (highest first)
    for node in all_ops:
        if node.is_engine:
            continue
        summary = out.get(node.label)
        if summary is None:
            summary = out[node.label] = OpSummary(node.label, 0, 0, 0, [], None)
            kernels[node.label] = {}
        summary.calls += node.count
        summary.ns += node.ns
        summary.self_ns += node.self_ns
        seen = kernels[node.label]
        for position, k in enumerate(node.kernels):
            order[k.key] = max(order.get(k.key, 0), len(node.kernels) - position)
            place = seen.get((k.key, k.kind))
            if place is None:
                registered = sources.registration(k.path, k.line)
                place = seen[(k.key, k.kind)] = KernelPlace(k.key, k.kind, registered)
            place.calls += node.count
    for name, summary in out.items():
        summary.kernels = sorted(kernels[name].values(), key=lambda p: -order[p.key])
        if name.startswith("aten::"):
            places = sources.places(name)
            summary.places = OpPlaces(
                places.op,
                places.yaml,
                [s for s in places.kernels if site_ran(s, summary.kernels)],
                places.not_found,
            )
    return out


def site_ran(site: KernelSite, ran: list[KernelPlace]) -> bool:
    """Whether a kernel function or stub `where` found is behind a kernel that ran."""
    keys = {k.key for k in ran}
    if site.keys:
        aliases = {_ALIAS_KINDS[k.kind] for k in ran if k.kind in _ALIAS_KINDS}
        return any(key in keys or key.removesuffix("NonFunctional") in aliases for key in site.keys)
    device = _device_of(site.location.path)
    return device is None or any(_backend(key) == device for key in keys)


def _device_of(path: str) -> str | None:
    pure = PurePosixPath(path)
    if pure.suffix in _DEVICE_SUFFIXES:
        return _DEVICE_SUFFIXES[pure.suffix]
    parts = pure.parts[:-1]
    for i, part in enumerate(parts):
        joined = "/".join(parts[i : i + 2])
        if joined in _DEVICE_DIRS:
            return _DEVICE_DIRS[joined]
        if part in _DEVICE_DIRS:
            return _DEVICE_DIRS[part]
    return None


def _backend(key: str) -> str:
    """The device of a backend key: SparseCPU -> CPU, AutogradCUDA -> CUDA."""
    key = key.removeprefix("Autograd")
    mo = _BACKEND.match(key)
    return mo.group(1) if mo else key
