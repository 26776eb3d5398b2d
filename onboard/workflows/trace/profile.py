"""`onboard trace`: the ops the user's program ran, nested, each with its kernels' source.

The child runs the program under torch's profiler (``_profile_child.py``:
``torch.autograd.profiler.profile`` with shapes, memory and overload names;
a TorchFunctionMode marks each outermost torch call with its lines).
Which field comes from where: the nesting, times, shapes and dtypes and the
allocations come from the profiler's event tree; the user's file:line and
torch's own Python line below it from the mode; the kernels that ran from
replaying the dispatcher over the live dispatch table (``dispatch``); their
locations from `where`'s location code (``locations``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard.errors import BadInput
from onboard.report import Reporter
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.trace import launch, optree
from onboard.workflows.trace.dispatch import parse_table
from onboard.workflows.trace.locations import OpPlaces, Sources

if TYPE_CHECKING:
    from rich.console import Console

MAX_LINES = 400  # printed tree lines; --json has the whole (folded) tree
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
class KernelPlace:
    key: str
    kind: str
    registered: SourceLoc | None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "registered": self.registered.to_json() if self.registered else None,
        }


@dataclass
class OpSummary:
    op: str
    calls: int
    ns: int
    self_ns: int
    kernels: list[KernelPlace]
    places: OpPlaces | None

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "calls": self.calls,
            "ns": self.ns,
            "self_ns": self.self_ns,
            "kernels_ran": [k.to_json() for k in self.kernels],
            "source": self.places.to_json() if self.places else None,
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

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "allocator": self.allocator,
            "header": self.header.to_json() if self.header else None,
            "allocations": self.allocations,
            "bytes": self.bytes,
            "peak_allocated": self.peak_allocated,
            "peak_reserved": self.peak_reserved,
        }


@dataclass(kw_only=True)
class TraceResult(launch.ProgramResult):
    tree_label: str
    run_seconds: float
    tree: list[optree.Node]
    ops: dict[str, OpSummary]
    total_calls: int
    total_ns: int
    slowest: list[str]
    memory: list[MemoryUse]
    cuda: dict[str, Any] | None
    hints: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head_json(),
            "tree_source": self.tree_label,
            "run_seconds": round(self.run_seconds, 4),
            "tree": [n.to_json() for n in self.tree],
            "ops": {name: s.to_json() for name, s in self.ops.items()},
            "summary": {
                "op_calls": self.total_calls,
                "distinct_ops": len(self.ops),
                "op_ns": self.total_ns,
                "slowest": self.slowest,
            },
            "memory": [m.to_json() for m in self.memory],
            "cuda": self.cuda,
            "hints": self.hints,
            "notes": self.notes,
        }

    def render(self, console: Console, verbose: bool) -> None:
        from onboard.workflows.trace.render import render_trace

        render_trace(self, console, verbose)


def trace(
    command: Sequence[str] | None = None,
    *,
    code: str | None = None,
    workspace: str | None = None,
    python: str | None = None,
    workspace_build: bool = False,
    depth: int | None = None,
    filter: str | None = None,
    timeout: float = launch.DEFAULT_TIMEOUT,
    reporter: Reporter | None = None,
) -> TraceResult:
    reporter = reporter or Reporter()
    pattern = _pattern(filter)
    if depth is not None and depth < 1:
        raise BadInput(
            f"--depth {depth} would hide every op.",
            next_step="Use --depth 1 for the ops your code called, 2 for what they called, ...",
        )
    program = launch.parse(
        command, code, python=python, workspace_build=workspace_build, workspace=workspace
    )
    ran = launch.run(
        program, "_profile_child.py", {}, timeout=timeout, reporter=reporter, what="Tracing"
    )
    answer = ran.answer
    dispatch = optree.Dispatch(
        tables={op: parse_table(text) for op, text in (answer.get("tables") or {}).items()},
        keysets=dict(answer.get("keysets") or {}),
        excluded=frozenset(answer.get("tls_exclude") or ()),
    )
    nodes = optree.build(answer.get("tree") or [], dispatch)
    all_ops = list(optree.ops(nodes))
    launch.check_started(ran, program, did_something=bool(all_ops), what="no aten op to trace")

    reporter.step("Looking up where each kernel is registered and written")
    sources = Sources.open(workspace, program.python, answer["torch"], reporter)
    summaries = _summaries(all_ops, sources)
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
        total_ns=total_ns,
        slowest=slowest,
        memory=_memory(all_ops, sources),
        cuda=answer.get("cuda"),
    )
    result.hints = _hints(top, all_ops, total_ns)
    result.notes += _notes(answer, sources, program)
    result.tree = optree.prune(optree.fold(nodes), depth=depth, pattern=pattern)
    if pattern is not None and not result.tree:
        result.notes.insert(0, f"No op matched --filter {filter!r}.")
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


def _summaries(all_ops: list[optree.Node], sources: Sources) -> dict[str, OpSummary]:
    out: dict[str, OpSummary] = {}
    for node in all_ops:
        if node.is_engine:
            continue
        summary = out.get(node.label)
        if summary is None:
            kernels = [
                KernelPlace(k.key, k.kind, sources.registration(k.path, k.line))
                for k in node.kernels
            ]
            places = sources.places(node.label) if node.label.startswith("aten::") else None
            summary = out[node.label] = OpSummary(node.label, 0, 0, 0, kernels, places)
        summary.calls += node.count
        summary.ns += node.ns
        summary.self_ns += node.self_ns
    return out


def _memory(all_ops: list[optree.Node], sources: Sources) -> list[MemoryUse]:
    by_device: dict[str, list[optree.Allocation]] = {}
    for node in all_ops:
        for a in node.allocations:
            by_device.setdefault(a.device.split(":", 1)[0], []).append(a)
    out = []
    for device, allocs in sorted(by_device.items()):
        name, header, needle = ALLOCATORS.get(device, (f"the {device} allocator", None, None))
        loc = _header_loc(sources, header, needle) if header and needle else None
        given = [a for a in allocs if a.bytes > 0]
        out.append(
            MemoryUse(
                device=device,
                allocator=name,
                header=loc,
                allocations=len(given),
                bytes=sum(a.bytes for a in given),
                peak_allocated=max((a.allocated for a in allocs), default=0),
                peak_reserved=max((a.reserved for a in allocs), default=0),
            )
        )
    return out


def _header_loc(sources: Sources, rel: str, needle: str) -> SourceLoc:
    """The header's line that declares ``needle``, read from the checkout or the wheel."""
    candidates = [sources.ctx.checkout / rel]
    torch_dir = sources.ctx.checkout / "torch"
    candidates.append(torch_dir.resolve() / "include" / rel)
    for path in candidates:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, text in enumerate(lines, 1):
            if needle in text:
                return sources.file(rel, number)
    return sources.file(rel, None)


def _hints(top: list[optree.Node], all_ops: list[optree.Node], total_ns: int) -> list[str]:
    hints = []
    backward = any(n.is_engine for n in all_ops)
    recorded = sum(n.ns for n in top if n.seq >= 0 and not n.is_engine)
    if total_ns and not backward and recorded / total_ns >= 0.5:
        share = round(100 * recorded / total_ns)
        hints.append(
            f"{share}% of the op time went to ops that recorded autograd history (a grad_fn "
            "for backward), but backward never ran: if these tensors need no gradients, "
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


def _notes(answer: dict[str, Any], sources: Sources, program: launch.Program) -> list[str]:
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
        "Kernels that ran are replayed from the live dispatch table and each input's dispatch "
        "key set; modes, autocast, inference_mode and tensor subclasses are not modelled."
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
