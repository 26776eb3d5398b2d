# The body of `onboard trace`'s child, run after _launch_child.py (the module
# `onboard_launch`) in the user's interpreter: runs the program under torch's
# profiler (record_shapes, profile_memory, overload names) and a
# TorchFunctionMode that marks each outermost torch call with the file:line
# that made it and the dispatch state it started in, then writes the event
# tree, the computed dispatch table of every op seen, the key set of each
# (inputs, dispatch state) pair and what the hand-written autograd kernels do.
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
import types
import warnings
from types import FrameType
from typing import Any

import torch
from onboard_answer import answer
from onboard_launch import REQUEST, run_user_program, torch_facts
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


# The dispatch state each outermost call started in, numbered: the thread's included and
# excluded dispatch keys (inference_mode, autocast and guards set from Python change them)
# and grad mode, which decides whether the profiler gives an op a sequence number
# (aten/src/ATen/core/dispatch/Dispatcher.cpp: sequenceNumberForRunningRecordFunction).
_states: dict[tuple[int, int, bool], int] = {}
_include_set = torch._C._dispatch_tls_local_include_set
_exclude_set = torch._C._dispatch_tls_local_exclude_set
_grad_enabled = torch.is_grad_enabled
# Python code (a def) may change grad mode or the key sets before it calls an op;
# a C++ binding or an OpOverload goes straight to the dispatcher.
_PYTHON_CODE = (types.FunctionType, types.MethodType)


def _state() -> int:
    key = (_include_set().raw_repr(), _exclude_set().raw_repr(), _grad_enabled())
    found = _states.get(key)
    if found is None:
        found = _states[key] = len(_states)
    return found


def _recorded_graph(result) -> bool:
    """Whether the call's output carries autograd history (a grad_fn)."""
    try:
        if isinstance(result, torch.Tensor):
            return result.grad_fn is not None
        if isinstance(result, (tuple, list)):
            return any(isinstance(r, torch.Tensor) and r.grad_fn is not None for r in result[:8])
    except Exception:  # a tensor subclass whose grad_fn cannot be read here
        pass
    return False


class CallSites(TorchFunctionMode):
    """Marks each outermost torch call (the mode is off inside it) with the user's
    line that made it and, when torch's own Python code made it, that line too; with the
    dispatch state it started in; and notes the calls whose output has a grad_fn."""

    serial = 0
    graph_calls: set[int] = set()

    def __torch_function__(self, func, types=(), args=(), kwargs=None):
        frame: FrameType | None = sys._getframe(1)
        inner: FrameType | None = None
        while frame is not None and frame.f_code.co_filename.startswith(_TORCH_DIR):
            if inner is None and not frame.f_code.co_filename.endswith(_MACHINERY):
                inner = frame
            frame = frame.f_back
        user = frame if frame is not None else inner
        module, name = _api(func)
        CallSites.serial += 1
        serial = CallSites.serial
        mark = _LINE + "\x1f".join(
            [
                user.f_code.co_filename if user else "?",
                str(user.f_lineno if user else 0),
                inner.f_code.co_filename if inner else "",
                str(inner.f_lineno if inner else 0),
                module,
                name,
                str(serial),
                str(_state()),
                "p" if isinstance(func, _PYTHON_CODE) else "b",
            ]
        )
        with torch._C._profiler._RecordFunctionFast(mark):
            result = func(*args, **(kwargs or {}))
        if _recorded_graph(result):
            CallSites.graph_calls.add(serial)
        return result


prof = profile(
    record_shapes=True,
    profile_memory=True,
    experimental_config=_ExperimentalConfig(capture_overload_names=True),
)
mode = CallSites()


_base_state = [0]


def _enter():
    # Kineto logs `profiler_start`/`profiler_stop` lines to stderr at its default level,
    # which would land in the program's own output; the level is read when it starts.
    level = os.environ.get("KINETO_LOG_LEVEL")
    os.environ["KINETO_LOG_LEVEL"] = "6"
    try:
        prof.__enter__()
    finally:
        if level is None:
            del os.environ["KINETO_LOG_LEVEL"]
        else:
            os.environ["KINETO_LOG_LEVEL"] = level
    _base_state[0] = _state()
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


