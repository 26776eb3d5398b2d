"""The chain of a C++ trace, caller first: Python -> binding -> autograd ->
dispatcher -> backend wrapper -> kernel/meta -> the check.

Each layer is placed where its function is written: generated layers in the
torchgen / tools/autograd output (with the yaml or derivatives.yaml entry they
come from), structured kernels at ``TORCH_META_FUNC`` / ``TORCH_IMPL_FUNC``,
plain kernels at their definition, the check at the line the binary named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from onboard.errors import OnboardError
from onboard.workflows.opsource import cpp_trace, macros, scopes
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.native_yaml import DERIVATIVES, NATIVE_FUNCTIONS
from onboard.workflows.opsource.paths import SourceLoc

# Where the generated C++ layers live (tools/autograd writes the torch/csrc ones).
_GENERATED_DIRS = {
    "python binding": "torch/csrc/autograd/generated/",
    "autograd": "torch/csrc/autograd/generated/",
    "backend wrapper": "build/aten/src/ATen/",
}


@dataclass(frozen=True)
class Layer:
    layer: str  # one of cpp_trace.LAYERS
    name: str  # the function (THPVariable_mm, at::meta::structured_mm::meta)
    op: str | None
    location: SourceLoc | None  # where that function is written
    related: tuple[SourceLoc, ...] = ()  # the yaml / derivatives entry behind a generated layer
    frames: tuple[str, ...] = ()  # the raw frames folded into this layer
    note: str = ""


def build(
    ctx: TreeContext,
    trace: cpp_trace.Trace,
    python_frames: list[SourceLoc],
    check: SourceLoc | None,
    check_function: str | None,
) -> list[Layer]:
    """The layers of a trace, caller first: the user's last Python frame and any torch
    frames under it, then the C++ frames grouped by layer, ending at the check."""
    layers: list[Layer] = []
    # The Python side: the user's last frame and any torch frames under it.
    py = list(zip(trace.python_frames, python_frames, strict=True))
    if py:
        last_user = max((i for i, (_f, loc) in enumerate(py) if not loc.in_torch), default=None)
        start = last_user if last_user is not None else 0
        for py_frame, loc in py[start:]:
            layers.append(Layer("python", py_frame.func or "<module>", None, loc))
    if not trace.cpp_frames:
        return layers
    grouped: list[tuple[cpp_trace.FrameRole, list[cpp_trace.CppFrame]]] = []
    for frame in reversed(trace.cpp_frames):  # printed callee first; the chain reads caller first
        role = cpp_trace.classify(frame.symbol, frame.file)
        if role.layer is None:
            continue
        if grouped:
            prev, prev_frames = grouped[-1]
            # The dispatcher's call-through frame (wrap_kernel_functor_unboxed_) and the
            # function it wraps are one layer; so are the check machinery's frames.
            if prev.layer == role.layer and (prev.name == role.name or role.layer == "check"):
                grouped[-1] = (role if prev.glue else prev, [*prev_frames, frame])
                continue
        grouped.append((role, [frame]))
    for role, frames in grouped:
        assert role.layer is not None
        if role.layer == "check":
            if check is not None:
                calls = macros.macro_calls(check.text or "")
                thrower = next(
                    (cpp_trace.classify(f.symbol).name for f in frames if "Fail" in f.symbol),
                    "c10::Error",
                )
                layers.append(
                    Layer(
                        "check",
                        calls[0].name if calls else thrower,
                        None,
                        check,
                        frames=tuple(f.symbol for f in frames),
                        note=f"raised in {check_function}" if check_function else "",
                    )
                )
            continue
        layers.append(_layer(ctx, role, frames))
    return layers


def _yaml_loc(ctx: TreeContext, op: str | None) -> SourceLoc | None:
    if not op:
        return None
    try:
        entry = ctx.yaml().by_name.get(op)
    except OnboardError:
        return None
    return ctx.source_map.loc(NATIVE_FUNCTIONS, entry.line) if entry else None


def _derivative_loc(ctx: TreeContext, op: str | None) -> SourceLoc | None:
    if not op:
        return None
    try:
        found = ctx.yaml().derivatives_for({op})
    except OnboardError:
        return None
    return ctx.source_map.loc(DERIVATIVES, found[0].line) if found else None


def _generated_loc(
    ctx: TreeContext, file: str | None, layer: str, needle: str | None
) -> SourceLoc | None:
    if not file or "/" in file or layer not in _GENERATED_DIRS:
        return None
    rel = _GENERATED_DIRS[layer] + file
    line = None
    if needle and ctx.generated_dir is not None:
        lines = ctx.source_map.lines(ctx.generated_dir / rel) or []
        pattern = re.compile(rf"\b{re.escape(needle)}\s*\(")
        line = next(
            (
                i + 1
                for i, text in enumerate(lines)
                if pattern.search(text) and not text.startswith(" ")
            ),
            None,
        )
    return ctx.source_map.loc(rel, line)


def _layer(ctx: TreeContext, role: cpp_trace.FrameRole, frames: list[cpp_trace.CppFrame]) -> Layer:
    file = next((f.file for f in frames if f.file), None)
    names = tuple(f.symbol for f in frames)
    op = role.op
    short = role.name.split("::")[-1]
    location: SourceLoc | None = None
    related: list[SourceLoc] = []
    note = ""
    if role.layer == "python binding":
        location = _generated_loc(ctx, file, role.layer, short)
        note = f"generated from {NATIVE_FUNCTIONS} by tools/autograd/gen_python_functions.py"
        related = [x for x in (_yaml_loc(ctx, op),) if x]
    elif role.layer == "autograd":
        location = _generated_loc(ctx, file, role.layer, None)
        note = f"generated from {DERIVATIVES} by tools/autograd/gen_variable_type.py"
        related = [x for x in (_derivative_loc(ctx, op), _yaml_loc(ctx, op)) if x]
    elif role.layer == "dispatcher":
        note = (
            "at::_ops::<op>::call/redispatch: the dispatcher picks the kernel for the next "
            "dispatch key"
        )
        related = [x for x in (_yaml_loc(ctx, op),) if x]
    elif role.layer == "backend wrapper":
        location = _generated_loc(ctx, file, role.layer, short)
        note = "generated by torchgen from the yaml's dispatch: block"
        if location is not None and location.line is None and ctx.generated_dir is None:
            note += "; `onboard where OP --generated` regenerates it to show the line"
        related = [x for x in (_yaml_loc(ctx, op),) if x]
    elif role.layer == "meta" and op:
        hits = ctx.kernels().meta(op)
        if hits:
            location = ctx.source_map.loc(hits[0].path, hits[0].line)
        note = f"TORCH_META_FUNC({op}): shape and dtype checks of the structured kernel"
    elif role.layer == "kernel":
        if role.macro == "TORCH_IMPL_FUNC" and op:
            hits = ctx.kernels().impl(op)
        else:
            named = ctx.kernels().definitions(short)
            hits = [h for h in named[:_SCOPED] if _defines(ctx, role.name, h.path, h.line)]
            if named and not hits:
                # Same name, another scope (at::cuda::blas::dot is not at::native::dot).
                note = (
                    f"no definition of {role.name} in this tree's files (the {len(named)} "
                    f"named {short} here are in other namespaces or classes)"
                )
        if hits:
            location = ctx.source_map.loc(hits[0].path, hits[0].line)
    return Layer(role.layer or "", role.name, op, location, tuple(related), names, note)


# Of the definitions with a frame's last name, those whose scope is read.
_SCOPED = 30


def _defines(ctx: TreeContext, qualified: str, path: str, line: int) -> bool:
    """Whether the definition at ``path:line`` is the frame's ``qualified`` function."""
    if "::" not in qualified:
        return True  # the frame says no scope: any definition of the name may be it
    lines = ctx.source_map.lines(ctx.checkout / path)
    return bool(lines) and scopes.same_scope(qualified, lines or [], line)


