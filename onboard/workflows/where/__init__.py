"""`onboard where OP`: an op's whole anatomy, for the installed commit.

From the Python entry points (``torch.trunc``, ``Tensor.trunc``) through the
yaml entries (native_functions.yaml, read by torchgen), the live dispatch
table of the installed binary (``torch._C._dispatch_dump``), the kernels in
the checkout (structured meta/impl functions or the plain functions the
yaml's ``dispatch:`` names, the DispatchStub's declare/define/register and
kernel bodies), to the derivative formula and the OpInfo entry. Every place
is given as ``path:line`` in the checkout and as a GitHub link at the commit.

The modules: ``request`` (the query read), ``query`` (which op it names),
``live`` (what the installed torch answers: its Python entry points and the live
dispatch table), ``anatomy`` (the entry points, yaml entries, derivative formulas
and OpInfo entries) and ``kernels`` (the kernel functions and DispatchStubs in the
checkout, and which of namesake stubs a kernel calls). Each place's GitHub link
comes with it from the tree's ``SourceMap``; what this tree cannot show is said last.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from onboard.report import Reporter
from onboard.workflows.opsource import codegen
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
from onboard.workflows.opsource.native_yaml import DERIVATIVES, YamlIndex
from onboard.workflows.where.anatomy import (
    OPINFO_FILE,
    decomposes_to,
    derivatives,
    entry_points,
    opinfo,
    yaml_entries,
)
from onboard.workflows.where.kernels import kernel_sites, with_python_sites
from onboard.workflows.where.live import LiveAnswers, dispatch_table, generated_notes
from onboard.workflows.where.query import resolve
from onboard.workflows.where.request import PYTHON, WhereRequest, parse_query

__all__ = [
    "Derivative",
    "EntryPoint",
    "KernelSite",
    "Registration",
    "WhereRequest",
    "WhereResult",
    "YamlEntry",
    "kernel_sites",
    "parse_query",
    "where",
]


def where(request: WhereRequest, reporter: Reporter | None = None) -> WhereResult:
    reporter = reporter or Reporter()
    refresh = request.refresh
    ctx = TreeContext.open(request.workspace, request.python, reporter, refresh=refresh)
    index = LiveIndex(ctx.python, ctx.cache_id, reporter, refresh=refresh)
    index.prepare()  # torch imports in a child while the yaml is read
    try:
        return _anatomy(request, ctx, index)
    finally:
        index.stop()  # a child started for nothing (an unknown op)


def _anatomy(request: WhereRequest, ctx: TreeContext, index: LiveIndex) -> WhereResult:
    yaml = _read_tree(ctx)
    op = resolve(request, yaml, LiveAnswers(ctx, index, yaml, request.refresh))
    if request.generated:
        ctx.generated_dir = codegen.regenerate(ctx.python, ctx.checkout, ctx.tree_id, ctx.reporter)
    else:
        ctx.generated_dir = codegen.existing(ctx.checkout, ctx.tree_id)
    smap = ctx.source_map
    result = WhereResult(
        query=request.query,
        op=op.name,
        commit=ctx.ws.commit,
        checkout=str(ctx.checkout),
        checkout_kind=ctx.ws.checkout_kind,
        generated_dir=str(ctx.generated_dir) if ctx.generated_dir else None,
    )
    result.notes += op.notes
    result.entry_points = entry_points(op, smap)
    if request.kind == PYTHON:
        result.decomposes_to = decomposes_to(op)
    result.yaml_entries = yaml_entries(op.functions, smap)
    result.dispatch, python_sites = dispatch_table(ctx, op.functions, op.answer, request.generated)
    result.notes += generated_notes(result.dispatch, op.name)
    sites, result.kernels_not_found = kernel_sites(ctx, op.functions)
    result.kernels = with_python_sites(sites, python_sites)
    result.derivatives = derivatives(ctx, yaml, op.functions)
    result.opinfo = opinfo(ctx, op.base, op.name, request.name if request.kind == PYTHON else None)
    _not_seen(ctx, result)
    result.warm = dict(ctx.warm)
    return result


def _read_tree(ctx: TreeContext) -> YamlIndex:
    """The yaml (torchgen reads it in a child) and the kernel index (built here) at once,
    while torch imports in a third process (``LiveIndex.prepare``): the three slow
    first-time steps."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        reading = pool.submit(ctx.yaml)
        try:
            ctx.kernels()
        finally:
            yaml = reading.result()
    return yaml


def _not_seen(ctx: TreeContext, result: WhereResult) -> None:
    """What this tree cannot show: kernel bodies of a reference tree, missing files."""
    if ctx.ws.is_reference:
        # limitation() says "<what> needs a full checkout": a singular subject.
        limit = ctx.ws.limitation(
            "Showing the kernel bodies (TORCH_META_FUNC / TORCH_IMPL_FUNC and the "
            "per-device stub kernels in .cpp/.cu files)"
        )
        if limit:
            result.limitations.append(limit)
    if not (ctx.checkout / DERIVATIVES).is_file():
        result.notes.append(f"{DERIVATIVES} is not in this checkout.")
    if not (ctx.checkout / OPINFO_FILE).is_file():
        result.notes.append(
            f"{OPINFO_FILE} is not in this checkout, so the OpInfo entry is not shown."
        )
