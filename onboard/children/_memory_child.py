# The body of `onboard memory`'s child, run after onboard_launch.py (the module
# `onboard_launch`) in the user's interpreter: runs the program as it is and, at
# each step boundary, takes a census of the live tensors (gc.get_objects; each
# storage once, by untyped_storage().data_ptr(), so a view and its base count
# once) and of what the autograd graphs they hold keep (nodes, saved tensors that
# no live tensor holds). Boundaries: torch.optim's global step post hook
# (torch/optim/optimizer.py register_optimizer_step_post_hook), a function's
# return or a line the user names (sys.settrace, only then), or a timer.
#
# Creation lines are not recorded on every op: a TorchFunctionMode
# (torch/overrides.py) is on for two "probe" steps only (by default the third and
# fourth), and records each new tensor a torch call returns, with the user's line
# and a weak reference. What of the first probe step is still alive two
# boundaries later is what the loop keeps; its holder is found through
# gc.get_referrers up to a name the user wrote. `"lines": "all"` keeps the mode on
# for every step. Every census is written to the answer file as it is taken
# (onboard_answer replaces the file atomically), so a program that dies, even by
# SIGKILL from the OOM killer, leaves its last census behind.
from __future__ import annotations

import contextlib
import gc
import itertools
import os
import re
import signal
import sys
import time
import weakref
from typing import Any

import torch
from onboard_answer import answer
from onboard_launch import REQUEST, run_user_program, torch_facts
from torch.overrides import TorchFunctionMode

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_STDLIB = os.path.dirname(os.__file__) + os.sep
_PAGE = os.sysconf("SC_PAGE_SIZE")
_MAX_CENSUSES = int(REQUEST.get("max_censuses", 400))
# The census may take at most this share of the program's own time: past it,
# boundaries are skipped (each census says which step it is).
_BUDGET = float(REQUEST.get("budget", 0.3))
_PROBE_AT = int(REQUEST.get("probe_at", 3))
_ALL_LINES = REQUEST.get("lines") == "all"
_GRAPH_CAP = 20000  # nodes walked per graph at most

_state: dict[str, Any] = {
    "steps": 0,
    "census_seconds": 0.0,
    "started": time.perf_counter(),
    "optimizer": None,
    "backward_runs": 0,
}
_censuses: list[dict[str, Any]] = []
_kept: dict = {}  # the probe's findings, by line
_history: dict = {}  # graph sizes per creation line, per probe step
_history_holders: dict = {}
# "at": the step the probe starts after; "done": probes taken
_probe: dict[str, Any] = {"records": {}, "at": _PROBE_AT, "mode": None, "done": 0}
_MAX_PROBES = 3
_OWN: set[int] = set()  # ids of onboard's own containers, never a holder


