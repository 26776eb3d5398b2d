"""The Python entry points of an op (``torch.trunc``, ``Tensor.trunc_``): where each is
defined (Python) or which generated binding it is (a builtin), and the aten ops a call
on meta tensors reached."""

from __future__ import annotations

from onboard.workflows.opsource.anatomy import EntryPoint
from onboard.workflows.opsource.native_yaml import NATIVE_FUNCTIONS
from onboard.workflows.opsource.paths import SourceMap
from onboard.workflows.where.names import op_name
from onboard.workflows.where.resolve import ResolvedOp

# The Python bindings of torch.X / Tensor.X are generated from the yaml by
# tools/autograd/gen_python_functions.py into these (not in git).
BINDINGS = {
    "torch": "torch/csrc/autograd/generated/python_torch_functions_*.cpp",
    "Tensor": "torch/csrc/autograd/generated/python_variable_methods.cpp",
    "nn": "torch/csrc/autograd/generated/python_nn_functions.cpp",
}


def entry_points(op: ResolvedOp, smap: SourceMap) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in op.entries:
        if not entry.get("exists") or entry["name"] in seen:
            continue
        seen.add(entry["name"])
        source = entry.get("source")
        found.append(
            EntryPoint(
                name=entry["name"],
                kind=entry.get("kind", ""),
                source=smap.map(source["path"], source["line"]) if source else None,
                binding=binding(entry["name"], entry.get("kind", "")),
                top_ops=tuple(entry.get("top_ops", [])),
                dispatched=tuple(entry.get("dispatched", [])),
                call_error=entry.get("call_error"),
            )
        )
    return found


def decomposes_to(op: ResolvedOp) -> list[str]:
    """For a Python name: the ops its call on meta tensors ran other than the op's own
    (``linear`` runs as ``t`` and ``addmm``)."""
    entry = op.entries[0]
    own = {f"aten.{op_name(f['name'])}." for f in op.functions}
    return [d for d in entry.get("dispatched", []) if not d.startswith(tuple(own))]


def binding(name: str, kind: str) -> str | None:
    """The generated C++ function a builtin entry point is, and the file it is in."""
    if kind not in ("builtin_function_or_method", "method_descriptor"):
        return None
    if name.startswith("torch.Tensor."):
        where = BINDINGS["Tensor"]
    elif name.startswith(("torch.nn.functional.", "torch._C._nn.")):
        where = BINDINGS["nn"]
    else:
        where = BINDINGS["torch"]
    short = name.rsplit(".", 1)[-1]
    return f"THPVariable_{short} in {where}, generated from {NATIVE_FUNCTIONS}"
