"""The op's live dispatch table (``torch._C._dispatch_dump`` of the installed binary):
each key's kernel at the line that registers or writes it, and the Python kernels the
table does not list (decompositions, Python-dispatcher kernels)."""

from __future__ import annotations

from typing import Any

from onboard.workflows.opsource import codegen, live
from onboard.workflows.opsource.anatomy import KernelSite, Registration
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.where.resolve import ResolvedOp


def dispatch_table(
    ctx: TreeContext, op: ResolvedOp, generated: bool
) -> tuple[list[Registration], list[KernelSite]]:
    """The table's rows for each overload, and the Python-only kernels beside them."""
    dumps = op.answer.get("dumps", {})
    rows: list[Registration] = []
    python_sites: list[KernelSite] = []
    for f in op.functions:
        name = f"aten::{f['name']}"
        text = dumps.get(name)
        if not text:
            continue
        python_side = op.answer.get("python_kernels", {}).get(name) or {}
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
