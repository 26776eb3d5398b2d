# The body of `onboard graph`'s child, run after _launch_child.py (the module
# `onboard_launch`) in the user's interpreter: runs the program, then walks
# grad_fn / next_functions from the tensors it leaves in its module globals
# (or the ones named in the request) and writes the graph.
from __future__ import annotations

import contextlib

import torch
from onboard_answer import answer
from onboard_launch import REQUEST, run_user_program, torch_facts

status, namespace = run_user_program(lambda: None, lambda: None)
MAX_NODES = int(REQUEST.get("max_nodes", 300))


def _tensor(t):
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).replace("torch.", ""),
        "device": str(t.device),
    }


# Names for tensors: module globals, and the parameters of nn.Modules there.
names: dict[int, str] = {}
tensors: dict[str, torch.Tensor] = {}
for key, value in list(namespace.items()):
    if key.startswith("__"):
        continue
    if isinstance(value, torch.Tensor):
        tensors[key] = value
        names.setdefault(id(value), key)
    elif isinstance(value, torch.nn.Module):
        for pname, param in value.named_parameters():
            names.setdefault(id(param), f"{key}.{pname}")
data_ptrs: dict[int, list[str]] = {}
for key, t in tensors.items():
    with contextlib.suppress(Exception):  # sparse and other storage-less tensors
        data_ptrs.setdefault(t.untyped_storage().data_ptr(), []).append(key)

wanted = REQUEST.get("vars") or []
missing = [v for v in wanted if v not in tensors]
if wanted:
    roots = [(v, tensors[v]) for v in wanted if v in tensors]
else:
    roots = [(k, t) for k, t in tensors.items() if t.grad_fn is not None]

nodes: list[dict | None] = []
index: dict[int, int] = {}
queue: list = []


def _node_id(fn):
    if id(fn) in index:
        return index[id(fn)]
    index[id(fn)] = len(nodes)
    nodes.append(None)
    queue.append(fn)
    return index[id(fn)]


# What autograd says when a saved tensor was freed by backward (SavedVariable::unpack,
# torch/csrc/autograd/saved_variable.cpp: ERR_BACKWARD_TWICE).
_FREED = "Trying to backward through the graph a second time"


def _first_line(exc):
    return (str(exc).splitlines() or [type(exc).__name__])[0][:80]


def _hook_of(raw):
    """The unpack hook a saved_tensors_hooks pack hook left on a SavedVariable, as
    `module.qualname`; None when the tensor is kept as is."""
    hook = getattr(raw, "unpack_hook", None)
    if hook is None:
        return None
    return f"{getattr(hook, '__module__', '') or ''}.{getattr(hook, '__qualname__', '?')}"


def _hooked(name, hook):
    # Unpacking would call the hook: torch.utils.checkpoint's re-runs the program's
    # forward (torch/utils/checkpoint.py: _checkpoint_hook), so it is not read.
    if hook.startswith("torch.utils.checkpoint."):
        return {"name": name, "recomputed": "torch.utils.checkpoint", "hook": hook}
    return {"name": name, "packed_by": hook}


def _saved_value(name, read):
    try:
        value = read()
    except Exception as exc:  # freed after backward, or not readable
        text = _first_line(exc)
        if _FREED in str(exc):
            return {"name": name, "freed": True, "value": f"unavailable: {text}"}
        return {"name": name, "value": f"unavailable: {text}"}
    if isinstance(value, torch.Tensor):
        return {"name": name, "tensor": _tensor(value)}
    return {"name": name, "value": str(value)[:60]}


def _saved_variables(name, raw, read):
    """A SavedVariable (or a list of them, a saved TensorList) read only when no hook
    would run: one entry per tensor."""
    try:
        raws = raw()
    except Exception as exc:  # a list whose SavedVariables backward freed
        return [_saved_value(name, lambda exc=exc: _raise(exc))]
    if not isinstance(raws, (list, tuple)):
        hook = _hook_of(raws)
        return [_hooked(name, hook) if hook else _saved_value(name, read)]
    hooks = [_hook_of(r) for r in raws]
    if any(hooks):
        return [
            _hooked(f"{name}[{i}]", h) if h else {"name": f"{name}[{i}]", "value": "not read"}
            for i, h in enumerate(hooks)
        ]
    try:
        values = read()
    except Exception as exc:
        return [_saved_value(name, lambda exc=exc: _raise(exc))]
    return [_saved_value(f"{name}[{i}]", lambda v=v: v) for i, v in enumerate(values)]


