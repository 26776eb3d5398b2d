"""`onboard graph` over OpInfo's differentiable ops (the wheel's
torch/testing/_internal/common_methods_invocations.py: op_db, `supports_autograd`),
before and after backward(), against an independent walk of `grad_fn.next_functions`
and the `_saved_*` attributes in the test's own child process.

Each batch is one program that runs OpInfo samples (float64, requires_grad=True) and
keeps each sample's outputs in module globals; with the argument `backward` it then
calls backward() on each sample's outputs. graph runs it twice (as is, and with
`backward`); the oracle runs it once, walks, calls the same backward, and walks again.
Nodes are compared in the order a breadth-first walk from the globals meets them:
class, edges (next node and input_nr), the leaf's shape and dtype, and every saved
value (tensor: shape and dtype; freed by backward; other).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from onboard import proc
from onboard.workflows.trace import autograd_graph
from onboard.workflows.trace.autograd_graph import GraphRequest, graph

PY = sys.executable
SEED = 2026
FAST_SAMPLES = 40  # the normal suite's sample: the first sample of 40 seeded ops, one batch
SAMPLES_PER_OP = 2  # the slow sweep: the first samples of every differentiable op
BATCH = 120

_OPS = """\
import json
import torch
from torch.testing._internal.common_methods_invocations import op_db

ops = sorted(
    (o for o in op_db if o.supports_autograd
     and torch.float64 in o.supported_dtypes("cpu")
     and torch.float64 in o.supported_backward_dtypes("cpu")),
    key=lambda o: (o.name, o.variant_test_name),
)
print(json.dumps([[o.name, o.variant_test_name] for o in ops]))
"""

PROGRAM = """\
import sys
import torch
from torch.testing._internal.common_methods_invocations import op_db

CASES = {cases!r}
_by_name = {{(o.name, o.variant_test_name): o for o in op_db}}
_outputs = []


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _run(n, name, variant, k):
    op = _by_name[(name, variant)]
    torch.manual_seed(0)
    for i, sample in enumerate(op.sample_inputs("cpu", torch.float64, requires_grad=True)):
        if i == k:
            try:
                out = op(sample.input, *sample.args, **sample.kwargs)
            except Exception:
                return None
            kept = [t for t in _tensors(out) if t.grad_fn is not None]
            for j, t in enumerate(kept):
                globals()[f"s{{n}}_{{j}}"] = t
            return kept
    return None  # the op has fewer samples


for _n, _case in enumerate(CASES):
    _outputs.append(_run(_n, *_case))


def run_backward():
    for outs in _outputs:
        if outs:
            try:
                torch.autograd.backward(outs, [torch.ones_like(t) for t in outs])
            except Exception:
                pass


if sys.argv[1:] == ["backward"]:
    run_backward()
"""

# The oracle: the program's module globals, walked breadth-first from each tensor with
# a grad_fn (in the globals' order), before and after run_backward().
_ORACLE = """\
import json, sys
import torch

path = sys.argv[1]
space = {"__name__": "__main__", "__file__": path}
sys.argv = [path]
exec(compile(open(path).read(), path, "exec"), space)
FREED = "Trying to backward through the graph a second time"


def described(name, value):
    if isinstance(value, torch.Tensor):
        return [[name, "tensor", list(value.shape), str(value.dtype).replace("torch.", "")]]
    if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
        return [e for i, v in enumerate(value) for e in described(f"{name}[{i}]", v)]
    return [[name, "other", None, None]]


def saved(fn):
    out = []
    for attr in sorted(dir(fn)):
        if not attr.startswith("_saved_"):
            continue
        try:
            value = getattr(fn, attr)
        except RuntimeError as exc:
            out.append([attr[7:], "freed" if FREED in str(exc) else "error", None, None])
        else:
            if hasattr(fn, "_raw" + attr) and isinstance(value, (tuple, list)):
                # a saved TensorList (List[Optional[Tensor]]): one SavedVariable each
                for i, v in enumerate(value):
                    out.extend(described(f"{attr[7:]}[{i}]", v))
            else:
                out.extend(described(attr[7:], value))
    if isinstance(fn, torch.autograd.function.BackwardCFunction):
        try:
            for i, v in enumerate(fn.saved_tensors):
                out.extend(described(f"saved_tensors[{i}]", v))
        except RuntimeError as exc:
            out.append(["saved_tensors", "freed" if FREED in str(exc) else "error", None, None])
        for attr, value in sorted(vars(fn).items()):
            out.extend(described("ctx." + attr, value))
    return out


