# Runs INSIDE the workspace's interpreter via `python -c`: reads the installed torch's
# OpInfo database (torch/testing/_internal/common_methods_invocations.py: `op_db`
# and the lists the OpInfo-driven test files take from it) and answers, per entry,
# what `onboard tests` needs to map an ATen op to the tests that cover it. Importing
# that module needs numpy and expecttest besides torch; without them the answer
# says which import failed.
import sys

import onboard_answer

try:
    import torch
    import torch.testing._internal.common_methods_invocations as cmi
except Exception as exc:  # noqa: BLE001 - the parent says what was missing
    onboard_answer.finish({"error": f"{type(exc).__name__}: {exc}", "entries": []})

# The lists test files take their ops from (each test file's `@ops(...)`).
LISTS = (
    "unary_ufuncs",
    "binary_ufuncs",
    "reduction_ops",
    "spectral_funcs",
    "shape_funcs",
    "python_ref_db",
)
members = {name: {id(op) for op in getattr(cmi, name, ())} for name in LISTS}
# python_ref_db's entries are the refs of op_db entries: `torch_opinfo_name` names them.
ref_targets = {getattr(ref, "torch_opinfo_name", None) for ref in getattr(cmi, "python_ref_db", ())}
entries = []
for op in cmi.op_db:
    lists = [name for name in LISTS if id(op) in members[name]]
    if op.name in ref_targets:
        lists.append("python_ref_db")
    entries.append(
        {
            "name": op.name,
            "variant": op.variant_test_name or "",
            "aten_name": op.aten_name or "",
            "kind": type(op).__name__,
            "aliases": [a.name for a in (op.aliases or ())],
            "autograd": bool(op.supports_autograd),
            "forward_ad": bool(op.supports_forward_ad),
            "lists": sorted(set(lists)),
        }
    )
onboard_answer.finish(
    {"torch": torch.__version__, "python": sys.version.split()[0], "entries": entries}
)