def _saved(fn):
    """What the node saved for backward: a generated node's `_saved_*` attributes
    (torch/csrc/autograd/generated/python_functions.cpp; the SavedVariables behind them
    are `_raw_saved_*`), a custom autograd.Function's `ctx.save_for_backward(...)`
    (`saved_tensors`) and the attributes its forward set on ctx. A saved tensor with a
    saved_tensors_hooks unpack hook (torch.utils.checkpoint's) is not unpacked."""
    out = []
    attrs = set(dir(fn))
    for attr in sorted(attrs):
        if not attr.startswith("_saved_"):
            continue
        name = attr[7:]
        read = lambda attr=attr: getattr(fn, attr)  # noqa: E731
        if "_raw" + attr in attrs:
            raw = lambda attr=attr: getattr(fn, "_raw" + attr)  # noqa: E731
            out.extend(_saved_variables(name, raw, read))
        else:
            out.append(_saved_value(name, read))
    if isinstance(fn, torch.autograd.function.BackwardCFunction):
        out.extend(
            _saved_variables(
                "saved_tensors", lambda: fn._raw_saved_tensors, lambda: fn.saved_tensors
            )
        )
        for attr, value in sorted(vars(fn).items()):
            out.append(_saved_value(f"ctx.{attr}", lambda value=value: value))
    return out


def _raise(exc):
    raise exc


for _name, t in roots:
    if t.grad_fn is not None:
        _node_id(t.grad_fn)
truncated = 0
while queue:
    fn = queue.pop(0)
    i = index[id(fn)]
    if i >= MAX_NODES:
        truncated += 1
        nodes[i] = {"cls": type(fn).__name__, "truncated": True, "next": []}
        continue
    entry = {"cls": type(fn).__name__, "name": fn.name(), "next": [], "saved": _saved(fn)}
    try:
        entry["seq"] = fn._sequence_nr()
    except Exception:
        entry["seq"] = None
    if hasattr(fn, "variable"):
        var = fn.variable
        entry["variable"] = {
            "name": names.get(id(var)),
            **_tensor(var),
            "hooks": len(getattr(var, "_backward_hooks", None) or {}),
        }
    try:
        entry["metadata"] = sorted(str(k) for k in fn.metadata)
    except Exception:
        entry["metadata"] = []
    for nxt, input_nr in fn.next_functions:
        entry["next"].append([None if nxt is None else _node_id(nxt), input_nr])
    nodes[i] = entry

described = {}
for key, t in tensors.items():
    base = t._base if t._is_view() else None
    described[key] = {
        **_tensor(t),
        "requires_grad": t.requires_grad,
        "is_leaf": t.is_leaf,
        "grad_fn": None
        if t.grad_fn is None
        else index.get(id(t.grad_fn), type(t.grad_fn).__name__),
        "grad_fn_cls": None if t.grad_fn is None else type(t.grad_fn).__name__,
        "is_view": t._is_view(),
        "base": None if base is None else names.get(id(base), "an unnamed tensor"),
        "retains_grad": bool(getattr(t, "retains_grad", False)),
        "hooks": len(t._backward_hooks or {}),
        "inference": t.is_inference(),
        "shares_storage_with": [
            k
            for k in data_ptrs.get(
                t.untyped_storage().data_ptr() if t.layout == torch.strided else -1, []
            )
            if k != key
        ],
    }

answer(
    {
        "torch": torch_facts(),
        "status": status,
        "roots": [name for name, _t in roots],
        "missing": missing,
        "tensors": described,
        "globals": sorted(k for k in namespace if not k.startswith("__"))[:60],
        "nodes": nodes,
        "truncated": truncated,
        "grad_enabled": torch.is_grad_enabled(),
    }
)
