"""`onboard trace`: the ops the user's program ran, nested, each with its kernels' source.

The child runs the program under torch's profiler (``_profile_child.py``:
``torch.autograd.profiler.profile`` with shapes, memory and overload names;
a TorchFunctionMode marks each outermost torch call with its lines).
Which field comes from where: the nesting, times, shapes and dtypes and the
allocations come from the profiler's event tree; the user's file:line and
torch's own Python line below it from the mode; the kernels that ran from
each call's key set (the mode's reading of the thread's dispatch state, the
profiler's sequence numbers and the known guards: ``guards``) walked over the
live dispatch table (``dispatch``); their locations from `where`'s location
code (``locations``, ``op_summary``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.errors import BadInput
from onboard.jsonable import spec
from onboard.report import Reporter
from onboard.workflows.opsource import scan
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.trace import launch, op_summary, optree
from onboard.workflows.trace.dispatch import AutogradKernel, parse_table
from onboard.workflows.trace.guards import factory_guards
from onboard.workflows.trace.locations import Sources

SLOWEST = 10
# The allocators behind CPU and CUDA tensors, as headers the wheel ships name them.
ALLOCATORS = {
    "cpu": ("the CPU allocator", "c10/core/CPUAllocator.h", "GetDefaultCPUAllocator"),
    "cuda": (
        "the CUDA caching allocator",
        "c10/cuda/CUDACachingAllocator.h",
        "class CUDAAllocator",
    ),
}


@dataclass
class MemoryUse:
    device: str
    allocator: str
    header: SourceLoc | None
    allocations: int
    bytes: int
    peak_allocated: int
    peak_reserved: int
    # of the allocations, those no op made (JSON: outside_ops, json_extra)
    outside_allocations: int = field(default=0, metadata=spec(omit=True))
    outside_bytes: int = field(default=0, metadata=spec(omit=True))

    def json_extra(self) -> dict[str, Any]:
        return {
            "outside_ops": {"allocations": self.outside_allocations, "bytes": self.outside_bytes}
        }


@dataclass(kw_only=True)
class TraceResult(launch.ProgramResult):
    tree_label: str = field(metadata=spec(key="tree_source"))
    run_seconds: float = field(metadata=spec(digits=4))
    tree: list[optree.Node]
    ops: dict[str, op_summary.OpSummary]
    # JSON: "summary" {op_calls, distinct_ops, op_ns, slowest} (json_extra)
    total_calls: int = field(metadata=spec(omit=True))
    distinct_ops: int = field(metadata=spec(omit=True))
    total_ns: int = field(metadata=spec(omit=True))
    slowest: list[str] = field(metadata=spec(omit=True))
    memory: list[MemoryUse]
    cuda: dict[str, Any] | None
    hints: list[str] = field(default_factory=list)

    def json_extra(self) -> dict[str, Any]:
        summary = {
            "op_calls": self.total_calls,
            "distinct_ops": self.distinct_ops,
            "op_ns": self.total_ns,
            "slowest": self.slowest,
        }
        return {"summary": summary, **super().json_extra()}


@dataclass(frozen=True, kw_only=True)
class TraceRequest(launch.LaunchOptions):
    """`onboard trace`: the program, and which ops to show: nested at most ``depth``
    deep, those whose name matches ``filter`` (a regular expression)."""

    depth: int | None = None
    filter: str | None = None


def trace(request: TraceRequest, reporter: Reporter | None = None) -> TraceResult:
    reporter = reporter or Reporter()
    pattern = _pattern(request.filter)
    depth = request.depth
    if depth is not None and depth < 1:
        raise BadInput(
            f"--depth {depth} would hide every op.",
            next_step="Use --depth 1 for the ops your code called, 2 for what they called, ...",
        )
    program = launch.program(request)
    ran = launch.run(
        program,
        "_profile_child.py",
        {},
        timeout=request.timeout,
        reporter=reporter,
        what="Tracing",
    )
    answer = ran.answer
    dispatch = optree.Dispatch(
        tables={op: parse_table(text) for op, text in (answer.get("tables") or {}).items()},
        keysets=dict(answer.get("keysets") or {}),
        grad={str(k): bool(v.get("grad")) for k, v in (answer.get("states") or {}).items()},
        backends=dict(answer.get("backends") or {}),
        autograd={
            op: AutogradKernel(**seen) if seen else None
            for op, seen in (answer.get("autograd_kernels") or {}).items()
        },
        factories=factory_guards(str(Path(answer["torch"]["file"]).parent)),
    )
    nodes = optree.build(answer.get("tree") or [], dispatch)
    all_ops = list(optree.ops(nodes))
    launch.check_started(ran, program, did_something=bool(all_ops), what="no aten op to trace")

    reporter.step("Looking up where each kernel is registered and written")
    sources = Sources.open(request.workspace, program.python, answer["torch"], reporter)
    summaries = op_summary.summaries(all_ops, sources)
    distinct = len(summaries)
    if pattern is not None:  # the kernels list shows what the tree shows
        summaries = {op: s for op, s in summaries.items() if pattern.search(op)}
    top = list(optree.top_ops(nodes))
    total_ns = sum(n.ns for n in top)
    slowest = [s.op for s in sorted(summaries.values(), key=lambda s: -s.self_ns)[:SLOWEST]]
    result = TraceResult(
        **launch.ProgramResult.ran(ran, program, sources.commit),
        tree_label=sources.where_label(),
        run_seconds=float(ran.status.get("seconds") or 0.0),
        tree=[],
        ops=summaries,
        total_calls=len(all_ops),
        distinct_ops=distinct,
        total_ns=total_ns,
        slowest=slowest,
        memory=_memory(all_ops, optree.allocations_outside_ops(answer.get("tree") or []), sources),
        cuda=answer.get("cuda"),
    )
    result.hints = _hints(nodes, top, all_ops, total_ns)
    unconfirmed = sum(n.count for n in all_ops if n.keys_basis == "unconfirmed")
    result.notes += _notes(answer, sources, program, unconfirmed)
    result.tree = optree.prune(optree.fold(nodes), depth=depth, pattern=pattern)
    if pattern is not None and not result.tree:
        result.notes.insert(0, f"No op matched --filter {request.filter!r}.")
    elif pattern is not None:
        result.notes.insert(
            0,
            f"--filter {request.filter!r}: the tree and the kernels list show the matching ops "
            "(with the calls that led to them); the summary's totals are the whole program's.",
        )
    return result


def _pattern(text: str | None) -> re.Pattern[str] | None:
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise BadInput(
            f"--filter {text!r} is not a regular expression ({exc}).",
            next_step="Pass a Python regex such as --filter 'aten::(mm|addmm)'.",
        ) from None


def _memory(
    all_ops: list[optree.Node], outside: list[optree.Allocation], sources: Sources
) -> list[MemoryUse]:
    by_device: dict[str, list[optree.Allocation]] = {}
    for node in all_ops:
        for a in node.allocations:
            by_device.setdefault(_device_type(a.device), []).append(a)
    outside_by_device: dict[str, list[optree.Allocation]] = {}
    for a in outside:
        outside_by_device.setdefault(_device_type(a.device), []).append(a)
    out = []
    for device in sorted({*by_device, *outside_by_device}):
        name, header, needle = ALLOCATORS.get(device, (f"the {device} allocator", None, None))
        loc = _header_loc(sources, header, needle) if header and needle else None
        mine = [a for a in outside_by_device.get(device, []) if a.bytes > 0]
        every = by_device.get(device, []) + outside_by_device.get(device, [])
        given = [a for a in every if a.bytes > 0]
        out.append(
            MemoryUse(
                device=device,
                allocator=name,
                header=loc,
                allocations=len(given),
                bytes=sum(a.bytes for a in given),
                peak_allocated=max((a.allocated for a in every), default=0),
                peak_reserved=max((a.reserved for a in every), default=0),
                outside_allocations=len(mine),
                outside_bytes=sum(a.bytes for a in mine),
            )
        )
    return out


def _device_type(device: str) -> str:
    return device.split(":", 1)[0]


def _header_loc(sources: Sources, rel: str, needle: str) -> SourceLoc:
    """The header's line that declares ``needle``, read from the checkout or the wheel."""
    candidates = [sources.ctx.checkout / rel]
    torch_dir = sources.ctx.checkout / "torch"
    candidates.append(torch_dir.resolve() / "include" / rel)
    for path in candidates:
        # in the repository's numbering: an installed header has an extra first line
        lines = scan.read(path).splitlines()
        for number, text in enumerate(lines, 1):
            if needle in text:
                return sources.file(rel, number)
    return sources.file(rel, None)


