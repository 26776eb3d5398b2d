"""The op tree of one run: the child's profiler events as nested calls.

Two kinds of node: ``call`` (an outermost torch call from Python: the line of
the user's program that made it and torch's own Python line below it, if
any) and ``op`` (one dispatcher entry: ``aten::empty.memory_format``, with
the kernels it ran and the memory it was handed). Repeated subtrees fold into one node
with a count; ``--depth`` and ``--filter`` cut what is shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec
from onboard.workflows.trace.dispatch import AutogradKernel, Kernel, TableEntry, Walk, walk
from onboard.workflows.trace.guards import CallSite, excluded_at_call

# The autograd engine's own events (backward), named after Node classes, not ops.
_ENGINE = ("autograd::engine::evaluate_function: ", "torch::autograd::")


@dataclass(slots=True)
class Allocation:
    bytes: int
    device: str
    allocated: int  # what the allocator had handed out after this call
    reserved: int  # what it held from the system (the CUDA caching allocator's cache)


_BY_KIND = spec(omit=True)  # Node: a key of its kind's, in json_extra


@dataclass(slots=True)
class Node:
    # In JSON: kind and label, then (json_extra) the keys of its kind: an op's times,
    # inputs and kernels, a call's place; the other fields are left to json_extra.
    kind: str  # call / op
    label: str  # aten::zeros, torch.zeros, step
    path: str | None = field(default=None, metadata=_BY_KIND)
    line: int | None = field(default=None, metadata=_BY_KIND)
    # for a call: the torch/*.py line that made it
    torch_path: str | None = field(default=None, metadata=_BY_KIND)
    torch_line: int | None = field(default=None, metadata=_BY_KIND)
    ns: int = field(default=0, metadata=_BY_KIND)
    # the profiler's autograd sequence number: >= 0 when an autograd key was in the
    # call's key set and grad mode was on (not "a grad_fn was made")
    seq: int = field(default=-1, metadata=_BY_KIND)
    # how the keys it had excluded are known (guards.py)
    keys_basis: str = field(default="replayed", metadata=_BY_KIND)
    # for a call: its output had a grad_fn (autograd history recorded)
    graph: bool = field(default=False, metadata=_BY_KIND)
    inputs: list[str] = field(default_factory=list, metadata=_BY_KIND)
    kernels: tuple[Kernel, ...] = field(default=(), metadata=_BY_KIND)
    allocations: list[Allocation] = field(default_factory=list, metadata=_BY_KIND)
    children: list[Node] = field(default_factory=list, metadata=_BY_KIND)
    # how many identical subtrees this node stands for
    count: int = field(default=1, metadata=_BY_KIND)
    # set by fold: equal for subtrees that fold together (not times or counts)
    shape: int = field(default=-1, metadata=spec(omit=True))

    @property
    def is_op(self) -> bool:
        return self.kind == "op"

    @property
    def is_engine(self) -> bool:
        return self.kind == "op" and self.label.startswith(_ENGINE)

    @property
    def self_ns(self) -> int:
        return max(0, self.ns - sum(c.ns for c in self.children if c.is_op))

    @property
    def allocated_bytes(self) -> int:
        return sum(a.bytes for a in self.allocations if a.bytes > 0)

    def json_extra(self) -> dict[str, Any]:
        data: dict[str, Any] = {"count": self.count}
        if self.kind == "op":
            data.update(
                ns=self.ns,
                self_ns=self.self_ns,
                inputs=self.inputs,
                sequence_nr=self.seq,
                kernels=self.kernels,
                kernels_basis=self.keys_basis,
                allocated_bytes=self.allocated_bytes,
                allocations=self.allocations,
            )
        else:
            data.update(path=self.path, line=self.line, recorded_graph=self.graph)
            if self.torch_path:
                data.update(torch_path=self.torch_path, torch_line=self.torch_line)
        data["children"] = self.children
        return data


@dataclass
class Dispatch:
    """What the replayed dispatcher walk needs from the child's answer."""

    tables: dict[str, dict[str, TableEntry]]
    keysets: dict[str, list[str]]  # "cpu/strided|STATE" -> the call's keys, highest first
    grad: dict[str, bool]  # dispatch state -> grad mode was on
    backends: dict[str, str]  # device -> its backend key (cpu -> CPU)
    autograd: dict[str, AutogradKernel | None]  # hand-written autograd kernels, as seen
    factories: dict[str, bool]  # factories whose Python binding takes a guard
    # a loop calls the same few ops with the same key sets thousands of times
    _walks: dict[tuple[str, str, frozenset[str], str], Walk] = field(default_factory=dict)

    def kernels(self, op: str, keys: str, excluded: frozenset[str], made_on: str) -> Walk:
        key = (op, keys, excluded, made_on)
        if key not in self._walks:
            table = self.tables.get(op)
            found = self.keysets.get(keys)
            self._walks[key] = (
                walk(
                    table,
                    found,
                    excluded,
                    backends=frozenset(self.backends.values()),
                    made_on=made_on,
                    autograd=self.autograd.get(op),
                )
                if table and found is not None
                else Walk((), excluded)
            )
        return self._walks[key]

    def excluded(
        self, op: str, keys: str, excluded: frozenset[str], seq: int, site: CallSite
    ) -> tuple[frozenset[str], str]:
        table = self.tables.get(op)
        found = self.keysets.get(keys)
        if not table or found is None:
            return excluded, "replayed"
        return excluded_at_call(op, table, found, excluded, seq, site, self.factories)