def _rss(pid: str | int = "self") -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _workers() -> dict:
    """RSS of each child process (DataLoader workers are the program's children)."""
    me = str(os.getpid())
    found: dict[str, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == me:
            found[name] = _rss(name)
    return found


def _user_frame(frame):
    """The innermost frame of the user's own code (not torch's, onboard's, stdlib's)."""
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def _graph(fn, seen_storages, keys_out=None):
    """(nodes, saved bytes no live tensor holds, saved ones still there) of the graph
    under ``fn``; ``keys_out`` gets the storage of every saved tensor."""
    nodes, saved, intact = 0, 0, False
    pending, seen = [fn], set()
    counted = set()
    while pending and nodes < _GRAPH_CAP:
        node = pending.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes += 1
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except RuntimeError:  # freed by backward
                continue
            if isinstance(value, torch.Tensor):
                intact = True
                try:
                    st = value.untyped_storage()
                    key = (str(value.device), st.data_ptr())
                    if keys_out is not None:
                        keys_out.add(key)
                    if key not in seen_storages and key not in counted:
                        counted.add(key)
                        saved += st.nbytes()
                except Exception:  # noqa: BLE001 - a tensor without storage
                    pass
        for nxt, _ in getattr(node, "next_functions", ()):
            pending.append(nxt)
    return nodes, saved, intact


def _storage_key(t):
    try:
        st = t.untyped_storage()
        return (str(t.device), st.data_ptr()), st.nbytes()
    except Exception:  # noqa: BLE001 - sparse, meta or a subclass without storage
        return None, 0


def _census(reason: str) -> None:
    if len(_censuses) >= _MAX_CENSUSES:
        return
    began = time.perf_counter()
    elapsed = began - _state["started"]
    if (
        _censuses
        and _state["census_seconds"] > _BUDGET * max(elapsed - _state["census_seconds"], 0)
        and not _probe_due()
    ):
        return
    # Filtered at C speed: a Python loop with isinstance over the ~165,000 objects of
    # a process that imported torch costs more than the rest of the census together.
    objects = gc.get_objects()
    kinds = list(map(type, objects))
    present = set(kinds)
    tensor_types = {tp for tp in present if issubclass(tp, torch.Tensor)}
    module_types = {tp for tp in present if issubclass(tp, torch.nn.Module)}
    tensors = list(itertools.compress(objects, map(tensor_types.__contains__, kinds)))
    modules = list(itertools.compress(objects, map(module_types.__contains__, kinds)))
    del objects, kinds  # no reference left behind
    hooks = 0
    sites: dict[str, int] = {}
    for m in modules:
        for table in (m._forward_hooks, m._forward_pre_hooks, m._backward_hooks):
            hooks += len(table)
            for fn in table.values():
                code = getattr(fn, "__code__", None)
                if code is not None and _is_user_file(code.co_filename):
                    site = f"{code.co_filename}:{code.co_firstlineno}"
                    sites[site] = sites.get(site, 0) + 1
    del modules
    hooks += len(torch.nn.modules.module._global_forward_hooks)
    storages = {}
    graph_roots = []
    for t in tensors:
        key, nbytes = _storage_key(t)
        if key is not None:
            storages[key] = nbytes
        fn = t.grad_fn if t.requires_grad else None
        if fn is not None:
            graph_roots.append((t, fn))
    seen_keys = set(storages)
    nodes = saved = 0
    largest, largest_t = 0, None
    walked = set()
    for t, fn in graph_roots:
        if id(fn) in walked:
            continue
        walked.add(id(fn))
        n, s, _ = _graph(fn, seen_keys)
        nodes += n
        saved += s
        if n > largest:
            largest, largest_t = n, t
    _same_graph_grows(largest_t, largest)
    largest_t = None
    cuda = None
    if torch.cuda.is_available():
        cuda = {
            "allocated": torch.cuda.memory_allocated(),
            "reserved": torch.cuda.memory_reserved(),
        }
    entry = {
        "step": _state["steps"],
        "reason": reason,
        "seconds": round(began - _state["started"], 4),
        "tensors": len(tensors),
        "storages": len(storages),
        "bytes": sum(storages.values()),
        "graph_nodes": nodes,
        "largest_graph": largest,
        "saved_bytes": saved,
        "hooks": hooks,
        "hook_sites": sites,
        "rss": _rss(),
        "workers": _workers(),
        "cuda": cuda,
    }
    _censuses.append(entry)
    del tensors, graph_roots  # no reference left behind
    t = None
    _probe_step(storages)
    took = time.perf_counter() - began
    entry["took"] = round(took, 4)
    _state["census_seconds"] += took
    _write()


def _same_graph_grows(t, size) -> None:
    """The tensor with the largest graph: when the same tensor's graph is larger at a
    later census, history is kept across the loop in that one tensor (an in-place
    `total += loss` keeps the object; `total = total + loss` is the probe's to see)."""
    before = _state.get("largest")
    if t is None:
        return
    if before is not None and before[0]() is t and size > before[1]:
        grown = _state.get("grown_graph")
        if grown is None:
            grown = _state["grown_graph"] = {
                "first_step": before[2], "first_size": before[1], "holder": _holder(t),
                "grad_fn": type(t.grad_fn).__name__,
            }  # fmt: skip
        grown["last_step"], grown["last_size"] = _state["steps"], size
    try:
        _state["largest"] = (weakref.ref(t), size, _state["steps"])
    except TypeError:
        _state["largest"] = None


_PEAK_FROM, _PEAK_STEPS = 1, 2  # --peak: the profiler is on for steps 2 and 3


def _peak_step() -> None:
    """--peak: torch.profiler's memory profile (profile_memory, record_shapes and
    with_stack, which its categories need: torch/profiler/_memory_profiler.py) over
    two steps after the first, then the live tensors at its peak by category and by
    the line of the user's code that allocated them."""
    step = _state["steps"]
    if step == _PEAK_FROM and "profiler" not in _state:
        from torch.profiler import ProfilerActivity, profile

        prof = profile(
            activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
            with_stack=True,
        )  # fmt: skip
        prof.__enter__()
        _state["profiler"] = prof
    elif step == _PEAK_FROM + _PEAK_STEPS and _state.get("profiler") is not None:
        prof = _state["profiler"]
        _state["profiler"] = None
        prof.__exit__(None, None, None)
        _state["peak"] = _peak_of(prof, step)


_PY_CALL = re.compile(r"^(.*)\((\d+)\): (.*)$")


def _full_path(name: str) -> str:
    """The profiler shortens a file's path by the sys.path entry it is under."""
    if os.path.isabs(name):
        return name
    for entry in [os.path.dirname(os.path.abspath(sys.argv[0])), *sys.path]:
        candidate = os.path.join(entry or os.getcwd(), name)
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return name


def _peak_of(prof, step):
    from torch._C._profiler import _EventType
    from torch.profiler._memory_profiler import Action, TensorKey

    mp = prof._memory_profile()
    live: dict = {}
    current = best = 0
    at_peak: dict = {}
    for _t, action, (key, version), size in mp.timeline:
        if action in (Action.CREATE, Action.PREEXISTING):
            live[(key, version)] = size
            current += size
        elif action == Action.INCREMENT_VERSION:
            live.pop((key, version), None)
            live[(key, version + 1)] = size
        elif action == Action.DESTROY:
            live.pop((key, version), None)
            current -= abs(size)
        if current > best:
            best, at_peak = current, dict(live)
    where = {}
    for event in mp._op_tree.dfs():
        if event.typed[0] != _EventType.Allocation or event.typed[1].alloc_size <= 0:
            continue
        key = TensorKey.from_allocation(event.typed[1])
        parent = event.parent
        while key is not None and parent is not None:
            if parent.typed[0] == _EventType.PyCall:
                found = _PY_CALL.match(parent.name)
                if found and not found[1].startswith(("torch/", "<")) and _is_user_file(found[1]):
                    # the profiler names a Python call by its function's first line
                    where[key] = (_full_path(found[1]), int(found[2]), found[3])
                    break
            parent = parent.parent
    groups: dict = {}
    for (key, version), size in at_peak.items():
        category = mp._categories.get(key, version) if isinstance(key, TensorKey) else None
        path, line, func = where.get(key, (None, None, None))
        name = category.name.lower() if category is not None else "unknown"
        groups[(name, path, line, func)] = groups.get((name, path, line, func), 0) + size
    ranked = sorted(groups.items(), key=lambda item: -item[1])[:12]
    return {
        "bytes": best, "from_step": _PEAK_FROM, "to_step": step,
        "groups": [
            {"category": c, "path": p, "line": ln, "function": f, "bytes": b}
            for (c, p, ln, f), b in ranked
        ],
    }  # fmt: skip


def _probe_due() -> bool:
    step = _state["steps"]
    at = _probe["at"]
    return _ALL_LINES or at <= step <= at + 2


class _Recorder(TorchFunctionMode):
    """Each new tensor a torch call returns: its user line, weakly held."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        _record(out, args)
        return out


def _record(out, args) -> None:
    items = out if isinstance(out, (tuple, list)) else (out,)
    for t in items[:8]:
        if not isinstance(t, torch.Tensor) or any(t is a for a in args):
            continue
        frame = _user_frame(sys._getframe(2))
        if frame is None:
            continue
        where = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        try:
            ref = weakref.ref(t)
        except TypeError:
            continue
        _probe["records"][id(t)] = (ref, where, _state["steps"], torch.is_grad_enabled())


def _probe_step(storages) -> None:
    """At a boundary: start, go on with or end the probe; check what it recorded."""
    step = _state["steps"]
    if _probe["mode"] is None and not _kept and _probe["done"] < _MAX_PROBES and _rising():
        # The probe found nothing kept (it ran before the loop did: a --every tick, a
        # warm-up), but the census now grows: probe again from here.
        _probe["at"] = step
    if step == _probe["at"] or (_ALL_LINES and _probe["mode"] is None and step >= 1):
        _start_mode()
    # What was made in step s (records tagged s, made while steps == s) and is
    # still alive now, at the end of step s + 2.
    if _probe["mode"] is not None or _probe["records"]:
        _check(step, storages)
    if not _ALL_LINES and step >= _probe["at"] + 2 and _probe["mode"] is not None:
        _stop_mode()
        _probe["done"] += 1
        _probe["records"].clear()


def _rising() -> bool:
    """The last three censuses grow in tensors or in bytes, each over the one before."""
    last = _censuses[-3:]
    if len(last) < 3 or last[0]["step"] <= 1:
        return False
    return any(last[0][k] < last[1][k] < last[2][k] for k in ("tensors", "bytes"))


def _start_mode() -> None:
    mode = _Recorder()
    mode.__enter__()
    _probe["mode"] = mode


def _stop_mode() -> None:
    mode = _probe["mode"]
    _probe["mode"] = None
    with contextlib.suppress(Exception):  # a mode stack the program changed
        mode.__exit__(None, None, None)


def _check(step, storages) -> None:
    records = _probe["records"]
    by_line: dict = {}
    made_in: dict = {}
    for key in list(records):
        ref, where, made, grad = records[key]
        t = ref()
        if t is None:
            del records[key]
            continue
        if made == step - 1 and t.grad_fn is not None:
            # this step's graph size for the line (history accumulated across steps)
            n, _, _ = _graph(t.grad_fn, set())
            sizes = _history.setdefault(where, {})
            sizes[made] = max(sizes.get(made, 0), n)
            earlier = sizes.get(made - 1)
            if earlier is not None and n > earlier and where not in _history_holders:
                _history_holders[where] = _holder(t)
        # (<=: a boundary skipped, a SIGALRM tick during a census, leaves its step's
        # records to the next check)
        if made > step - 2:
            continue
        by_line.setdefault(where, []).append((t, grad))
        made_in.setdefault(where, set()).add(made)
        del records[key]
    seen_storage = set(storages)
    _OWN.add(id(by_line))
    _OWN.update(id(found) for found in by_line.values())
    _OWN.update(id(pair) for found in by_line.values() for pair in found)
    for where, found in by_line.items():
        group = _kept.setdefault(
            where,
            {"path": where[0], "line": where[1], "function": where[2], "count": 0, "bytes": 0,
             "with_graph": 0, "graph_nodes": 0, "saved_bytes": 0, "saved_intact": False,
             "grad_enabled": False, "holder": None, "example": None, "steps": 0,
             "backward_in_step": _backwards.get(step - 2, 0)},
        )  # fmt: skip
        group["steps"] += len(made_in[where])
        # Tensors of this line that another one's graph saved (a layer's output the
        # next layer keeps for backward) are that graph's memory, not a growth of
        # their own.
        saved_keys: set = set()
        graphs = {}
        for t, _grad in found:
            if t.grad_fn is not None:
                graphs[id(t)] = _graph(t.grad_fn, seen_storage, saved_keys)
        roots = [pair for pair in found if _storage_key(pair[0])[0] not in saved_keys]
        root_ids = {id(pair[0]) for pair in roots}
        for t, _grad in found:
            if roots and id(t) not in root_ids:
                group["saved_bytes"] += _storage_key(t)[1]
        keys = set()
        for t, grad in roots or found:
            group["count"] += 1
            key, nbytes = _storage_key(t)
            if key is not None and key not in keys:
                keys.add(key)
                group["bytes"] += nbytes
            group["grad_enabled"] = group["grad_enabled"] or grad
            if t.grad_fn is not None:
                group["with_graph"] += 1
                n, s, intact = graphs[id(t)]
                group["graph_nodes"] += n
                group["saved_bytes"] += s
                group["saved_intact"] = group["saved_intact"] or intact
        if group["holder"] is None:
            for t, _grad in (roots or found)[:3]:
                group["example"] = {
                    "shape": list(t.shape),
                    "dtype": str(t.dtype).replace("torch.", ""),
                    "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None,
                }
                group["holder"] = _holder(t)
                if group["holder"] is not None:
                    break
        del roots, found
    _OWN.clear()
    del by_line


def _is_user_file(name: str) -> bool:
    return not (
        name.startswith(_TORCH_DIR)
        or name == "<onboard>"
        or name.startswith(_STDLIB)
        or "site-packages" in name
        or name.startswith("<frozen")
    )


def _user_globals():
    found = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and _is_user_file(path):
            found[id(module.__dict__)] = (module.__name__, path)
    main = sys.modules.get("__main__")
    if main is not None:
        found[id(main.__dict__)] = ("__main__", getattr(main, "__file__", "<string>"))
    return found


def _step(container: Any, child: Any, above: Any) -> str:
    """How ``container`` holds ``child``, as code would write it (``above``: what
    holds ``container``)."""
    if (
        isinstance(container, tuple)
        and above is not None
        and getattr(above, "__closure__", None) is container
    ):
        for i, v in enumerate(container):  # type: ignore[arg-type]
            if v is child:
                names = above.__code__.co_freevars
                return f".<closure {names[i] if i < len(names) else i}>"
        return ".<closure>"
    if isinstance(container, (list, tuple)):
        for i, v in enumerate(container):
            if v is child:
                return f"[{i}]"
        return "[...]"
    if isinstance(container, dict):
        owner_dict = getattr(above, "__dict__", None) if above is not None else None
        for k, v in container.items():
            if v is child:
                return f".{k}" if owner_dict is container else f"[{k!r}]"
        return "[...]"
    if type(container).__name__ in ("cell", "function", "method"):
        return ""
    try:
        for k, v in vars(container).items():
            if v is child:
                return f".{k}"
    except TypeError:
        pass
    return ""


def _holder(t):
    """The chain of referrers from ``t`` up to a name the user wrote."""
    user_globals = _user_globals()
    me = sys._getframe()
    start = time.perf_counter()
    parent: dict[int, int | None] = {id(t): None}
    depth = {id(t): 0}
    objects = {id(t): t}
    queue = [t]
    own = {id(parent), id(objects), id(queue), id(depth)}
    found: Any = None
    frame_type = type(me)
    # A running function's locals are not in gc's view of its frame (3.11 keeps them
    # in the interpreter's frame), so the user's live frames are asked directly.
    local_maps = []
    frame = me.f_back
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename) and frame.f_code.co_name != "<module>":
            local_maps.append((frame, frame.f_locals))
        frame = frame.f_back
    own.update(id(m) for _, m in local_maps)
    own.add(id(local_maps))
    while queue and found is None and time.perf_counter() - start < 3.0:
        obj = queue.pop(0)
        if depth[id(obj)] > 7:
            continue
        for frame, names in local_maps:
            for name, value in names.items():
                if value is obj:
                    code = frame.f_code
                    found = ("local", name, code.co_filename, frame.f_lineno, obj)
                    break
            if found:
                break
        if found:
            break
        for ref in gc.get_referrers(obj):
            rid = id(ref)
            if rid in parent or rid in own or rid in _OWN or ref is me:
                continue
            if isinstance(ref, frame_type):
                code = ref.f_code
                if not _is_user_file(code.co_filename):
                    continue
                for name, value in ref.f_locals.items():
                    if value is obj:
                        found = ("local", name, code.co_filename, ref.f_lineno, obj)
                        break
                if found:
                    break
                continue
            if isinstance(ref, dict) and rid in user_globals:
                for name, value in ref.items():
                    if value is obj:
                        found = ("global", name, user_globals[rid][1], None, obj)
                        break
                if found:
                    break
                continue
            if isinstance(ref, dict) and "__builtins__" in ref:
                continue  # another module's globals
            if isinstance(ref, (weakref.ref, type)) or type(ref).__name__ == "module":
                continue
            parent[rid] = id(obj)
            depth[rid] = depth[id(obj)] + 1
            objects[rid] = ref
            queue.append(ref)
    if found is None:
        return None
    kind, name, path, line, top = found
    path_down = [top]
    node: int | None = parent[id(top)]
    while node is not None:
        path_down.append(objects[node])
        node = parent[node]
    expr = name
    chain = []
    for i in range(len(path_down) - 1):
        above = path_down[i - 1] if i > 0 else None
        expr += _step(path_down[i], path_down[i + 1], above)
        chain.append(type(path_down[i]).__name__)
    del parent, objects, queue, depth, local_maps, frame
    if line is None:
        line = _bound_at(path, name)
    return {
        "kind": kind, "name": name, "expression": expr, "type": type(top).__name__,
        "path": path, "line": line, "chain": chain,
    }  # fmt: skip


def _bound_at(path, name):
    """The first line of ``path`` that binds ``name`` at module level."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == name:
                return node.lineno
    return None


def _write(status=None) -> None:
    answer(
        {
            "torch": torch_facts(),
            "censuses": _censuses,
            "kept": list(_kept.values()),
            "history": [
                {
                    "path": w[0],
                    "line": w[1],
                    "function": w[2],
                    "sizes": sorted(v.items()),
                    "holder": _history_holders.get(w),
                }
                for w, v in _history.items()
            ],
            "steps": _state["steps"],
            "step_kind": REQUEST.get("step_kind", "optimizer"),
            "census_seconds": round(_state["census_seconds"], 4),
            "status": status,
            "cuda": _state.get("cuda"),
            "grown_graph": _state.get("grown_graph"),
            "peak": _state.get("peak"),
            "finished": status is not None,
        }
    )


def _boundary(reason: str) -> None:
    _state["steps"] += 1
    if REQUEST.get("peak"):
        try:
            _peak_step()
        except Exception as exc:  # noqa: BLE001 - onboard's failure, never the program's
            _state.setdefault("errors", []).append(f"--peak: {exc!r}")
    if _state.get("busy"):  # a SIGALRM tick during a census: that step is not taken
        return
    _state["busy"] = True
    try:
        _census(reason)
    except Exception as exc:  # noqa: BLE001 - onboard's failure, never the program's
        _state.setdefault("errors", []).append(repr(exc))
    finally:
        _state["busy"] = False


def _optimizer_hook(optimizer, args, kwargs):
    # The first optimizer that steps marks the steps (a loop with two steps each).
    if _state["optimizer"] is None:
        _state["optimizer"] = id(optimizer)
    if id(optimizer) == _state["optimizer"]:
        _boundary("optimizer.step")


def _tracer_for_function(name: str):
    func = name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]

    def local(frame, event, arg):
        if event == "return":
            _boundary(f"{func} returned")
        return local

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == func:
            return local
        return None

    return tracer