def _hints(
    nodes: list[optree.Node], top: list[optree.Node], all_ops: list[optree.Node], total_ns: int
) -> list[str]:
    hints = []
    backward = any(n.is_engine for n in all_ops)
    # A call recorded history when its output has a grad_fn: the profiler's sequence
    # number only says an autograd key was in the op's key set, with or without a graph.
    recorded = sum(
        op.ns
        for call in nodes
        if call.kind == "call" and call.graph
        for op in optree.top_ops([call])
    )
    if total_ns and not backward and recorded / total_ns >= 0.5:
        share = round(100 * recorded / total_ns)
        hints.append(
            f"{share}% of the op time went to calls whose output recorded autograd history (it "
            "has a grad_fn), but backward never ran: if these tensors need no gradients, "
            "`with torch.no_grad():` (or `torch.inference_mode()`) skips that bookkeeping."
        )
    calls = Counter(n.label for n in top)
    tiny = [n for n in top if n.ns and n.ns < 20_000]
    if len(top) >= 1000 and len(tiny) >= 0.8 * len(top):
        name, count = calls.most_common(1)[0]
        hints.append(
            f"{len(top)} ops were called from Python and most took under 20 us (the most "
            f"frequent: {name} x{count}): per-call overhead dominates; batch the work into "
            "larger tensor ops."
        )
    return hints


def _notes(
    answer: dict[str, Any], sources: Sources, program: launch.Program, unconfirmed: int
) -> list[str]:
    notes = []
    if answer.get("dropped"):
        notes.append(
            f"The trace kept the first {answer['events']} events and dropped "
            f"{answer['dropped']}: trace a shorter run for the rest."
        )
    if not answer["torch"].get("cuda_available"):
        notes.append(
            "CUDA was not run: this torch has no usable GPU here, so the CUDA caching allocator "
            "(allocated vs reserved memory) and CUDA kernels are not shown."
        )
    notes.append(
        "Kernels that ran: each call's dispatch key set is its tensors' keys with the thread's "
        "included and excluded keys at your Python call (inference_mode, autocast); the keys "
        "C++ excluded below that are seen in the profiler's autograd sequence numbers while "
        "grad mode is on, and applied as known otherwise (factories, torch.tensor); the "
        "kernels follow from the live dispatch table. Tensor subclasses and dispatch modes "
        "are not modelled."
        + (
            f" {unconfirmed} call(s) ran with grad mode off where no known guard applies: "
            "their autograd kernel is shown as run, unconfirmed (kernels_basis in --json)."
            if unconfirmed
            else ""
        )
    )
    limitation = sources.limitation()
    if limitation:
        notes.append(limitation)
    here = launch.cwd_note()
    if here:
        notes.append(here)
    if program.kind == "script" and Path(program.target).suffix != ".py":
        notes.append(f"{program.target} was run as a Python script.")
    return notes