_OUTSIDE = CallSite(api=None, grad_seen=False, top=False)


def build(raw: list[dict[str, Any]], dispatch: Dispatch) -> list[Node]:
    return _build(raw, dispatch, frozenset(), [], _OUTSIDE, None)


def _build(
    raw: Iterable[dict[str, Any]],
    dispatch: Dispatch,
    excluded: frozenset[str],
    out: list[Node],
    site: CallSite,
    owner: Node | None,
) -> list[Node]:
    """The child's nodes as Nodes, appended to ``out`` (a loop, not generators: a
    trace holds tens of thousands of them). ``owner`` is the innermost op around them."""
    for item in raw:
        kind = item["t"]
        if kind == "alloc":
            # An op's own allocations are read with it (below). One in a call that runs
            # inside an op (the Python number `x * 2` wraps into a tensor inside a custom
            # autograd.Function's forward) is that op's; outside every op it is counted
            # by allocations_outside_ops.
            if owner is not None:
                owner.allocations.append(
                    Allocation(item["bytes"], item["device"], item["allocated"], item["reserved"])
                )
            continue
        children = item.get("children", ())
        if kind == "op":
            op = item["name"] + (f".{item['overload']}" if item.get("overload") else "")
            seq = int(item.get("seq", -1))
            keys = item.get("keys", "")
            # where BackendSelect sends a factory call: the device of the memory it got
            made_on = (
                dispatch.backends.get(_first_device(item) or "cpu", "CPU")
                if "BackendSelect" in dispatch.tables.get(op, ())
                else "CPU"
            )
            at_call, basis = dispatch.excluded(op, keys, excluded, seq, site)
            ran = dispatch.kernels(op, keys, at_call, made_on)
            node = Node(
                "op",
                op,
                ns=int(item.get("ns") or 0),
                seq=seq,
                keys_basis=basis,
                inputs=list(item.get("inputs", ())),  # `3x4 float32`, as the child wrote them
                kernels=ran.kernels,
            )
            # Below the autograd engine grad mode is what backward was asked for: the
            # sequence numbers there say nothing about guards.
            below = CallSite(
                site.api, site.grad_seen and not node.is_engine and _is_aten(op), top=False
            )
            _build(children, dispatch, ran.excluded_below, node.children, below, node)
            out.append(node)
        elif kind == "call":
            node = Node(
                "call",
                _api_name(item.get("module", ""), item.get("api", "")),
                path=item.get("path"),
                line=item.get("line"),
                torch_path=item.get("torch_path") or None,
                torch_line=item.get("torch_line") or None,
                graph=bool(item.get("graph")),
            )
            grad = dispatch.grad.get(str(item.get("state")), False)
            # Python code in the call (F.relu, nn.init) may switch grad mode off before
            # the ops it makes; a C++ binding cannot.
            inner = CallSite(node.label, grad and not item.get("python", True), top=True)
            _build(children, dispatch, excluded, node.children, inner, owner)
            out.append(node)
        else:  # anything else holds ops at most: show those
            _build(children, dispatch, excluded, out, site, owner)
    return out


def allocations_outside_ops(raw: list[dict[str, Any]]) -> list[Allocation]:
    """The allocations no op made: C++ glue around the ops, such as a Python number
    wrapped into a 0-dim tensor while a call's arguments were parsed."""
    found: list[Allocation] = []
    pending = list(raw)
    while pending:
        item = pending.pop()
        if item["t"] == "alloc":
            found.append(
                Allocation(item["bytes"], item["device"], item["allocated"], item["reserved"])
            )
        elif item["t"] != "op":
            pending.extend(item.get("children", ()))
    return found


def _is_aten(op: str) -> bool:
    return op.startswith("aten::")