# the device/layout combinations the ops' tensors had ("" for none), with the dispatch
# state of the call they ran under: their key sets are computed once at the end
_placements: set[tuple[str, int]] = set()
_devices = {"cpu"}  # where allocations went (the backend a factory's BackendSelect picks)


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
    return texts, "+".join(sorted(places))


def _children(event, state):
    kids = []
    for child in event.children:
        node = _convert(child, state)
        if node is None:
            continue
        if node["t"] == "group":
            kids.extend(node["children"])
        else:
            kids.append(node)
    return kids


def _convert(event, state):
    """One profiler event -> a JSON node, or None when it holds no op; ``state`` is the
    dispatch state of the call it ran under."""
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
        _devices.add(device)
        return {
            "t": "alloc",
            "bytes": ex.alloc_size,
            "device": device,
            "allocated": ex.total_allocated,
            "reserved": ex.total_reserved,
        }
    name = event.name
    if tag == _EventType.TorchOp and name.startswith(_LINE):
        fields = name[len(_LINE) :].split("\x1f")
        path, line, torch_path, torch_line, module, api, serial, call_state, kind = fields
        kids = _children(event, int(call_state))
        if not kids:
            return None
        counted[0] += 1
        return {
            "t": "call",
            "path": path,
            "line": int(line),
            "torch_path": torch_path,
            "torch_line": int(torch_line),
            "api": api,
            "module": module,
            "state": int(call_state),
            "python": kind == "p",
            "graph": int(serial) in CallSites.graph_calls,
            "children": kids,
        }
    kids = _children(event, state)
    if tag != _EventType.TorchOp:
        # a user annotation, a backend's event: keep what it holds
        return {"t": "group", "children": kids} if kids else None
    counted[0] += 1
    ex = event.extra_fields
    inputs, combo = _inputs(ex.inputs)
    _placements.add((combo, state))
    return {
        "t": "op",
        "name": name,
        "overload": event.overload_name,
        "ns": event.duration_time_ns,
        "seq": ex.sequence_number,
        "inputs": inputs,
        "keys": f"{combo}|{state}",
        "children": kids,
    }


# None only when the profiler never started (it starts before the program does)
results = prof.kineto_results
tree: list[dict] = []
for root in results.experimental_event_tree() if results is not None else []:
    node = _convert(root, _base_state[0])
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


# The key set each call dispatched on, as the dispatcher computes it
# (c10/core/impl/LocalDispatchKeySet.h, DispatchKeySet's operator-): its tensors' keys
# plus the thread's included keys, less the excluded functionalities (the backend bits
# stay), for the dispatch state of the call it ran under.
_BACKEND_BITS = (1 << torch._C._dispatch_num_backends()) - 1
_ALL_BITS = (1 << 64) - 1
_INPLACE_OR_VIEW = torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView).raw_repr()
_by_state = {number: key for key, number in _states.items()}
keysets = {}
for combo, number in sorted(_placements):
    include_raw, exclude_raw, _grad = _by_state[number]
    raw = include_raw
    try:
        for part in filter(None, combo.split("+")):
            device, layout = part.split("/")
            sample = torch.empty(0, device=device, layout=getattr(torch, layout))
            raw |= torch._C._dispatch_keys(sample).raw_repr()
    except Exception as exc:  # a layout that cannot make an empty tensor
        sys.stderr.write(f"onboard: no key set for {combo}: {exc}\n")
        continue
    if not include_raw & _INPLACE_OR_VIEW:
        # inference_mode takes ADInplaceOrView off the included keys, and the tensors made
        # under it lack the key too (c10/core/InferenceMode.h); the profiler does not say
        # which inputs were made there, so under it every input is taken for one of them.
        raw &= ~_INPLACE_OR_VIEW
    raw &= (_BACKEND_BITS | ~exclude_raw) & _ALL_BITS
    keysets[f"{combo}|{number}"] = _keys(torch._C.DispatchKeySet.from_raw_repr(raw))