def walk():
    order, nodes, queue = {}, [], []

    def number(fn):
        if id(fn) not in order:
            order[id(fn)] = len(order)
            queue.append(fn)
        return order[id(fn)]

    roots = [k for k, v in space.items() if isinstance(v, torch.Tensor) and v.grad_fn]
    for k in roots:
        number(space[k].grad_fn)
    while queue:
        fn = queue.pop(0)
        var = getattr(fn, "variable", None)
        nodes.append({
            "cls": type(fn).__name__,
            "next": [[None if n is None else number(n), nr] for n, nr in fn.next_functions],
            "variable": None if var is None
            else [list(var.shape), str(var.dtype).replace("torch.", "")],
            "saved": saved(fn),
        })
    return {"roots": roots, "nodes": nodes}


before = walk()
space["run_backward"]()
ran = [o for o in space["_outputs"] if o is not None]
after = walk()
graphs = sum(map(bool, ran))
print(json.dumps({"before": before, "after": after, "ran": len(ran), "with_graph": graphs}))
"""


def _mine(result: autograd_graph.GraphResult) -> dict[str, Any]:
    """graph's answer in the oracle's terms."""
    nodes = []
    for n in result.nodes:
        saved = []
        for s in n.saved:
            if "tensor" in s:
                saved.append([s["name"], "tensor", s["tensor"]["shape"], s["tensor"]["dtype"]])
            elif s.get("freed"):
                saved.append([s["name"], "freed", None, None])
            else:
                saved.append([s["name"], "other", None, None])
        var = n.variable
        nodes.append(
            {
                "cls": n.cls,
                "next": [[t, nr] for t, nr in n.next],
                "variable": None if var is None else [var["shape"], var["dtype"]],
                "saved": saved,
            }
        )
    return {"roots": result.roots, "nodes": nodes}


def _ops() -> list[list[str]]:
    done = proc.run([PY, "-c", _OPS], timeout=600, what="listing OpInfo's differentiable ops")
    return list(json.loads(done.stdout.splitlines()[-1]))


def _compare(cases: list[list[Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sweep checks the walk, not the cut at 300 nodes (a batch holds more).
    monkeypatch.setattr(autograd_graph, "MAX_NODES", 100_000)
    totals = {
        "samples_run": 0,
        "with_graph": 0,
        "nodes": 0,
        "nodes_exact": 0,
        "saved": 0,
        "saved_exact": 0,
        "edges": 0,
    }
    wrong: list[Any] = []
    for start in range(0, len(cases), BATCH):
        batch = cases[start : start + BATCH]
        script = tmp_path / f"batch_{start}.py"
        script.write_text(PROGRAM.format(cases=[tuple(c) for c in batch]))
        done = proc.run([PY, "-c", _ORACLE, str(script)], timeout=900, what="the graph oracle")
        truth = json.loads(done.stdout.splitlines()[-1])
        totals["samples_run"] += truth["ran"]
        totals["with_graph"] += truth["with_graph"]
        for state, argv in (("before", []), ("after", ["backward"])):
            mine = _mine(graph(GraphRequest(command=[PY, str(script), *argv], timeout=900)))
            want = truth[state]
            assert mine["roots"] == want["roots"], state
            assert len(mine["nodes"]) == len(want["nodes"]), state
            for i, (got, exp) in enumerate(zip(mine["nodes"], want["nodes"], strict=True)):
                totals["nodes"] += 1
                totals["edges"] += sum(1 for t, _nr in exp["next"] if t is not None)
                totals["saved"] += len(exp["saved"])
                totals["saved_exact"] += len(
                    [s for s in exp["saved"] if s in got["saved"]] if got != exp else exp["saved"]
                )
                if got == exp:
                    totals["nodes_exact"] += 1
                else:
                    wrong.append((state, script.name, i, exp, got))
    ops = {(c[0], c[1]) for c in cases}
    print(f"graph sweep: {len(ops)} ops, {len(cases)} samples, {totals}")
    assert not wrong, wrong[:5]


def test_graph_matches_the_walk_for_a_sample_of_opinfo_ops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ops = random.Random(SEED).sample(_ops(), FAST_SAMPLES)
    _compare([[name, variant, 0] for name, variant in sorted(ops)], tmp_path, monkeypatch)


@pytest.mark.slow
def test_graph_matches_the_walk_for_every_differentiable_opinfo_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ops = _ops()
    _compare([[*op, k] for op in ops for k in range(SAMPLES_PER_OP)], tmp_path, monkeypatch)
