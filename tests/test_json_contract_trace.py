"""The `--json` keys of `onboard trace` and `onboard graph` (onboard/workflows/trace/), through
onboard/jsonable.py: each expected key is worked out here from the values the test gives,
so a renamed, dropped or reshaped key fails."""

from __future__ import annotations

import json
from typing import Any

from onboard.jsonable import to_json
from onboard.proc import Leftover
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.trace.autograd_graph import GraphNode, GraphResult
from onboard.workflows.trace.dispatch import Kernel
from onboard.workflows.trace.launch import Program
from onboard.workflows.trace.locations import OpPlaces
from onboard.workflows.trace.op_summary import KernelPlace, OpSummary
from onboard.workflows.trace.optree import Allocation, Node
from onboard.workflows.trace.profile import MemoryUse, TraceResult

PROGRAM = Program(
    "script", "repro.py", ("--n", "3"), "/usr/bin/python3", ("-u",), "python repro.py --n 3"
)


def _head(**extra: Any) -> dict[str, Any]:
    return {
        "program": PROGRAM,
        "torch_version": "2.13.0",
        "commit": "f" * 40,
        "program_exit": 0,
        "error": None,
        "notes": ["a note"],
        "left_running": [Leftover(99, "sleep 300", "in its cgroup")],
        **extra,
    }


HEAD_JSON = {
    "program": {
        "kind": "script",
        "target": "repro.py",
        "args": ["--n", "3"],
        "python": "/usr/bin/python3",
        "command": "python repro.py --n 3",
    },
    "torch_version": "2.13.0",
    "commit": "f" * 40,
    "program_exit": 0,
    "program_error": None,
    "left_running": [{"pid": 99, "command": "sleep 300", "found": "in its cgroup"}],
}


def test_an_op_and_a_call_have_the_keys_of_their_kind() -> None:
    kernel = Kernel("CPU", "kernel", "aten/src/ATen/native/Fill.cpp", 12)
    child = Node("op", "aten::fill_", ns=400, count=1)
    op = Node(
        "op", "aten::zeros", ns=1000, seq=3, inputs=["[3, 4]"], kernels=(kernel,),
        allocations=[Allocation(48, "cpu", 48, 0), Allocation(-48, "cpu", 0, 0)], children=[child],
    )  # fmt: skip
    call = Node(
        "call", "torch.zeros", "repro.py", 5, "torch/functional.py", 9, graph=True, children=[op]
    )
    got = to_json(call)
    assert got == {
        "kind": "call",
        "label": "torch.zeros",
        "count": 1,
        "path": "repro.py",
        "line": 5,
        "recorded_graph": True,
        "torch_path": "torch/functional.py",
        "torch_line": 9,
        "children": [
            {
                "kind": "op",
                "label": "aten::zeros",
                "count": 1,
                "ns": 1000,
                "self_ns": 1000 - 400,  # less its child op's time
                "inputs": ["[3, 4]"],
                "sequence_nr": 3,
                "kernels": [{"key": "CPU", "kind": "kernel", "path": kernel.path, "line": 12}],
                "kernels_basis": "replayed",
                "allocated_bytes": 48,  # the freeing (negative) one not counted
                "allocations": [
                    {"bytes": 48, "device": "cpu", "allocated": 48, "reserved": 0},
                    {"bytes": -48, "device": "cpu", "allocated": 0, "reserved": 0},
                ],
                "children": [to_json(child)],
            }
        ],
    }
    assert "torch_path" not in to_json(Node("call", "f", "repro.py", 1))


def test_a_trace_answer_sums_up_its_ops() -> None:
    yaml = SourceLoc("aten/src/ATen/native/native_functions.yaml", 100)
    header = SourceLoc("c10/core/CPUAllocator.h", 20)
    summary = OpSummary(
        "aten::zeros",
        2,
        3000,
        1000,
        [KernelPlace("CPU", "kernel", None, 2)],
        OpPlaces("aten::zeros", yaml),
    )
    result = TraceResult(
        **_head(),
        tree_label="profiler",
        run_seconds=1.234567,
        tree=[],
        ops={"aten::zeros": summary},
        total_calls=2,
        distinct_ops=1,
        total_ns=3000,
        slowest=["aten::zeros"],
        memory=[MemoryUse("cpu", "CPUAllocator", header, 2, 96, 96, 0, 1, 48)],
        cuda=None,
    )
    got = to_json(result)
    assert got == {
        **HEAD_JSON,
        "tree_source": "profiler",
        "run_seconds": round(1.234567, 4),
        "tree": [],
        "ops": {
            "aten::zeros": {
                "op": "aten::zeros",
                "calls": 2,
                "ns": 3000,
                "self_ns": 1000,
                "kernels_ran": [{"key": "CPU", "kind": "kernel", "registered": None, "calls": 2}],
                "source": {
                    "op": "aten::zeros",
                    "yaml": to_json(yaml),
                    "kernels": [],
                    "kernels_not_found": {},
                },
            }
        },
        "memory": [
            {
                "device": "cpu",
                "allocator": "CPUAllocator",
                "header": to_json(header),
                "allocations": 2,
                "bytes": 96,
                "peak_allocated": 96,
                "peak_reserved": 0,
                "outside_ops": {"allocations": 1, "bytes": 48},
            }
        ],
        "cuda": None,
        "hints": [],
        "summary": {"op_calls": 2, "distinct_ops": 1, "op_ns": 3000, "slowest": ["aten::zeros"]},
        "ok": True,
        "notes": ["a note"],
    }
    json.dumps(got)


def test_a_graph_names_each_node_its_aten_op() -> None:
    derivative = SourceLoc("tools/autograd/derivatives.yaml", 50)
    mul = GraphNode(
        0,
        "MulBackward0",
        "mul.Tensor",
        derivative,
        {"self": "grad * other"},
        None,
        [(1, 0), (None, 0)],
        [],
        None,
    )
    leaf = GraphNode(
        1, "AccumulateGrad", None, None, {}, None, [], [], {"name": "x"}, truncated=True
    )
    result = GraphResult(
        **_head(program_exit=1),
        roots=["y"],
        tensors={},
        nodes=[mul, leaf],
        dot="digraph {}",
        dot_only=True,
    )
    got = to_json(result)
    assert got["nodes"] == [
        {
            "id": 0,
            "class": "MulBackward0",
            "op": "aten::mul.Tensor",
            "derivative": to_json(derivative),
            "formulas": {"self": "grad * other"},
            "generated_class": None,
            "next": [{"node": 1, "input_nr": 0}, {"node": None, "input_nr": 0}],
            "saved": [],
            "variable": None,
            "truncated": False,
        },
        {
            "id": 1,
            "class": "AccumulateGrad",
            "op": None,
            "derivative": None,
            "formulas": {},
            "generated_class": None,
            "next": [],
            "saved": [],
            "variable": {"name": "x"},
            "truncated": True,
        },
    ]
    assert {k: got[k] for k in HEAD_JSON} == {**HEAD_JSON, "program_exit": 1}
    assert got["ok"] is False and got["notes"] == ["a note"]  # the program failed
    assert (got["roots"], got["dot"], got["svg"]) == (["y"], "digraph {}", None)
    assert "dot_only" not in got and "output_tail" not in got
