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
from typing import TYPE_CHECKING, Any

from onboard.errors import BadInput
from onboard.report import Reporter
from onboard.workflows.opsource import codegen, live
from onboard.workflows.opsource.anatomy import (
    Derivative,
    EntryPoint,
    KernelSite,
    Registration,
    WhereResult,
    YamlEntry,
)
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.live_index import LiveIndex
from onboard.workflows.opsource.native_yaml import DERIVATIVES, NATIVE_FUNCTIONS
from onboard.workflows.opsource.paths import SourceLoc

__all__ = [
    "Derivative",
    "EntryPoint",
    "KernelSite",
    "Registration",
    "WhereResult",
    "YamlEntry",
    "parse_query",
    "where",
]

if TYPE_CHECKING:
    pass

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
        "python_kernels": {
            op: kernels
            for op, kernels in (answer.get("python_kernels") or {}).items()
            if op in request["ops"]
        },
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
    python_sites: list[KernelSite] = []
    for f in functions:
        op = f"aten::{f['name']}"
        text = dumps.get(op)
        if not text:
            continue
        python_side = entries_answer.get("python_kernels", {}).get(op) or {}
        result.dispatch.extend(_registrations(ctx, op, text, python_side, generated))
        python_sites.extend(_python_only_kernels(ctx, op, text, python_side))
    unread = {r.location.path for r in result.dispatch if r.location.generated}
    unread -= {r.location.path for r in result.dispatch if r.location.local}
    if any(p.startswith(codegen.GENERATED_ATEN) for p in unread):
        result.notes.append(
            "Files under build/ and torch/csrc/autograd/generated/ are written by the build's "
            "code generation and are not in git. `onboard where "
            f"{op_base} --generated` regenerates build/aten/src/ATen with torchgen (cached per "
            "commit) to show those lines."
        )
    elif unread:
        result.notes.append(
            "Files under torch/csrc/autograd/generated/ are written by the build's autograd "
            "code generation (tools/autograd), which --generated does not rerun: their lines "
            "are as the binary names them, with no text."
        )

    # Kernels in the checkout.
    result.kernels, result.kernels_not_found = _kernels(ctx, functions)
    placed = {(k.role, k.location.label) for k in result.kernels}
    for site in python_sites:
        if (site.role, site.location.label) not in placed:
            placed.add((site.role, site.location.label))
            result.kernels.append(site)
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
        made = codegen.wrapper_at(smap, at, op)
        if made is not None:  # the wrapper torchgen wrote, not its registration block
            out.append(
                Registration(
                    op, reg.key, made[1], reg.alias, reg.inactive, at, implementation=made[0]
                )
            )
            continue
        shadow = None
        if reg.inactive and plain_key in python_keys:
            shadow = f"the Python {plain_key} kernel above runs instead"
        elif reg.inactive:
            shadow = f"another {plain_key} kernel runs instead"
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