_FUNC_HEAD = re.compile(
    r"^(?:TORCH_(?:META|IMPL)_FUNC2?\s*\([^)]*\)"
    r"|(?:[\w:<>,]+(?:[ \t]*[*&]+[ \t]*|[ \t]+))+[\w~:]+\s*\()"
)
_PY_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)")


def enclosing(ctx: TreeContext, loc: SourceLoc | None) -> str | None:
    """The function a site sits in, read from its file (for the message-only answer)."""
    if loc is None or not loc.local or not loc.line:
        return None
    lines = ctx.source_map.lines(ctx.checkout / loc.path) if loc.in_checkout else None
    if not lines or loc.line > len(lines):  # (the file shrank since the index named the line)
        return None
    if loc.path.endswith(".py"):
        indent = len(lines[loc.line - 1]) - len(lines[loc.line - 1].lstrip())
        for i in range(loc.line - 1, -1, -1):
            mo = _PY_DEF.match(lines[i])
            if mo and len(mo.group(1)) < indent:
                return mo.group(2)
        return None
    for i in range(loc.line - 1, -1, -1):
        text = lines[i]
        if not text or text[0] in " \t#/}*" or text.rstrip().endswith(";"):
            continue
        mo = _FUNC_HEAD.match(text)
        if mo:
            head = mo.group(0).rstrip("(").strip()
            return head.split()[-1] if not head.startswith("TORCH_") else head
    return None