def _first_device(item: dict[str, Any]) -> str | None:
    for child in item.get("children", ()):
        if child["t"] == "alloc":
            return str(child["device"])
        found = _first_device(child)
        if found:
            return found
    return None


def _api_name(module: str, api: str) -> str:
    # TorchFunctionMode hands over the C++ binding's Python name: the class they live on.
    for prefix, public in (
        ("_VariableFunctionsClass.", "torch."),
        ("TensorBase.", "Tensor."),
        ("_TensorBase.", "Tensor."),
    ):
        if api.startswith(prefix):
            return public + api[len(prefix) :]
    if module and not api.startswith(module):
        if module == "torch.nn.functional":
            module = "F"
        return f"{module}.{api}"
    return api


# -- folding -----------------------------------------------------------------

# A loop body at a script's top level is a run of calls; up to this many fold together.
_MAX_PERIOD = 64


def fold(nodes: list[Node]) -> list[Node]:
    """Identical neighbouring subtrees, or repeated runs of up to 64 of them (a loop's
    body), become one node (one run) with a count; times add up."""
    return _fold(nodes, {})


def _fold(nodes: list[Node], shapes: dict[tuple[Any, ...], int]) -> list[Node]:
    for node in nodes:
        node.children = _fold(node.children, shapes)
    while True:
        folded = _fold_runs(nodes, shapes)
        if len(folded) == len(nodes):
            return folded
        nodes = folded  # a run inside a folded loop body (x6 per step) folds on the next pass


def _fold_runs(nodes: list[Node], shapes: dict[tuple[Any, ...], int]) -> list[Node]:
    # Each subtree's shape is numbered once (its children's numbers are part of it), so
    # comparing two subtrees is comparing two ints, not two deep walks.
    ids = [
        shapes.setdefault(
            (
                n.kind,
                n.label,
                n.path,
                n.line,
                tuple(n.inputs),
                tuple(k.key for k in n.kernels),
                n.graph,
                tuple(c.shape for c in n.children),
            ),
            len(shapes),
        )
        for n in nodes
    ]
    for node, shape in zip(nodes, ids, strict=True):
        node.shape = shape
    out: list[Node] = []
    i = 0
    while i < len(ids):
        best = (1, 1)  # (period, repeats)
        for period in range(1, min(_MAX_PERIOD, (len(ids) - i) // 2) + 1):
            if ids[i + period] != ids[i]:
                continue  # a run of this length cannot repeat from here
            run = ids[i : i + period]
            reps = 1
            while ids[i + reps * period : i + (reps + 1) * period] == run:
                reps += 1
            if reps > 1 and reps * period > best[0] * best[1]:
                best = (period, reps)
        period, reps = best
        if reps == 1:
            out.append(nodes[i])
            i += 1
            continue
        for offset in range(period):
            out.append(_merge([nodes[i + r * period + offset] for r in range(reps)]))
        i += period * reps
    return out


def _merge(group: list[Node]) -> Node:
    first = group[0]
    first.count = sum(n.count for n in group)
    first.ns = sum(n.ns for n in group)
    first.allocations = [a for n in group for a in n.allocations]
    merged_children = [
        _merge(list(kids)) for kids in zip(*(n.children for n in group), strict=True)
    ]
    first.children = merged_children
    return first


# -- walking -----------------------------------------------------------------


def ops(nodes: Iterable[Node]) -> Iterator[Node]:
    for node in nodes:
        if node.is_op:
            yield node
        yield from ops(node.children)


def top_ops(nodes: Iterable[Node]) -> Iterator[Node]:
    """The ops entered from Python (not called by another op)."""
    for node in nodes:
        if node.is_op:
            yield node
        else:
            yield from top_ops(node.children)


def prune(nodes: list[Node], *, depth: int | None, pattern: re.Pattern[str] | None) -> list[Node]:
    """What --depth and --filter show. Without a pattern: ops nested at most ``depth``
    deep (1: only the ops entered from Python). With one: the ops whose name matches,
    under the calls and ops that led to them, each with what it called down to
    ``depth`` levels counted from the match (1: the match alone)."""
    if pattern is None:
        return _cut(nodes, depth)
    out = []
    for node in nodes:
        if node.is_op and pattern.search(node.label):
            node.children = _cut(node.children, None if depth is None else depth - 1)
            out.append(node)
            continue
        kept = prune(node.children, depth=depth, pattern=pattern)
        if kept:
            node.children = kept
            out.append(node)
    return out


def _cut(nodes: list[Node], depth: int | None) -> list[Node]:
    out = []
    for node in nodes:
        if node.is_op and depth is not None and depth <= 0:
            continue
        node.children = _cut(
            node.children, depth - 1 if depth is not None and node.is_op else depth
        )
        out.append(node)
    return out