def _tracer_for_line(path: str, line: int):
    target = os.path.abspath(path)
    base = os.path.basename(path)

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno == line:
            _boundary(f"line {base}:{line}")
        return local

    def tracer(frame, event, arg):
        name = frame.f_code.co_filename
        if name == target or (os.path.basename(name) == base and not os.path.isabs(path)):
            return local
        return None

    return tracer


def _tick(signum, frame) -> None:
    # SIGALRM, not a thread: the census and the probe's TorchFunctionMode (a
    # thread's own mode stack) must run on the program's main thread.
    _boundary(f"every {_state['every']:g} s")


_backwards: dict = {}  # backward() calls per step (by the steps done before it)
_real_backward = torch.autograd.backward


def _counting_backward(*args, **kwargs):
    # Tensor.backward calls torch.autograd.backward by attribute (torch/_tensor.py)
    step = _state["steps"]
    _backwards[step] = _backwards.get(step, 0) + 1
    return _real_backward(*args, **kwargs)


def _enter() -> None:
    kind = REQUEST.get("step_kind", "optimizer")
    torch.autograd.backward = _counting_backward
    _census_start()
    if kind == "optimizer":
        from torch.optim.optimizer import register_optimizer_step_post_hook

        _state["handle"] = register_optimizer_step_post_hook(_optimizer_hook)
    elif kind == "function":
        sys.settrace(_tracer_for_function(REQUEST["step"]))
    elif kind == "line":
        path, line = REQUEST["step"].rsplit(":", 1)
        sys.settrace(_tracer_for_line(path, int(line)))
    elif kind == "every":
        _state["every"] = seconds = float(REQUEST["every"])
        signal.signal(signal.SIGALRM, _tick)
        signal.setitimer(signal.ITIMER_REAL, seconds, seconds)


