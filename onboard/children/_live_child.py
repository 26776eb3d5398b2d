# Runs INSIDE the target interpreter via `python -c` (this is the one place
# where torch is imported): answers every live question `onboard where` has
# in one run, as one JSON object (onboard_answer).
#   argv[1]: JSON {"entries": [dotted names], "ops": ["aten::trunc", ...], "record": bool,
#                  "group_overloads": bool}
# Each entry says which aten op its name stands for by torch's metadata ("aten",
# "aten_from": its generated binding, or the ops named like it) and, with
# "record", which ops a call on meta tensors reached ("top_ops", "dispatched",
# or the "call_error" that stopped it).
import contextlib
import functools
import importlib
import inspect
import io
import json
import sys
import warnings

import onboard_answer

request = json.loads(sys.argv[1])
warnings.simplefilter("ignore")

import torch  # noqa: E402
from torch.autograd.profiler import profile  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

# The autograd profiler itself, not torch.profiler.profile: the latter's start
# asks `hasattr(torch, "_inductor")`, which imports inductor and dynamo (two
# seconds of a first `where`) only to read a CUDA-graphs setting.

out: dict = {
    "torch_version": str(torch.__version__),
    "torch_file": torch.__file__,
    "entries": [],
    "dumps": {},
}
_ALIASES = {"F": "torch.nn.functional", "Tensor": "torch.Tensor", "nn": "torch.nn"}


def resolve(dotted):
    parts = dotted.split(".")
    if parts[0] in _ALIASES:
        parts = _ALIASES[parts[0]].split(".") + parts[1:]
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None, ".".join(parts)
        return obj, ".".join(parts)
    return None, ".".join(parts)


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if name not in self.ops:
            self.ops.append(name)
        return func(*args, **(kwargs or {}))


SKIP = "skip"
NONE = "none-value"  # an optional argument given as None


def meta_value(arg):
    t = str(arg.type)
    if arg.default_value is not None or arg.kwarg_only:
        return SKIP
    if t.endswith("?") or t.startswith("Optional["):
        # (the schema prints `ScalarType? dtype=None` as Optional[int] with no default):
        # None, in its place, as a later argument may be required (native_layer_norm)
        return NONE
    if t == "Tensor":
        return torch.empty(2, 2, device="meta")
    if t in ("Tensor[]", "List[Tensor]"):
        return [torch.empty(2, 2, device="meta")] * 2
    if t == "int" or t == "SymInt":
        return 1
    if t.startswith(("int[", "List[int]", "SymInt[", "List[SymInt]")):
        return [2, 2]
    if t == "float":
        return 1.0
    if t == "bool":
        return False
    if t in ("Scalar", "number"):
        return 1
    if t == "ScalarType":
        return torch.float32
    if t == "str":
        return "none"
    return None


def argument_sets(name):
    """Meta-tensor arguments for `name`, from the aten schemas of that name."""
    sets = []
    for schema in torch._C._jit_get_schemas_for_operator("aten::" + name):
        values: list = []
        usable = True
        for arg in schema.arguments:
            v = meta_value(arg)
            if isinstance(v, str) and v == SKIP:
                continue
            if v is None:
                usable = False
                break
            values.append(None if isinstance(v, str) and v == NONE else v)
        if usable:
            sets.append(values)
    sets.append([torch.empty(2, 2, device="meta")])
    sets.append([torch.empty(2, 2, device="meta"), torch.empty(2, 2, device="meta")])
    return sets


# The modules of torch's generated bindings for the yaml's `python_module:` (their
# functions are named as the op: torch.fft.fftfreq is torch._C._fft.fft_fftfreq),
# and the prefix the yaml gives those ops.
_MODULE_PREFIX = {
    "torch.fft": "fft_",
    "torch.linalg": "linalg_",
    "torch.special": "special_",
    "torch.sparse": "sparse_",
    "torch.nested": "nested_",
}


def has_schema(name):
    try:
        return bool(torch._C._jit_get_schemas_for_operator("aten::" + name))
    except Exception:
        return False


def named_ops(obj, full):
    """The aten op a Python name stands for, from torch's own metadata (no call):
    ("binding", [op]) for a generated binding (a builtin named as its op:
    torch.masked_select, Tensor.scatter_add_, torch._C._fft.fft_fftfreq), else
    ("name", [ops]) for the ops named like it (torch.linalg.X: linalg_X, then X),
    only names the binary has a schema for; (None, []) when none."""
    if type(obj).__name__ in ("builtin_function_or_method", "method_descriptor"):
        binding = getattr(obj, "__name__", None)
        if isinstance(binding, str) and has_schema(binding):
            return "binding", [binding]
    module, _, leaf = full.rpartition(".")
    prefix = _MODULE_PREFIX.get(module)
    names = ([prefix + leaf] if prefix else []) + [leaf]
    found = [n for n in dict.fromkeys(names) if has_schema(n)]
    return ("name", found) if found else (None, [])


def record(obj, name):
    """Call `obj` on meta tensors (no data, no device work) and note the aten ops."""
    last_error = None
    for args in argument_sets(name):
        recorder = Recorder()
        try:
            with (
                contextlib.redirect_stderr(io.StringIO()),
                profile(use_cpu=True) as prof,
                recorder,
            ):
                obj(*args)
        except Exception as exc:  # the wrong arguments for this overload: try the next
            first = str(exc).splitlines()[0] if str(exc) else ""
            last_error = f"{type(exc).__name__}: {first}"
            continue
        top = []
        for event in prof.function_events:
            if (
                event.cpu_parent is None
                and event.name.startswith("aten::")
                and event.name not in top
            ):
                top.append(event.name)
        return {"top_ops": top, "dispatched": recorder.ops, "call_error": None}
    return {"top_ops": [], "dispatched": [], "call_error": last_error}


