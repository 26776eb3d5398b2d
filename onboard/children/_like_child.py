# Runs INSIDE the workspace's interpreter (`python _like_child.py OP KIND [edges]`):
# asks the installed torch how an existing pointwise op treats each dtype on CPU, so
# `onboard new-op --like OP` copies the behaviour the user actually has and practice
# mode knows which dtypes reach the op's kernel. With `edges`, also the op's results
# on float edge values (the practice test file keeps them). Run by path: it imports
# _oracle_checks.py beside it. Answers one JSON object (onboard_answer).
import sys
from typing import Any

import torch
from _oracle_checks import DTYPES, edge_inputs, literal
from onboard_answer import answer, finish

name, kind = sys.argv[1], sys.argv[2]
try:
    op = getattr(torch.ops.aten, name)
except (AttributeError, RuntimeError):  # in the checkout's yaml, not in this torch
    finish({"missing": True, "version": torch.__version__})
nargs = 1 if kind == "unary" else 2
dtypes: dict[str, dict[str, Any]] = {}
report: dict[str, Any] = {"dtypes": dtypes, "version": torch.__version__}
for dname in DTYPES:
    dtype = getattr(torch, dname)
    if dtype.is_floating_point:
        args = [torch.tensor([0.5, -1.25, 2.0, 3.5], dtype=dtype) for _ in range(nargs)]
    elif dtype.is_complex:
        args = [torch.tensor([0.5 - 1j, -1.25 + 2j], dtype=dtype) for _ in range(nargs)]
    elif dtype == torch.bool:
        args = [torch.tensor([True, False, True], dtype=dtype) for _ in range(nargs)]
    else:
        args = [torch.tensor([0, 3, 11, 100], dtype=dtype) for _ in range(nargs)]
        if dtype.is_signed:
            args = [torch.tensor([-7, -2, 0, 3, 11], dtype=dtype) for _ in range(nargs)]
    try:
        result = op(*args)
    except Exception as exc:  # noqa: BLE001 - "not implemented for 'Long'" is an answer
        dtypes[dname] = {
            "ok": False,
            "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
        }
        continue
    entry: dict[str, Any] = {"ok": True, "result_dtype": str(result.dtype).replace("torch.", "")}
    if not dtype.is_floating_point and not dtype.is_complex:
        entry["identity"] = bool(result.dtype == dtype and torch.equal(result, args[0]))
    dtypes[dname] = entry
if sys.argv[3:] == ["edges"]:
    edges: list[dict[str, Any]] = []
    for dname in ("float32", "float64"):
        if not dtypes[dname]["ok"]:
            continue
        inputs = edge_inputs(torch, getattr(torch, dname), kind)
        expected = op(*inputs)
        edges.append(
            {
                "dtype": dname,
                "inputs": [[literal(v) for v in x.tolist()] for x in inputs],
                "expected": [literal(v) for v in expected.tolist()],
            }
        )
    report["edges"] = edges
answer(report)
