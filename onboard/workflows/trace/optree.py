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
from dataclasses import asdict, dataclass, field
from typing import Any

from onboard.workflows.trace.dispatch import Kernel, TableEntry, Walk, walk

# The autograd engine's own events (backward), named after Node classes, not ops.
_ENGINE = ("autograd::engine::evaluate_function: ", "torch::autograd::")


@dataclass(slots=True)
class Allocation:
    bytes: int
    device: str
    allocated: int  # what the allocator had handed out after this call
    reserved: int  # what it held from the system (the CUDA caching allocator's cache)


@dataclass(slots=True)
class Node:
    kind: str  # call / op
    label: str  # aten::zeros, torch.zeros, step
    path: str | None = None
    line: int | None = None
    torch_path: str | None = None  # for a call: the torch/*.py line that made it
    torch_line: int | None = None
    ns: int = 0
    seq: int = -1  # the autograd sequence number: >= 0 when the op recorded a grad_fn
    inputs: list[str] = field(default_factory=list)
    kernels: tuple[Kernel, ...] = ()
    allocations: list[Allocation] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    count: int = 1  # how many identical subtrees this node stands for
    shape: int = -1  # set by fold: equal for subtrees that fold together (not times or counts)

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

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "label": self.label, "count": self.count}
        if self.kind == "op":
            data.update(
                ns=self.ns,
                self_ns=self.self_ns,
                inputs=self.inputs,
                recorded_grad_fn=self.seq >= 0,
                kernels=[k.to_json() for k in self.kernels],
                allocated_bytes=self.allocated_bytes,
                allocations=[asdict(a) for a in self.allocations],
            )
        else:
            data.update(path=self.path, line=self.line)
            if self.torch_path:
                data.update(torch_path=self.torch_path, torch_line=self.torch_line)
        data["children"] = [c.to_json() for c in self.children]
        return data


@dataclass
class Dispatch:
    """What the replayed dispatcher walk needs from the child's answer."""

    tables: dict[str, dict[str, TableEntry]]
    keysets: dict[str, list[str]]
    excluded: frozenset[str]
    # a loop calls the same few ops with the same key sets thousands of times
    _walks: dict[tuple[str, str, frozenset[str], str], Walk] = field(default_factory=dict)

    @property
    def backends(self) -> frozenset[str]:
        return frozenset(keys[-1] for combo, keys in self.keysets.items() if combo and keys)

    def kernels(self, op: str, combo: str, excluded: frozenset[str], made_on: str) -> Walk:
        key = (op, combo, excluded, made_on)
        if key not in self._walks:
            table = self.tables.get(op)
            keys = self.keysets.get(combo)
            self._walks[key] = (
                walk(table, keys, excluded, backends=self.backends, made_on=made_on)
                if table and keys is not None
                else Walk((), excluded)
            )
        return self._walks[key]


def _backend_key(device: str, keysets: dict[str, list[str]]) -> str:
    keys = keysets.get(f"{device}/strided") or []
    return keys[-1] if keys else "CPU"


def build(raw: list[dict[str, Any]], dispatch: Dispatch) -> list[Node]:
    return _build(raw, dispatch, dispatch.excluded, [])


def _build(
    raw: Iterable[dict[str, Any]],
    dispatch: Dispatch,
    excluded: frozenset[str],
    out: list[Node],
) -> list[Node]:
    """The child's nodes as Nodes, appended to ``out`` (a loop, not generators: a
    trace holds tens of thousands of them)."""
    for item in raw:
        kind = item["t"]
        if kind == "alloc":
            continue  # folded into its op below
        children = item.get("children", ())
        if kind == "op":
            op = item["name"] + (f".{item['overload']}" if item.get("overload") else "")
            # where BackendSelect sends a factory call: the device of the memory it got
            made_on = (
                _backend_key(_first_device(item) or "cpu", dispatch.keysets)
                if "BackendSelect" in dispatch.tables.get(op, ())
                else "CPU"
            )
            ran = dispatch.kernels(op, item.get("keys", ""), excluded, made_on)
            node = Node(
                "op",
                op,
                ns=int(item.get("ns") or 0),
                seq=int(item.get("seq", -1)),
                inputs=list(item.get("inputs", ())),  # `3x4 float32`, as the child wrote them
                kernels=ran.kernels,
                allocations=[
                    Allocation(a["bytes"], a["device"], a["allocated"], a["reserved"])
                    for a in children
                    if a["t"] == "alloc"
                ],
            )
            _build(children, dispatch, ran.excluded_below, node.children)
            out.append(node)
        elif kind == "call":
            node = Node(
                "call",
                _api_name(item.get("module", ""), item.get("api", "")),
                path=item.get("path"),
                line=item.get("line"),
                torch_path=item.get("torch_path") or None,
                torch_line=item.get("torch_line") or None,
            )
            _build(children, dispatch, excluded, node.children)
            out.append(node)
        else:  # anything else holds ops at most: show those
            _build(children, dispatch, excluded, out)
    return out


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
            (n.kind, n.label, n.path, n.line, tuple(n.inputs), tuple(c.shape for c in n.children)),
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
    """Cut ops nested deeper than ``depth`` (1: only the ops entered from Python)
    and keep only the subtrees holding an op whose name matches ``pattern``."""
    out = []
    for node in nodes:
        if node.is_op and depth is not None and depth <= 0:
            continue
        child_depth = depth - 1 if depth is not None and node.is_op else depth
        matches = pattern is None or (node.is_op and bool(pattern.search(node.label)))
        children = prune(node.children, depth=child_depth, pattern=None if matches else pattern)
        if matches or children:
            node.children = children
            out.append(node)
    return out