def _census_start() -> None:
    _state["started"] = time.perf_counter()
    if REQUEST.get("snapshot") and torch.cuda.is_available():
        # The allocator's history, for the snapshot memory_viz reads
        # (torch/cuda/memory.py _record_memory_history).
        torch.cuda.memory._record_memory_history(max_entries=100000)
    _write()


def _cuda_summary():
    """The caching allocator at the end: allocated, reserved, the fragmented part
    (inactive split blocks), and what empty_cache() gives back (the segments with
    nothing allocated in them: it releases only those)."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    stats = torch.cuda.memory_stats()
    free_segments = sum(
        seg["total_size"] for seg in torch.cuda.memory_snapshot() if seg["allocated_size"] == 0
    )
    found = {
        "allocated": stats.get("allocated_bytes.all.current", 0),
        "reserved": stats.get("reserved_bytes.all.current", 0),
        "peak": stats.get("allocated_bytes.all.peak", 0),
        "inactive_split": stats.get("inactive_split_bytes.all.current", 0),
        "empty_cache_gain": free_segments,
        "ooms": stats.get("num_ooms", 0),
        "snapshot": None,
    }
    try:
        free, total = torch.cuda.mem_get_info()
        found["driver_used"] = total - free
    except RuntimeError:
        pass
    path = REQUEST.get("snapshot")
    if path:
        try:
            torch.cuda.memory._dump_snapshot(path)
            found["snapshot"] = path
        except Exception as exc:  # noqa: BLE001 - said, not fatal
            found["snapshot_error"] = repr(exc)
    return found


def _leave() -> None:
    sys.settrace(None)
    torch.autograd.backward = _real_backward
    if "every" in _state:
        signal.setitimer(signal.ITIMER_REAL, 0)
    handle = _state.pop("handle", None)
    if handle is not None:
        handle.remove()
    if _probe["mode"] is not None:
        _stop_mode()
    if _state.get("profiler") is not None:  # the program ended inside the window
        prof = _state.pop("profiler")
        with contextlib.suppress(Exception):
            prof.__exit__(None, None, None)
            _state["peak"] = _peak_of(prof, _state["steps"])
    try:
        _state["cuda"] = _cuda_summary()
    except Exception as exc:  # noqa: BLE001 - onboard's failure, never the program's
        _state.setdefault("errors", []).append(repr(exc))


status, _namespace = run_user_program(_enter, _leave)
status["errors"] = _state.get("errors", [])
_write(status)
sys.stdout.flush()
sys.stderr.flush()
os._exit(int(status["exit_code"]))
