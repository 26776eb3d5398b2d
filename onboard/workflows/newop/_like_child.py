# Runs INSIDE the workspace's interpreter (`python -c`): asks the installed torch how
# an existing pointwise op treats each dtype on CPU, so `onboard new-op --like OP`
# copies the behaviour the user actually has. Prints one JSON line after MARKER.
import json
import sys
from typing import Any

import torch

MARKER = "@@ONBOARD-LIKE@@"
name, kind = sys.argv[1], sys.argv[2]
op = getattr(torch.ops.aten, name)
nargs = 1 if kind == "unary" else 2
dtypes: dict[str, dict[str, Any]] = {}
report: dict[str, Any] = {"dtypes": dtypes}
for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64):
    if dtype.is_floating_point:
        args = [torch.tensor([0.5, -1.25, 2.0, 3.5], dtype=dtype) for _ in range(nargs)]
    else:
        args = [torch.tensor([-7, -2, 0, 3, 11], dtype=dtype) for _ in range(nargs)]
    try:
        result = op(*args)
    except Exception as exc:  # noqa: BLE001 - "not implemented for 'Long'" is an answer
        dtypes[str(dtype).replace("torch.", "")] = {
            "ok": False,
            "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
        }
        continue
    entry: dict[str, Any] = {"ok": True, "result_dtype": str(result.dtype).replace("torch.", "")}
    if not dtype.is_floating_point:
        entry["identity"] = bool(result.dtype == dtype and torch.equal(result, args[0]))
    dtypes[str(dtype).replace("torch.", "")] = entry
print(MARKER + json.dumps(report))
