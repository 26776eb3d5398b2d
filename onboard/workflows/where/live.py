"""What `where` asks the installed torch (in a child: ``children/_live_child.py``), and
the op's live dispatch table read from the answer.

The questions: an op's Python entry points and, per overload, its live dispatch
table. Answers come from the live index (every op, asked once per torch) when it
holds them, else from a child asked about this op alone. The table
(``torch._C._dispatch_dump`` of the installed binary) is shown key by key at the
line that registers or writes each kernel, with the Python kernels the table does not
list (decompositions, Python-dispatcher kernels).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onboard.workflows.opsource import codegen, live
from onboard.workflows.opsource.anatomy import KernelSite, Registration
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.live_index import LiveIndex
from onboard.workflows.opsource.native_yaml import NativeEntry, YamlIndex, op_name

# The short names the live child resolves (children/_live_child.py: _ALIASES).
ALIASES = {"F": "torch.nn.functional", "Tensor": "torch.Tensor", "nn": "torch.nn"}
# How a Python name's op was told (the live child's entry "aten_from", or a call).
BINDING = "binding"  # a generated binding, named as its op (THPVariable_masked_select)
NAME = "name"  # a Python function named like an op of the yaml (F.log_softmax)
CALL = "call"  # the op a call on meta tensors reached


def entry_candidates(base: str, functions: list[NativeEntry]) -> list[str]:
    """The Python names an op may have, for each op name of the group (``add``,
    ``add_``, ``__iand__``): torch.X, Tensor.X, F.X, torch.linalg.X, ..."""
    names: list[str] = []
    for name in dict.fromkeys([base] + [op_name(f.name) for f in functions]):
        own = [f for f in functions if op_name(f.name) == name] or functions
        variants = {v for f in own for v in f.variants}
        modules = {f.python_module for f in own}
        names += [f"torch.{name}", f"torch.{name}_"]
        if "method" in variants:
            names += [f"torch.Tensor.{name}", f"torch.Tensor.{name}_"]
        names.append(f"torch.nn.functional.{name}")
        for module in ("special", "linalg", "fft", "sparse", "nested"):
            if module in modules or name.startswith(module + "_"):
                short = name[len(module) + 1 :] if name.startswith(module + "_") else name
                names.append(f"torch.{module}.{short}")
        if "nn" in modules:
            names.append(f"torch._C._nn.{name}")
    return list(dict.fromkeys(names))


def op_request(base: str, functions: list[NativeEntry]) -> dict[str, Any]:
    """The live question about an op: its Python entry points and its overloads."""
    return {
        "entries": entry_candidates(base, functions),
        "ops": [f"aten::{f.name}" for f in functions],
        "record": True,
        "group_overloads": False,
    }


def every_request(yaml: YamlIndex) -> dict[str, dict[str, Any]]:
    """The question about every op of the yaml (for the live index), by base name."""
    groups: dict[str, list[NativeEntry]] = {}
    for f in yaml.functions:
        groups.setdefault(f.base, []).append(f)
    return {base: op_request(base, functions) for base, functions in groups.items()}


def narrowed(answer: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """An op's whole answer cut to a question about some of its overloads (``mm.out``):
    the entry points and dumps that question names, in its order."""
    by_query = {e.get("query"): e for e in answer["entries"] if isinstance(e, dict)}
    return {
        **answer,
        "entries": [by_query[q] for q in request["entries"] if q in by_query],
        "dumps": {op: answer["dumps"][op] for op in request["ops"] if op in answer["dumps"]},
        "python_kernels": {
            op: kernels
            for op, kernels in (answer.get("python_kernels") or {}).items()
            if op in request["ops"]
        },
    }


def python_op(yaml: YamlIndex, entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """The yaml op a Python entry point (the live child's answer about it) stands for and
    how that was told: its generated binding's op or an op named like it (torch's
    metadata, no call), else the first op a call on meta tensors reached; (None, None)
    when none is in the yaml."""
    ops = {op_name(f.name) for f in yaml.functions}
    for name in entry.get("aten", []):
        if name in ops:
            return str(name), str(entry.get("aten_from") or NAME)
    for top in entry.get("top_ops", []):
        name = op_name(str(top).split("::", 1)[-1])
        if name in ops:
            return name, CALL
    return None, None


@dataclass(frozen=True)
class LiveAnswers:
    """The questions of one `where` run, answered from the index or a child."""

    ctx: TreeContext
    index: LiveIndex
    yaml: YamlIndex
    refresh: bool

    def about_python(self, name: str) -> dict[str, Any]:
        """The answer about a Python name: its entry (what it reaches) and those ops' dumps."""
        stored = None if self.refresh else self._python_from_index(name)
        if stored is not None:
            return stored
        return self._ask({"entries": [name], "ops": [], "record": True, "group_overloads": True})

    def about_op(self, base: str, functions: list[NativeEntry]) -> dict[str, Any]:
        """The answer about ``functions``, some or all overloads of the group ``base``."""
        request = op_request(base, functions)
        whole = op_request(base, self.yaml.group(base))
        stored = None if self.refresh else self.index.lookup(base, whole)
        return narrowed(stored, request) if stored is not None else self._ask(request)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        return live.ask(
            self.ctx.python,
            request,
            cache_id=self.ctx.cache_id,
            index=self.index,
            every=lambda: every_request(self.yaml),
            reporter=self.ctx.reporter,
            refresh=self.refresh,
        )

    def _python_from_index(self, name: str) -> dict[str, Any] | None:
        """The answer about a Python entry point, from the index: its entry, and the dumps
        of the op it reaches; None when the index does not hold both."""
        full = ALIASES.get(name.split(".", 1)[0])
        entry = self.index.entry(f"{full}.{name.split('.', 1)[1]}" if full else name)
        op = python_op(self.yaml, entry)[0] if entry is not None else None
        if entry is None or op is None:
            return None
        op_base = self.yaml.base_of(op)
        stored = self.index.lookup(op_base, op_request(op_base, self.yaml.group(op_base)))
        if stored is None:
            return None
        return {**stored, "entries": [entry]}