for dotted in request.get("entries", []):
    obj, full = resolve(dotted)
    entry: dict = {"query": dotted, "name": full, "exists": obj is not None}
    if obj is not None:
        entry["kind"] = type(obj).__name__
        entry["module"] = getattr(obj, "__module__", None)
        source = None
        try:
            target = inspect.unwrap(obj)
            path = inspect.getsourcefile(target)
            _lines, start = inspect.getsourcelines(target)
            source = {"path": path, "line": start}
        except (TypeError, OSError):
            source = None
        entry["source"] = source
        entry["callable"] = callable(obj)
        entry["aten_from"], entry["aten"] = named_ops(obj, full)
        if request.get("record") and callable(obj) and not isinstance(obj, type):
            # The schemas of the op it names give the dummy arguments (fftfreq: fft_fftfreq's).
            named = entry["aten"][0] if entry["aten"] else full.rsplit(".", 1)[-1]
            entry.update(record(obj, named))
    out["entries"].append(entry)


def op_name(overload_packet):
    """`aten.add.Tensor` -> `aten::add.Tensor`; `aten.t.default` -> `aten::t`."""
    ns, _, rest = overload_packet.partition(".")
    name, _, overload = rest.rpartition(".")
    return f"{ns}::{name}" if overload == "default" else f"{ns}::{name}.{overload}"


def overloads(top):
    """Every overload of an op and of its inplace twin: aten::trunc -> trunc, trunc.out, trunc_."""
    name = top.split("::", 1)[1].split(".", 1)[0]
    found = []
    for n in dict.fromkeys([name, name.rstrip("_"), name.rstrip("_") + "_"]):
        try:
            schemas = torch._C._jit_get_schemas_for_operator("aten::" + n)
        except Exception:
            continue
        for schema in schemas:
            found.append(
                "aten::" + n + ("." + schema.overload_name if schema.overload_name else "")
            )
    return found


def source_of(fn):
    """{path, line, name} of a Python function: the line of its `def`, past decorators."""
    target = inspect.unwrap(fn)
    if isinstance(target, functools.partial):
        target = inspect.unwrap(target.func)
    try:
        path = inspect.getsourcefile(target)
        lines, start = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return None
    name = getattr(target, "__name__", "")
    for i, text in enumerate(lines[:40]):
        if text.lstrip().startswith(("def ", "async def ")) and name in text:
            start += i
            break
    qualname = getattr(target, "__qualname__", name)
    return {"path": path, "line": start, "name": f"{target.__module__}.{qualname}"}


def python_kernels(name):
    """The Python side of ONE op overload's dispatch, as plain JSON-able data.

    `kernels`: each dispatch key with a Python kernel (OpOverload.py_kernels: what
    torch.library and torch._meta_registrations register), the function that
    implements it and which registry it came from; `decomposition`: the
    torch._decomp entry torch.compile and export use. Kept per op so that an
    index of the whole dispatch table can call it op by op.
    """
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    try:
        op = getattr(getattr(getattr(torch.ops, ns), base), overload or "default")
    except (AttributeError, RuntimeError) as exc:
        return {"kernels": [], "decomposition": None, "error": str(exc).splitlines()[0]}
    from torch._decomp import global_decomposition_table

    tables = [(kind, global_decomposition_table[kind].get(op)) for kind in
              ("meta", "post_autograd", "pre_autograd")]  # fmt: skip
    kernels = []
    for key, fn in list(op.py_kernels.items()):
        key_name = key.name if isinstance(key, torch._C.DispatchKey) else getattr(
            key, "__qualname__", str(key)
        )  # fmt: skip
        via = next((kind for kind, entry in tables if entry is fn), None)
        kernels.append({"key": key_name, "function": source_of(fn), "via": via})
    decomposition = global_decomposition_table["post_autograd"].get(op)
    return {
        "kernels": kernels,
        "decomposition": source_of(decomposition) if decomposition is not None else None,
        "error": None,
    }


ops = list(request.get("ops", []))
for entry in out["entries"]:
    if request.get("group_overloads"):
        # The op it names by metadata as well as the ones a call reached: a call that
        # failed must not cost the table.
        for top in ["aten::" + n for n in entry.get("aten", [])] + entry.get("top_ops", []):
            for name in overloads(top):
                if name not in ops:
                    ops.append(name)
    for name in entry.get("top_ops", []) + [op_name(d) for d in entry.get("dispatched", [])]:
        if name not in ops:
            ops.append(name)
out["python_kernels"] = {}
for name in ops:
    try:
        out["python_kernels"][name] = python_kernels(name)
    except Exception as exc:  # one op's registries must not cost the others' answers
        out["python_kernels"][name] = {"kernels": [], "decomposition": None, "error": str(exc)}
    try:
        out["dumps"][name] = torch._C._dispatch_dump(name)
    except Exception as exc:
        out["dumps"][name] = None
        out.setdefault("dump_errors", {})[name] = (
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        )

onboard_answer.answer(out)
