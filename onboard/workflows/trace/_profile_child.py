# The body of `onboard trace`'s child, run after _launch_child.py (the module
# `onboard_launch`) in the user's interpreter: runs the program under torch's
# profiler (record_shapes, profile_memory, overload names) and a
# TorchFunctionMode that marks each outermost torch call with the file:line
# that made it, then writes the event tree, the computed dispatch table of
# every op seen and the dispatch key sets it needs.
# Not with_stack: its Python tracer records every Python call (1.5 million
# events for 100 steps of a small nn.Module training loop, several times the
# program's own time) and keeps bare pointers into code objects that the
# program may free, so names read back later can be garbage. The mode gives
# the lines that matter: the user's, and torch's own Python line below it.
from __future__ import annotations

import os
import re
import sys
import time
from types import FrameType
from typing import Any

import torch
from onboard_launch import REQUEST, run_user_program, torch_facts, write_answer
from torch._C._profiler import _EventType, _ExperimentalConfig
from torch.autograd.profiler import profile
from torch.overrides import TorchFunctionMode

_LINE = "@onboard-call\x1f"
_MAX_EVENTS = int(REQUEST.get("max_events", 200000))


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# torch's call machinery between the caller and the function: not the line to show
_MACHINERY = (os.sep + "overrides.py", os.sep + "_ops.py")


def _api(func):
    """(module, name) of the function the program called, as it would write it."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return "", f"torch.ops.{func}"  # torch.ops.profiler._record_function_enter_new
    owner: Any = getattr(func, "__self__", None)
    if type(owner).__name__ == "getset_descriptor":  # `t.grad = None` sets Tensor.grad
        return "", f"{owner.__objclass__.__name__}.{owner.__name__}.{func.__name__}"
    name = str(getattr(func, "__qualname__", None) or getattr(func, "__name__", "?"))
    return getattr(func, "__module__", None) or "", name


class CallSites(TorchFunctionMode):
    """Marks each outermost torch call (the mode is off inside it) with the user's
    line that made it and, when torch's own Python code made it, that line too."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        frame: FrameType | None = sys._getframe(1)
        inner: FrameType | None = None
        while frame is not None and frame.f_code.co_filename.startswith(_TORCH_DIR):
            if inner is None and not frame.f_code.co_filename.endswith(_MACHINERY):
                inner = frame
            frame = frame.f_back
        user = frame if frame is not None else inner
        module, name = _api(func)
        mark = _LINE + "\x1f".join(
            [
                user.f_code.co_filename if user else "?",
                str(user.f_lineno if user else 0),
                inner.f_code.co_filename if inner else "",
                str(inner.f_lineno if inner else 0),
                module,
                name,
            ]
        )
        with torch._C._profiler._RecordFunctionFast(mark):
            return func(*args, **(kwargs or {}))


prof = profile(
    record_shapes=True,
    profile_memory=True,
    experimental_config=_ExperimentalConfig(capture_overload_names=True),
)
mode = CallSites()


def _enter():
    prof.__enter__()
    mode.__enter__()


def _leave():
    mode.__exit__(None, None, None)
    prof.__exit__(None, None, None)


status, _namespace = run_user_program(_enter, _leave)
post_started = time.perf_counter()
counted = [0, 0]  # events kept, events dropped


_TensorMetadata = torch._C._profiler._TensorMetadata
_names: dict = {}  # dtype / device / layout objects -> their short names


def _name(obj):
    text = _names.get(obj)
    if text is None:
        text = _names[obj] = str(obj).replace("torch.", "")
    return text


# the device/layout combinations the ops' tensors had ("" for none): their key sets
# are computed once at the end
_placements = {""}


def _tensor(v, places):
    device = _name(v.device)
    places.add(f"{device}/{_name(v.layout)}")
    shape = "x".join(str(n) for n in v.sizes) or "scalar"
    return f"{shape} {_name(v.dtype)}" + ("" if device == "cpu" else f" {device}")


def _inputs(values):
    """Each tensor input as `3x4 float32` (a list of them in brackets), and the
    device/layout combination the call dispatched on (`cpu/strided`)."""
    texts: list[str] = []
    places: set[str] = set()
    for v in values:
        if isinstance(v, _TensorMetadata):
            texts.append(_tensor(v, places))
        elif isinstance(v, list):
            parts = [_tensor(x, places) for x in v[:8] if isinstance(x, _TensorMetadata)]
            if parts:
                texts.append("[" + ", ".join(parts) + "]")
    combo = "+".join(sorted(places))
    _placements.add(combo)
    return texts, combo