def dispatch_table(
    ctx: TreeContext, functions: list[NativeEntry], answer: dict[str, Any], generated: bool
) -> tuple[list[Registration], list[KernelSite]]:
    """The table's rows for each overload in ``functions`` (their dumps in the live
    ``answer``), and the Python-only kernels beside them."""
    dumps = answer.get("dumps", {})
    rows: list[Registration] = []
    python_sites: list[KernelSite] = []
    for f in functions:
        name = f"aten::{f.name}"
        text = dumps.get(name)
        if not text:
            continue
        python_side = answer.get("python_kernels", {}).get(name) or {}
        rows.extend(_registrations(ctx, name, text, python_side, generated))
        python_sites.extend(_python_only_kernels(ctx, name, text, python_side))
    return rows, python_sites


def generated_notes(rows: list[Registration], base: str) -> list[str]:
    """Why some rows show no text: the files the build generates are not in git."""
    unread = {r.location.path for r in rows if r.location.generated}
    unread -= {r.location.path for r in rows if r.location.local}
    if any(p.startswith(codegen.GENERATED_ATEN) for p in unread):
        return [
            "Files under build/ and torch/csrc/autograd/generated/ are written by the build's "
            "code generation and are not in git. `onboard where "
            f"{base} --generated` regenerates build/aten/src/ATen with torchgen (cached per "
            "commit) to show those lines."
        ]
    if unread:
        return [
            "Files under torch/csrc/autograd/generated/ are written by the build's autograd "
            "code generation (tools/autograd), which --generated does not rerun: their lines "
            "are as the binary names them, with no text."
        ]
    return []


def _registrations(
    ctx: TreeContext, op: str, dump: str, python_side: dict[str, Any], generated: bool
) -> list[Registration]:
    """The dump's lines for one op; a kernel registered from Python shown at its function.

    ``_dispatch_dump`` names only the ``torch.library.Library(...)`` line a Python
    kernel was registered through (every Meta kernel of torch/_meta_registrations.py
    reads ``:54``); the op's ``py_kernels`` name the function.
    """
    smap = ctx.source_map
    by_key = {k["key"]: k for k in python_side.get("kernels", []) if k.get("function")}
    regs = live.parse_dispatch_dump(dump)
    python_keys = {
        r.key for r in regs if r.path.endswith(".py") and not r.inactive and r.key in by_key
    }
    out: list[Registration] = []
    for reg in regs:
        if reg.key == "schema" and not generated:
            continue
        at = smap.map(reg.path, reg.line)
        plain_key = reg.key.removesuffix(" (inactive)")
        kernel = by_key.get(reg.key) if reg.path.endswith(".py") and not reg.inactive else None
        if kernel is not None:
            fn = kernel["function"]
            out.append(
                Registration(
                    op,
                    reg.key,
                    smap.map(fn["path"], fn["line"]),
                    reg.alias,
                    reg.inactive,
                    registered_at=at,
                    implementation=fn["name"],
                    via=kernel.get("via"),
                )
            )
            continue
        shadow = None
        if reg.inactive and plain_key in python_keys:
            shadow = f"the Python {plain_key} kernel above runs instead"
        elif reg.inactive:
            shadow = f"another {plain_key} kernel runs instead"
        made = codegen.wrapper_at(smap, at, op)
        if made is not None:  # the wrapper torchgen wrote, not its registration block
            out.append(
                Registration(
                    op, reg.key, made[1], reg.alias, reg.inactive, at, implementation=made[0],
                    shadowed_by=shadow,
                )
            )  # fmt: skip
            continue
        out.append(Registration(op, reg.key, at, reg.alias, reg.inactive, shadowed_by=shadow))
    return out


def _python_only_kernels(
    ctx: TreeContext, op: str, dump: str, python_side: dict[str, Any]
) -> list[KernelSite]:
    """Decompositions and Python-dispatcher kernels: Python code the binary's table does
    not list, which torch.compile and export run instead of the C++ kernels."""
    smap = ctx.source_map
    in_dump = {r.key for r in live.parse_dispatch_dump(dump) if r.path.endswith(".py")}
    sites: list[KernelSite] = []
    decomposition = python_side.get("decomposition")
    if decomposition:
        sites.append(
            KernelSite(
                "decomposition",
                decomposition["name"],
                smap.map(decomposition["path"], decomposition["line"]),
                (),
                f"{op} in torch._decomp's post_autograd table",
            )
        )
    for kernel in python_side.get("kernels", []):
        fn = kernel.get("function")
        if fn and kernel["key"] not in in_dump:
            sites.append(
                KernelSite(
                    "python_dispatcher",
                    fn["name"],
                    smap.map(fn["path"], fn["line"]),
                    (kernel["key"],),
                    f"{op}: OpOverload.py_kernels[{kernel['key']}]",
                )
            )
    return sites
