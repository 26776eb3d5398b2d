"""`onboard where OP`: an op's whole anatomy, for the installed commit.

From the Python entry points (``torch.trunc``, ``Tensor.trunc``) through the
yaml entries (native_functions.yaml, read by torchgen), the live dispatch
table of the installed binary (``torch._C._dispatch_dump``), the kernels in
the checkout (structured meta/impl functions or the plain functions the
yaml's ``dispatch:`` names, the DispatchStub's declare/define/register and
kernel bodies), to the derivative formula and the OpInfo entry. Every place
is given as ``path:line`` in the checkout and as a GitHub link at the commit.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onboard.errors import BadInput
from onboard.report import Reporter
from onboard.workflows.opsource import codegen, live
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.live_index import LiveIndex
from onboard.workflows.opsource.native_yaml import DERIVATIVES, NATIVE_FUNCTIONS
from onboard.workflows.opsource.paths import SourceLoc

if TYPE_CHECKING:
    from rich.console import Console

OPINFO_FILE = "torch/testing/_internal/common_methods_invocations.py"
# The Python bindings of torch.X / Tensor.X are generated from the yaml by
# tools/autograd/gen_python_functions.py into these (not in git).
_BINDINGS = {
    "torch": "torch/csrc/autograd/generated/python_torch_functions_*.cpp",
    "Tensor": "torch/csrc/autograd/generated/python_variable_methods.cpp",
    "nn": "torch/csrc/autograd/generated/python_nn_functions.cpp",
}
_PY_ROOTS = ("torch.", "Tensor.", "F.", "nn.")
_OP_NAME = re.compile(r"^(?:aten::)?(?P<name>[A-Za-z_]\w*)(?:\.(?P<overload>\w+))?$")


@dataclass(frozen=True)
class EntryPoint:
    name: str  # torch.nn.functional.linear
    kind: str  # builtin_function_or_method / function / method_descriptor
    source: SourceLoc | None  # the Python definition, when it is Python
    binding: str | None  # the generated C++ binding for builtins
    top_ops: tuple[str, ...]  # aten ops the call enters first (profiler)
    dispatched: tuple[str, ...]  # ops that reached the backend (TorchDispatchMode)
    call_error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source.to_json() if self.source else None,
            "binding": self.binding,
            "reaches": list(self.top_ops),
            "dispatched": list(self.dispatched),
            "call_error": self.call_error,
        }


@dataclass(frozen=True)
class YamlEntry:
    name: str  # trunc.out
    schema: str
    kind: str  # functional / inplace / out / mutable / scratch
    location: SourceLoc
    variants: tuple[str, ...]
    structured: bool
    structured_delegate: str | None
    dispatch: dict[str, str]
    tags: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "schema": self.schema,
            "kind": self.kind,
            "location": self.location.to_json(),
            "variants": list(self.variants),
            "structured": self.structured,
            "structured_delegate": self.structured_delegate,
            "dispatch": self.dispatch,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class Registration:
    op: str  # aten::trunc
    key: str  # CPU
    location: SourceLoc
    alias: bool
    inactive: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "key": self.key,
            "alias": self.alias,
            "inactive": self.inactive,
            "location": self.location.to_json(),
        }


@dataclass(frozen=True)
class KernelSite:
    role: str  # meta / impl / kernel / stub_declare / stub_define / stub_register / stub_kernel
    name: str
    location: SourceLoc
    keys: tuple[str, ...] = ()  # the dispatch keys that name this kernel
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "name": self.name,
            "keys": list(self.keys),
            "detail": self.detail,
            "location": self.location.to_json(),
        }


@dataclass(frozen=True)
class Derivative:
    name: str
    location: SourceLoc
    formulas: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "location": self.location.to_json(), "formulas": self.formulas}


@dataclass
class WhereResult:
    query: str
    op: str  # the aten base name (trunc)
    commit: str | None
    checkout: str
    checkout_kind: str
    entry_points: list[EntryPoint] = field(default_factory=list)
    yaml_entries: list[YamlEntry] = field(default_factory=list)
    dispatch: list[Registration] = field(default_factory=list)
    kernels: list[KernelSite] = field(default_factory=list)
    kernels_not_found: dict[str, list[str]] = field(default_factory=dict)  # kernel -> keys
    derivatives: list[Derivative] = field(default_factory=list)
    opinfo: list[SourceLoc] = field(default_factory=list)
    decomposes_to: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    limitations: list[str] = field(default_factory=list)
    generated_dir: str | None = None
    warm: dict[str, bool] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "query": self.query,
            "op": self.op,
            "commit": self.commit,
            "checkout": self.checkout,
            "checkout_kind": self.checkout_kind,
            "entry_points": [e.to_json() for e in self.entry_points],
            "yaml": [e.to_json() for e in self.yaml_entries],
            "dispatch_table": [r.to_json() for r in self.dispatch],
            "kernels": [k.to_json() for k in self.kernels],
            "kernels_not_found": self.kernels_not_found,
            "derivatives": [d.to_json() for d in self.derivatives],
            "opinfo": [o.to_json() for o in self.opinfo],
            "decomposes_to": self.decomposes_to,
            "generated_dir": self.generated_dir,
            "notes": self.notes,
            "limitations": self.limitations,
            "cache_warm": self.warm,
        }

    def render(self, console: Console, verbose: bool) -> None:
        from rich.markup import escape

        def loc_line(label: str, loc: SourceLoc | None, extra: str = "") -> None:
            if loc is None:
                console.print(f"  {escape(label)}{escape(extra)}")
                return
            where = loc.label
            if loc.generated and not loc.local:
                where += " (generated by the build, not in git)"
            elif not loc.in_checkout and not loc.local:
                where += " (not in this checkout)"
            console.print(f"  {escape(label)}  [bold]{escape(where)}[/]{escape(extra)}")
            if loc.text and (verbose or not loc.generated):
                console.print(f"      [dim]{escape(loc.text.strip())}[/]")
            if loc.url:
                console.print(f"      [blue]{escape(loc.url)}[/]")

        console.print(
            f"[bold]{escape(self.query)}[/] -> aten::{escape(self.op)}  "
            f"(commit {escape((self.commit or 'unknown')[:12])}, {escape(self.checkout_kind)} "
            f"checkout {escape(self.checkout)})"
        )
        if self.entry_points:
            console.print("\n[bold cyan]Python entry points[/]")
            for e in self.entry_points:
                reaches = ", ".join(e.top_ops) or "?"
                extra = f"  -> {reaches}"
                if e.dispatched and list(e.dispatched) != [
                    t.replace("::", ".") + ".default" for t in e.top_ops
                ]:
                    extra += f" (runs {', '.join(e.dispatched)})"
                if e.source is not None:
                    loc_line(e.name, e.source, extra)
                else:
                    console.print(f"  {escape(e.name)}  [dim]{escape(e.kind)}[/]{escape(extra)}")
                    if e.binding:
                        console.print(f"      [dim]binding: {escape(e.binding)}[/]")
                if e.call_error and verbose:
                    console.print(f"      [dim]meta call: {escape(e.call_error)}[/]")
        console.print(f"\n[bold cyan]{NATIVE_FUNCTIONS}[/]")
        for y in self.yaml_entries:
            facts = [y.kind]
            if y.variants:
                facts.append("variants: " + ", ".join(y.variants))
            if y.structured:
                facts.append("structured")
            if y.structured_delegate:
                facts.append(f"structured_delegate: {y.structured_delegate}")
            if y.dispatch:
                facts.append(
                    "dispatch: " + ", ".join(f"{k}: {v}" for k, v in y.dispatch.items())
                    if verbose or len(y.dispatch) <= 4
                    else f"dispatch: {len(y.dispatch)} keys"
                )
            if y.tags:
                facts.append("tags: " + ", ".join(y.tags))
            console.print(f"  [bold]{escape(y.location.label)}[/]  {escape(y.schema)}")
            console.print(f"      [dim]{escape('; '.join(facts))}[/]")
            if y.location.url:
                console.print(f"      [blue]{escape(y.location.url)}[/]")
        if self.dispatch:
            console.print("\n[bold cyan]Dispatch table (live, from the installed binary)[/]")
            shown = self.dispatch if verbose else [r for r in self.dispatch if not r.inactive]
            # trunc, trunc_ and trunc.out usually share one registration line per key.
            grouped: dict[tuple[str, str], list[Registration]] = {}
            for r in shown:
                grouped.setdefault((r.key, r.location.label), []).append(r)
            for regs in grouped.values():
                ops = ", ".join(r.op.removeprefix("aten::") for r in regs)
                loc_line(f"{regs[0].key} ({ops}):", regs[0].location)
        if self.kernels or self.kernels_not_found:
            console.print("\n[bold cyan]Kernels in the checkout[/]")
            for k in self.kernels:
                label = {
                    "meta": "meta (TORCH_META_FUNC)",
                    "impl": "impl (TORCH_IMPL_FUNC)",
                    "kernel": "kernel",
                    "stub_declare": "DECLARE_DISPATCH",
                    "stub_define": "DEFINE_DISPATCH",
                    "stub_register": "REGISTER_DISPATCH",
                    "stub_kernel": "stub kernel body",
                }.get(k.role, k.role)
                keys = f" [{', '.join(k.keys)}]" if k.keys else ""
                loc_line(
                    f"{label} {k.name}{keys}",
                    k.location,
                    f"  {k.detail}" if verbose and k.detail else "",
                )
        if self.kernels_not_found:
            missing = "; ".join(
                f"{name} ({', '.join(keys)})" for name, keys in self.kernels_not_found.items()
            )
            console.print(f"  [dim]not found in this checkout: {escape(missing)}[/]")
        if self.derivatives:
            console.print(f"\n[bold cyan]{DERIVATIVES}[/]")
            for d in self.derivatives:
                loc_line(d.name, d.location)
                for key, formula in d.formulas.items():
                    console.print(f"      [dim]{escape(key)}: {escape(formula)}[/]")
        if self.opinfo:
            console.print("\n[bold cyan]OpInfo (the op's tests)[/]")
            for o in self.opinfo:
                loc_line("", o)
        if self.decomposes_to:
            console.print(
                "\n[dim]On meta tensors the call runs as: "
                + escape(", ".join(self.decomposes_to))
                + "[/]"
            )
        for note in self.notes:
            console.print(f"\n[yellow]Note:[/] {escape(note)}")
        for limit in self.limitations:
            console.print(f"\n[yellow]Limitation:[/] {escape(limit)}")


def parse_query(query: str) -> tuple[str, str, str | None]:
    """("op"|"python", name, overload) for ``trunc``, ``aten::mm.out``, ``torch.X.y``."""
    text = query.strip()
    if not text:
        raise BadInput(
            "No op was given.",
            next_step="Name one: `onboard where trunc`, `onboard where aten::mm.out` or "
            "`onboard where torch.nn.functional.linear`.",
        )
    if text.startswith(_PY_ROOTS) and not text.startswith("aten::"):
        if not re.fullmatch(r"[A-Za-z_][\w.]*", text):
            raise BadInput(
                f"{query!r} is not a Python name.",
                next_step="Give a dotted name such as `torch.nn.functional.linear` or "
                "`Tensor.trunc`.",
            )
        return "python", text, None
    mo = _OP_NAME.match(text)
    if not mo:
        raise BadInput(
            f"{query!r} is neither an aten op name nor a Python entry point.",
            next_step="Use `onboard where trunc`, `onboard where aten::mm.out` or "
            "`onboard where torch.trunc`.",
        )
    return "op", mo.group("name"), mo.group("overload")


def _entry_candidates(base: str, functions: list[dict[str, Any]]) -> list[str]:
    variants = {v for f in functions for v in f["variants"]}
    modules = {f.get("python_module") for f in functions}
    names = [f"torch.{base}", f"torch.{base}_"]
    if "method" in variants:
        names += [f"torch.Tensor.{base}", f"torch.Tensor.{base}_"]
    names.append(f"torch.nn.functional.{base}")
    for module in ("special", "linalg", "fft", "sparse", "nested"):
        if module in modules or base.startswith(module + "_"):
            short = base[len(module) + 1 :] if base.startswith(module + "_") else base
            names.append(f"torch.{module}.{short}")
    if "nn" in modules:
        names.append(f"torch._C._nn.{base}")
    return list(dict.fromkeys(names))


def _op_request(base: str, functions: list[dict[str, Any]]) -> dict[str, Any]:
    """The live question about an op: its Python entry points and its overloads."""
    return {
        "entries": _entry_candidates(base, functions),
        "ops": [f"aten::{f['name']}" for f in functions],
        "record": True,
        "group_overloads": False,
    }


def _every_request(yaml: Any) -> dict[str, dict[str, Any]]:
    """The question about every op of the yaml (for the live index), by base name."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for f in yaml.functions:
        groups.setdefault(f["base"], []).append(f)
    return {base: _op_request(base, functions) for base, functions in groups.items()}