def _children(event):
    kids = []
    for child in event.children:
        node = _convert(child)
        if node is None:
            continue
        if node["t"] == "group":
            kids.extend(node["children"])
        else:
            kids.append(node)
    return kids


def _convert(event):
    """One profiler event -> a JSON node, or None when it holds no op."""
    tag = event.tag
    if counted[0] >= _MAX_EVENTS:
        counted[1] += 1
        return None
    if tag == _EventType.Allocation:
        ex = event.extra_fields
        if ex.alloc_size <= 0:
            return None  # a free: the peaks are at allocations
        counted[0] += 1
        device = str(ex.device)
        _placements.add(f"{device}/strided")
        return {
            "t": "alloc",
            "bytes": ex.alloc_size,
            "device": device,
            "allocated": ex.total_allocated,
            "reserved": ex.total_reserved,
        }
    kids = _children(event)
    if tag != _EventType.TorchOp:
        # a user annotation, a backend's event: keep what it holds
        return {"t": "group", "children": kids} if kids else None
    name = event.name
    if name.startswith(_LINE):
        if not kids:
            return None
        path, line, torch_path, torch_line, module, api = name[len(_LINE) :].split("\x1f")
        counted[0] += 1
        return {
            "t": "call",
            "path": path,
            "line": int(line),
            "torch_path": torch_path,
            "torch_line": int(torch_line),
            "api": api,
            "module": module,
            "children": kids,
        }
    counted[0] += 1
    ex = event.extra_fields
    inputs, combo = _inputs(ex.inputs)
    return {
        "t": "op",
        "name": name,
        "overload": event.overload_name,
        "ns": event.duration_time_ns,
        "seq": ex.sequence_number,
        "inputs": inputs,
        "keys": combo,
        "children": kids,
    }


# None only when the profiler never started (it starts before the program does)
results = prof.kineto_results
tree: list[dict] = []
for root in results.experimental_event_tree() if results is not None else []:
    node = _convert(root)
    if node is not None:
        tree.extend(node["children"] if node["t"] == "group" else [node])


# An operator's name (aten::zeros); not the autograd engine's events
# ("autograd::engine::evaluate_function: MulBackward0") or record_function labels.
_OP_NAME = re.compile(r"^\w+::\w+$")


def _ops(nodes, found):
    for node in nodes:
        if node["t"] == "op" and _OP_NAME.match(node["name"]):
            found.add(node["name"] + ("." + node["overload"] if node["overload"] else ""))
        _ops(node.get("children", ()), found)
    return found


tables: dict[str, str | None] = {}
for op in sorted(_ops(tree, set())):
    try:
        tables[op] = torch._C._dispatch_dump_table(op)
    except Exception as exc:  # an op the dispatcher no longer knows by that name
        tables[op] = None
        sys.stderr.write(f"onboard: no dispatch table for {op}: {exc}\n")


def _keys(keyset):
    """A DispatchKeySet as its keys, highest priority first (runtime keys: AutogradCPU)."""
    keys: list[str] = []
    while True:
        key = keyset.highestPriorityTypeId()
        name = torch._C._dispatch_key_name(key)
        if name == "Undefined":
            return keys
        keys.append(name)
        keyset = keyset.remove(key)


# The key set each call dispatched on: its tensors' keys plus the thread's
# included keys (BackendSelect, ADInplaceOrView), before the excluded ones.
include = torch._C._dispatch_tls_local_include_set()
keysets = {}
for combo in sorted(_placements):
    keyset = include
    try:
        for part in filter(None, combo.split("+")):
            device, layout = part.split("/")
            sample = torch.empty(0, device=device, layout=getattr(torch, layout))
            keyset = keyset | torch._C._dispatch_keys(sample)
    except Exception as exc:  # a layout that cannot make an empty tensor
        sys.stderr.write(f"onboard: no key set for {combo}: {exc}\n")
        continue
    keysets[combo] = _keys(keyset)
cuda = None
if torch.cuda.is_available() and torch.cuda.is_initialized():
    cuda = {
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
        "max_allocated": torch.cuda.max_memory_allocated(),
    }

write_answer(
    {
        "torch": torch_facts(),
        "status": status,
        "tree": tree,
        "events": counted[0],
        "dropped": counted[1],
        "tables": tables,
        "keysets": keysets,
        "tls_exclude": _keys(torch._C._dispatch_tls_local_exclude_set()),
        "cuda": cuda,
        "post_seconds": time.perf_counter() - post_started,
    }
)