backends = {}
for device in _devices:
    try:
        backends[device] = _keys(torch._C._dispatch_keys(torch.empty(0, device=device)))[-1]
    except Exception as exc:  # a device this torch cannot make a tensor on any more
        sys.stderr.write(f"onboard: no backend key for {device}: {exc}\n")

# Autograd kernels that torchgen did not write (tools/autograd/gen_variable_type.py
# generates VariableType_N.cpp, whose kernels all redispatch below an
# at::AutoDispatchBelowADInplaceOrView guard): the hand-written ones (e.g.
# torch/csrc/autograd/VariableTypeManual.cpp) may not redispatch at all (detach_) or
# guard less. Each is asked once, after the program: the op is called on small fresh
# tensors while a Python kernel sits at every key below autograd and notes whether it
# was reached and whether ADInplaceOrView was excluded there. The wrappers are removed
# right after.
_GENERATED_AUTOGRAD = re.compile(r"/VariableType_\d+\.cpp:")
_ENTRY = re.compile(r"^(\w+): (fallthrough )?registered .*\[([^\]]+)\]$")
_BELOW_AUTOGRAD = ("ADInplaceOrView", "BackendSelect", "CPU")


def _sample(arg):
    kind = str(arg.type)
    if kind == "Tensor":
        return torch.zeros(2)
    if kind in ("int[]", "SymInt[]"):
        return [2]
    if kind in ("int", "SymInt"):
        return 0
    if kind == "bool":
        return False
    raise TypeError(kind)


def _probe_one(op, table):
    namespace, rest = op.split("::", 1)
    base, _, overload = rest.partition(".")
    handle = getattr(getattr(getattr(torch.ops, namespace), base), overload or "default")
    args = [_sample(a) for a in handle._schema.arguments if not a.has_default_value()]
    reached: list[bool] = []
    lib = torch.library.Library(namespace, "IMPL")
    try:
        for key in _BELOW_AUTOGRAD:
            entry = table.get(key)
            if entry is None or entry[0]:
                continue
            kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key(
                op, getattr(torch._C.DispatchKey, key)
            )

            def wrapper(keyset, *a, _kernel=kernel, **kw):
                reached.append(
                    torch._C._dispatch_tls_is_dispatch_key_excluded(
                        torch._C.DispatchKey.ADInplaceOrView
                    )
                )
                return _kernel.call_boxed(keyset, *a, **kw)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
                lib.impl(rest, wrapper, key, with_keyset=True)
        handle(*args)
    finally:
        lib._destroy()
    return {"redispatches": bool(reached), "excludes_inplace_or_view": bool(reached[:1] == [True])}


def _probe_manual_autograd(tables):
    found = {}
    for op, text in tables.items():
        table = {}
        for line in (text or "").splitlines():
            mo = _ENTRY.match(line.strip())
            if mo:
                table[mo.group(1)] = (bool(mo.group(2)), mo.group(3), line)
        autograd = table.get("AutogradCPU")
        if autograd is None or autograd[1] != "autograd kernel":
            continue
        if _GENERATED_AUTOGRAD.search(autograd[2]):
            continue
        try:
            found[op] = _probe_one(op, table)
        except Exception as exc:  # arguments it cannot make up, or the call refused them
            found[op] = None
            sys.stderr.write(f"onboard: could not ask {op}'s autograd kernel: {exc}\n")
    return found


cuda = None
if torch.cuda.is_available() and torch.cuda.is_initialized():
    cuda = {
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
        "max_allocated": torch.cuda.max_memory_allocated(),
    }

answer(
    {
        "torch": torch_facts(),
        "status": status,
        "tree": tree,
        "events": counted[0],
        "dropped": counted[1],
        "tables": tables,
        "keysets": keysets,
        "states": {number: {"grad": key[2]} for key, number in _states.items()},
        "backends": backends,
        "autograd_kernels": _probe_manual_autograd(tables),
        "cuda": cuda,
        "post_seconds": time.perf_counter() - post_started,
    }
)