def _narrowed(answer: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """An op's whole answer cut to a question about some of its overloads (``mm.out``):
    the entry points and dumps that question names, in its order."""
    by_query = {e.get("query"): e for e in answer["entries"] if isinstance(e, dict)}
    return {
        **answer,
        "entries": [by_query[q] for q in request["entries"] if q in by_query],
        "dumps": {op: answer["dumps"][op] for op in request["ops"] if op in answer["dumps"]},
    }


def _python_from_index(index: LiveIndex, yaml: Any, name: str) -> dict[str, Any] | None:
    """The answer about a Python entry point, from the index: its entry, and the dumps of
    the op it reaches; None when the index does not hold both."""
    full = _ALIASES.get(name.split(".", 1)[0])
    entry = index.entry(f"{full}.{name.split('.', 1)[1]}" if full else name)
    if entry is None or not entry.get("top_ops"):
        return None
    op_base = _base_of(yaml, str(entry["top_ops"][0]).split("::", 1)[-1])
    stored = index.lookup(op_base, _op_request(op_base, yaml.group(op_base)))
    if stored is None:
        return None
    return {**stored, "entries": [entry]}


# The short names the live child resolves (_live_child.py: _ALIASES).
_ALIASES = {"F": "torch.nn.functional", "Tensor": "torch.Tensor", "nn": "torch.nn"}


def _select(
    functions: list[dict[str, Any]], overload: str | None, name: str
) -> list[dict[str, Any]]:
    if overload is None:
        return functions
    wanted = f"{name}.{overload}"
    exact = [f for f in functions if f["name"] == wanted]
    if not exact:
        return []
    delegate = exact[0]["structured_delegate"]
    return [
        f
        for f in functions
        if f["name"] == wanted or f["name"] == delegate or f["structured_delegate"] == wanted
    ]


def _binding(name: str, kind: str) -> str | None:
    if kind not in ("builtin_function_or_method", "method_descriptor"):
        return None
    if name.startswith("torch.Tensor."):
        where = _BINDINGS["Tensor"]
    elif name.startswith(("torch.nn.functional.", "torch._C._nn.")):
        where = _BINDINGS["nn"]
    else:
        where = _BINDINGS["torch"]
    short = name.rsplit(".", 1)[-1]
    return f"THPVariable_{short} in {where}, generated from {NATIVE_FUNCTIONS}"


def where(
    query: str,
    *,
    workspace: str | None = None,
    python: str | None = None,
    generated: bool = False,
    refresh: bool = False,
    reporter: Reporter | None = None,
) -> WhereResult:
    reporter = reporter or Reporter()
    kind, name, overload = parse_query(query)
    ctx = TreeContext.open(workspace, python, reporter, refresh=refresh)
    index = LiveIndex(ctx.python, ctx.cache_id, reporter, refresh=refresh)
    index.prepare()  # torch imports in a child while the yaml is read
    try:
        return _where(query, kind, name, overload, ctx, index, generated, refresh, reporter)
    finally:
        index.stop()  # a child started for nothing (an unknown op)


def _where(
    query: str,
    kind: str,
    name: str,
    overload: str | None,
    ctx: TreeContext,
    index: LiveIndex,
    generated: bool,
    refresh: bool,
    reporter: Reporter,
) -> WhereResult:
    ws = ctx.ws
    # Three slow first-time steps at once: torchgen reads the yaml in one child, torch
    # imports in another (index.prepare), and the kernel index is built here.
    with ThreadPoolExecutor(max_workers=1) as pool:
        reading = pool.submit(ctx.yaml)
        try:
            ctx.kernels()
        finally:
            yaml = reading.result()

    def ask(request: dict[str, Any]) -> dict[str, Any]:
        return live.ask(
            ctx.python,
            request,
            cache_id=ctx.cache_id,
            index=index,
            every=lambda: _every_request(yaml),
            reporter=reporter,
            refresh=refresh,
        )

    if kind == "python":
        answer = None if refresh else _python_from_index(index, yaml, name)
        if answer is None:
            answer = ask({"entries": [name], "ops": [], "record": True, "group_overloads": True})
        entry = answer["entries"][0]
        if not entry["exists"]:
            raise BadInput(
                f"{name} does not exist in the installed torch ({answer['torch_version']}).",
                next_step="Check the spelling "
                "(`python -c 'import torch; help(torch.nn.functional)'`), "
                "or give the aten op name: `onboard where linear`.",
            )
        top = [t.split("::", 1)[1] for t in entry.get("top_ops", [])]
        if not top:
            # Nothing was recorded (the call needs real arguments): fall back to the name.
            short = name.rsplit(".", 1)[-1]
            top = [short] if yaml.group(short.rstrip("_")) or yaml.group(short) else []
        if not top:
            raise BadInput(
                f"onboard could not tell which aten op {name} reaches: calling it on meta tensors "
                f"failed ({entry.get('call_error') or 'no aten op was recorded'}) and no op in "
                f"{NATIVE_FUNCTIONS} has its name.",
                next_step="Name the aten op directly (`onboard where OP`), or run a call with "
                "`onboard locate -- python repro.py` to see the chain it takes.",
            )
        op_base = _base_of(yaml, top[0])
        functions = yaml.group(op_base)
        entries_answer = answer
        extra_entries = [entry]
    else:
        op_base = _base_of(yaml, name)
        functions = _select(yaml.group(op_base), overload, name)
        if not functions:
            suggestions = yaml.suggest(f"{name}.{overload}" if overload else name)
            raise BadInput(
                f"There is no op {query!r} in {NATIVE_FUNCTIONS} at this commit."
                + (f" Closest names: {', '.join(suggestions)}." if suggestions else ""),
                next_step=f"Run `onboard where {suggestions[0]}`."
                if suggestions
                else "Check the name against the yaml (`grep -n 'func: NAME' "
                f"{NATIVE_FUNCTIONS}`) or give a Python name such as `torch.trunc`.",
            )
        request = _op_request(op_base, functions)
        whole = _op_request(op_base, yaml.group(op_base))
        stored = None if refresh else index.lookup(op_base, whole)
        entries_answer = _narrowed(stored, request) if stored is not None else ask(request)
        extra_entries = []

    if generated:
        ctx.generated_dir = codegen.regenerate(ctx.python, ctx.checkout, ctx.tree_id, reporter)
    else:
        ctx.generated_dir = codegen.existing(ctx.checkout, ctx.tree_id)
    smap = ctx.source_map

    result = WhereResult(
        query=query,
        op=op_base,
        commit=ws.commit,
        checkout=str(ctx.checkout),
        checkout_kind=ws.checkout_kind,
        generated_dir=str(ctx.generated_dir) if ctx.generated_dir else None,
    )

    # Python entry points.
    seen_entries = set()
    for entry in extra_entries or entries_answer["entries"]:
        if not entry.get("exists") or entry["name"] in seen_entries:
            continue
        seen_entries.add(entry["name"])
        source = entry.get("source")
        result.entry_points.append(
            EntryPoint(
                name=entry["name"],
                kind=entry.get("kind", ""),
                source=smap.map(source["path"], source["line"]) if source else None,
                binding=_binding(entry["name"], entry.get("kind", "")),
                top_ops=tuple(entry.get("top_ops", [])),
                dispatched=tuple(entry.get("dispatched", [])),
                call_error=entry.get("call_error"),
            )
        )
        if kind == "python":
            result.decomposes_to = [
                d for d in entry.get("dispatched", []) if not d.startswith(f"aten.{op_base}.")
            ]

    # The yaml entries.
    for f in functions:
        result.yaml_entries.append(
            YamlEntry(
                name=f["name"],
                schema=f["schema"],
                kind=f["kind"],
                location=smap.loc(NATIVE_FUNCTIONS, f["line"]),
                variants=tuple(f["variants"]),
                structured=f["structured"],
                structured_delegate=f["structured_delegate"],
                dispatch=f["dispatch"],
                tags=tuple(f["tags"]),
            )
        )

    # The live dispatch table.
    dumps = entries_answer.get("dumps", {})
    for f in functions:
        op = f"aten::{f['name']}"
        text = dumps.get(op)
        if not text:
            continue
        for reg in live.parse_dispatch_dump(text):
            if reg.key == "schema" and not generated:
                continue
            result.dispatch.append(
                Registration(op, reg.key, smap.map(reg.path, reg.line), reg.alias, reg.inactive)
            )
    if any(r.location.generated and not r.location.local for r in result.dispatch):
        result.notes.append(
            "Files under build/ and torch/csrc/autograd/generated/ are written by the build's "
            "code generation and are not in git. `onboard where "
            f"{op_base} --generated` regenerates build/aten/src/ATen with torchgen (cached per "
            "commit) to show those lines."
        )

    # Kernels in the checkout.
    result.kernels, result.kernels_not_found = _kernels(ctx, functions)
    if ws.is_reference:
        limit = ws.limitation(
            "The kernel bodies (TORCH_META_FUNC / TORCH_IMPL_FUNC and the "
            "per-device stub kernels in .cpp/.cu files)"
        )
        if limit:
            result.limitations.append(limit)

    # Derivatives and OpInfo.
    names = {f["name"] for f in functions}
    for d in yaml.derivatives_for(names):
        result.derivatives.append(
            Derivative(d["name"], smap.loc(DERIVATIVES, d["line"]), d["formulas"])
        )
    if not (ctx.checkout / DERIVATIVES).is_file():
        result.notes.append(f"{DERIVATIVES} is not in this checkout.")
    result.opinfo = _opinfo(ctx, op_base)
    if not (ctx.checkout / OPINFO_FILE).is_file():
        result.notes.append(
            f"{OPINFO_FILE} is not in this checkout, so the OpInfo entry is not shown."
        )
    result.warm = dict(ctx.warm)
    return result


def _base_of(yaml: Any, name: str) -> str:
    entry = yaml.by_name.get(name)
    if entry is not None:
        return str(entry["base"])
    base = name.split(".", 1)[0]
    if yaml.group(base):
        return base
    stripped = base.rstrip("_")
    return stripped if yaml.group(stripped) else base


def _kernels(
    ctx: TreeContext, functions: list[dict[str, Any]]
) -> tuple[list[KernelSite], dict[str, list[str]]]:
    kidx = ctx.kernels()
    smap = ctx.source_map
    sites: list[KernelSite] = []
    seen: set[tuple[str, str, int]] = set()

    def add(
        role: str, name: str, path: str, line: int, keys: tuple[str, ...] = (), detail: str = ""
    ) -> None:
        if (role, path, line) in seen:
            return
        seen.add((role, path, line))
        sites.append(KernelSite(role, name, smap.loc(path, line), keys, detail))

    by_name = {f["name"]: f for f in functions}
    stub_names: list[str] = []
    missing: dict[str, list[str]] = {}
    for f in functions:
        if not f["dispatch"]:
            continue
        kernels_to_keys: dict[str, list[str]] = {}
        for key, kernel in f["dispatch"].items():
            kernels_to_keys.setdefault(kernel, []).append(key)
        if f["structured"]:
            # TORCH_META_FUNC is named after the functional op of the structured group.
            functional = next(
                (
                    g
                    for g in by_name.values()
                    if g["structured_delegate"] == f["name"] and g["kind"] == "functional"
                ),
                None,
            )
            meta_base = functional["base"] if functional else f["base"]
            meta_overload = functional["overload"] if functional else ""
            for hit in kidx.meta(meta_base, meta_overload):
                add("meta", hit.name, hit.path, hit.line, detail=hit.detail)
        for kernel, keys in kernels_to_keys.items():
            hits = kidx.impl(kernel) + kidx.created(kernel) if f["structured"] else []
            if not hits:
                hits = kidx.definitions(kernel)[:3]
            if not hits:
                missing.setdefault(kernel, [])
                missing[kernel].extend(k for k in keys if k not in missing[kernel])
            for hit in hits:
                add(hit.role, kernel, hit.path, hit.line, tuple(keys), hit.detail)
                lines = smap.lines(ctx.checkout / hit.path) or []
                if hit.detail.startswith("CREATE_"):
                    found = re.findall(r"\b(\w+_stub)\b", hit.detail)
                else:
                    from onboard.workflows.opsource.kernels import stubs_near

                    found = stubs_near(lines, hit.line)
                stub_names.extend(s for s in found if s not in stub_names)
        guess = f"{f['base']}_stub"
        if guess not in stub_names and kidx.stub(guess):
            stub_names.append(guess)
    for stub in stub_names:
        for hit in kidx.stub(stub):
            add(hit.role, hit.name, hit.path, hit.line, detail=hit.detail)
    return sites, missing


# `UnaryUfuncInfo('trunc', ...)`, and the Python reference's `torch_opinfo_name="trunc"`.
# ForeachFuncInfo('trunc') is the entry of _foreach_trunc, so it only counts for those.
_OPINFO_BEFORE = re.compile(r"(?:(?P<info>\w*Info)\(\s*|torch_opinfo_name\s*=\s*)$")


def _opinfo(ctx: TreeContext, base: str) -> list[SourceLoc]:
    from onboard.workflows.opsource import scan

    text = scan.read(ctx.checkout / OPINFO_FILE)
    if not text:
        return []
    foreach = base.startswith("_foreach_")
    name = base.removeprefix("_foreach_")
    starts: list[int] = []
    # str.find for the quoted name, then a look at what precedes it: a regex over the
    # whole 1 MB file costs ~0.1 s, this ~5 ms.
    for needle in (f"'{name}'", f'"{name}"'):
        at = text.find(needle)
        while at >= 0:
            mo = _OPINFO_BEFORE.search(text, max(0, at - 120), at)
            if mo and (mo.group("info") == "ForeachFuncInfo") == foreach:
                starts.append(mo.start())
            at = text.find(needle, at + 1)
    lines = sorted({text.count("\n", 0, start) + 1 for start in starts})
    return [ctx.source_map.loc(OPINFO_FILE, line) for line in lines[:5]]
