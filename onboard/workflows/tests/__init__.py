"""`onboard tests`: which of PyTorch's tests cover a change, and (``--run``) run them.

Steps: the change (the branch since where it started, as `onboard pr` measures it,
with uncommitted edits; or the paths given; or ``--op``), the ops it touches
(``ops.OpMapper``: kernel -> stub -> yaml entry; the OpInfo entries of the installed
torch, ``opinfo``), the tests (``select``), the lint (``lint``), and with ``run``
the run (``run.run_selection``, imported only then).
"""

from __future__ import annotations

import re
from pathlib import Path

from onboard import git
from onboard.errors import BadInput
from onboard.report import Reporter
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.tests import lint as lint_mod
from onboard.workflows.tests import opinfo, ops, select
from onboard.workflows.tests.request import TestsRequest
from onboard.workflows.tests.result import ChangedOp, Selection, TestsResult

__all__ = [
    "Selection", "TestsRequest", "TestsResult", "per_file", "select_change", "select_files",
    "tests",
]  # fmt: skip

# Python files whose functions are ops' Python twins: a changed `def trunc` there is
# the op trunc (its ref, decomposition or meta function).
_PY_OP_FILES = ("torch/_refs/", "torch/_decomp/", "torch/_meta_registrations.py",
                "torch/_prims/", "torch/_prims_common/")  # fmt: skip
_PY_DEF = re.compile(r"^(?:def|async def)\s+(\w+)\s*\(", re.M)


def tests(request: TestsRequest, reporter: Reporter | None = None) -> TestsResult:
    """`onboard tests`: the selection, the lint and (``request.run``) the run. (Not
    `run`: that name is the submodule run.py, --run's part.)"""
    reporter = reporter or Reporter()
    ctx = TreeContext.open(
        str(request.workspace) if request.workspace is not None else None,
        request.python,
        reporter,
    )
    selection = select_change(ctx, request)
    lint = None
    if request.lint:
        lint = lint_mod.check(
            ctx.checkout, [f for f in selection.files if (ctx.checkout / f).is_file()], reporter
        )
    result = TestsResult(selection=selection, lint=lint)
    if request.run:
        result.run = _run(request, selection)
    return result


def _run(request: TestsRequest, selection: Selection) -> object:
    """``run.run_selection`` (--run's part, written apart from the selection), imported
    only when asked for."""
    import importlib

    try:
        module = importlib.import_module("onboard.workflows.tests.run")
    except ModuleNotFoundError as exc:
        if exc.name != "onboard.workflows.tests.run":
            raise
        raise BadInput(
            "--run is not available in this onboard: the part that runs the selected "
            "tests (onboard/workflows/tests/run.py) is not installed, so nothing was run. "
            "The selection is complete without it: run each command it shows from the "
            "checkout's root.",
            next_step="Run `onboard tests` without --run and copy the commands it prints.",
        ) from None
    return module.run_selection(request, selection)


def select_change(ctx: TreeContext, request: TestsRequest) -> Selection:
    """The selection for what ``request`` names, in ``ctx``'s checkout."""
    checkout = ctx.checkout
    notes: list[str] = []
    files: list[tuple[str, str]] = []  # (status, path)
    lines: dict[str, set[int] | None] = {}
    diffs: dict[str, str] = {}
    base = None
    if request.ops:
        source = "op"
    elif request.paths:
        source = "paths"
        for raw in request.paths:
            rel = _relative(checkout, raw)
            files.append(("M", rel))
            lines[rel] = None  # the whole file
    else:
        source = "branch"
        base, files, lines, diffs = _branch_change(ctx, request.base)
    return select_files(ctx, source, base, files, lines, diffs, ops_asked=request.ops, notes=notes)


def select_files(
    ctx: TreeContext,
    source: str,
    base: str | None,
    files: list[tuple[str, str]],
    lines: dict[str, set[int] | None],
    diffs: dict[str, str],
    *,
    ops_asked: tuple[str, ...] = (),
    notes: list[str] | None = None,
) -> Selection:
    """The selection for ``files`` ((status, path)), their changed ``lines`` (None: the
    whole file) and ``diffs`` (each file's part of a ``git diff -U0``): what
    `onboard pr`'s test plan asks for its change too."""
    checkout = ctx.checkout
    notes = notes if notes is not None else []
    if ops_asked or any(_names_ops(p) for s, p in files if s != "D"):
        index = opinfo.load(ctx.python, ctx.ws.torch_version, ctx.reporter)
    else:
        index = opinfo.OpInfoIndex([], warm=True)  # no op to name: op_db is not read
    if not index.readable:
        notes.append(
            f"The OpInfo database could not be read with {ctx.python} ({index.error}); "
            "ops are named by their yaml entry, and the OpInfo-driven tests without "
            "their entries. It needs numpy and expecttest besides torch."
        )
    changed = _changed_ops(ctx, ops_asked, files, lines, index, notes)
    picker = select.Picker(checkout)
    select.add_op_tests(picker, changed, index)
    for status, path in files:
        select.add_path_rules(picker, path, status, diffs.get(path, ""))
    select.add_owner_rule(picker, [p for _s, p in files])
    if any(p.startswith("docs/") for _s, p in files):
        notes.append(
            "docs/ changes are checked by the docs build (`cd docs && make html`), not by a "
            "test file; none is selected for them."
        )
    full = (checkout / "test").is_dir()
    if not full:
        notes.append(
            f"{checkout} has no test/ folder (a reference tree rebuilt from the wheel has "
            "none): "
            "the tests are named as PyTorch has them; run them in a full checkout "
            "(`onboard setup DIR`), or `onboard tests --run` for the changed ops' OpInfo "
            "samples against this torch."
        )
    if not files and source == "branch":
        notes.append(f"The branch has no change since {base}: nothing to select.")
    return Selection(
        checkout=str(checkout),
        source=source,
        base=base,
        files=tuple(p for _s, p in files),
        ops=tuple(dict.fromkeys(n for op in changed for n in op.opinfos)),
        changed=tuple(changed),
        selected=tuple(picker.ranked()),
        notes=tuple(notes),
        full_checkout=full,
        warm=index.warm and all(ctx.warm.values()),
    )


def _relative(checkout: Path, raw: str) -> str:
    path = Path(raw)
    if path.is_absolute() or (Path.cwd() / path).exists():
        full = (Path.cwd() / path).resolve()
        try:
            return full.relative_to(checkout.resolve()).as_posix()
        except ValueError:
            if path.is_absolute():
                raise BadInput(
                    f"{raw} is not in the workspace's checkout {checkout}.",
                    next_step="Give a path inside the checkout, or relative to its root "
                    "(aten/src/ATen/native/UnaryOps.cpp).",
                ) from None
    rel = path.as_posix().removeprefix("./")
    if not (checkout / rel).exists():
        raise BadInput(
            f"{raw} is neither a file in {checkout} nor one relative to the current folder.",
            next_step="Give a path relative to the checkout's root "
            "(aten/src/ATen/native/UnaryOps.cpp, torch/nn/functional.py).",
        )
    return rel


def _branch_change(
    ctx: TreeContext, asked_base: str | None
) -> tuple[str, list[tuple[str, str]], dict[str, set[int] | None], dict[str, str]]:
    """Where the branch started (`onboard pr`'s base: origin/main, upstream/main, main,
    the reference tree's branch or the installed commit) and everything since, the
    uncommitted edits included (they are what is tested next)."""
    from onboard.workflows.pr.change import pick_base
    from onboard.workflows.reference_tree import BRANCH

    repo = git.repository.get_root(ctx.checkout)
    fallback = BRANCH.removeprefix("refs/heads/") if ctx.ws.is_reference else ctx.ws.commit
    base = pick_base(repo, asked_base, fallback)
    head = git.refs.head_sha(repo) or "HEAD"
    start = git.refs.merge_base(repo, base, head) or base
    names = git.core.out(repo, "diff", "--name-status", "-M", start, "--").splitlines()
    files = []
    for row in names:
        parts = row.split("\t")
        if len(parts) >= 2:
            files.append((parts[0][:1], parts[-1]))
    untracked = git.core.out(repo, "ls-files", "--others", "--exclude-standard").splitlines()
    files.extend(("A", p) for p in untracked if p)
    diff = git.core.git(repo, "diff", "-U0", "--no-color", "--no-ext-diff", start, "--").stdout
    lines: dict[str, set[int] | None] = dict(ops.changed_lines(diff))
    for _s, p in files:
        lines.setdefault(p, None)
    return base, files, lines, per_file(diff)


def per_file(diff: str) -> dict[str, str]:
    out: dict[str, str] = {}
    current = None
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git "):
            current = None
        elif line.startswith("+++ "):
            target = line[4:].strip()
            current = target[2:] if target.startswith("b/") else None
        elif current is not None:
            out[current] = out.get(current, "") + line
    return out


def _names_ops(path: str) -> bool:
    return ops.is_kernel_file(path) or ops.is_yaml(path) or path.startswith(_PY_OP_FILES)


def _changed_ops(
    ctx: TreeContext,
    ops_asked: tuple[str, ...],
    files: list[tuple[str, str]],
    lines: dict[str, set[int] | None],
    index: opinfo.OpInfoIndex,
    notes: list[str],
) -> list[ChangedOp]:
    hits: dict[str, list[str]] = {}
    opinfo_names: dict[str, list[str]] = {}
    for name in ops_asked:
        entries = index.named(name)
        if not entries and index.readable:
            raise BadInput(
                f"--op {name}: no OpInfo entry tests an op of that name in the installed torch.",
                next_step="Give an OpInfo name (`trunc`, `nn.functional.gelu`) or an aten op "
                "name; `onboard where NAME` finds an op.",
            )
        base = name
        hits.setdefault(base, []).append(f"--op {name}")
        opinfo_names[base] = [e.name for e in entries] if entries else []
    kernel_files = [p for s, p in files if s != "D" and (ops.is_kernel_file(p) or ops.is_yaml(p))]
    if kernel_files:
        mapper = ops.OpMapper(ctx.checkout, ctx.yaml(), ctx.kernels())
        written = _kernels_onboard_wrote(ctx.ws.root)
        for path in kernel_files:
            found = (
                mapper.yaml_ops(path, lines.get(path))
                if ops.is_yaml(path)
                else mapper.kernel_ops(path, lines.get(path))
            )
            if not found and path in written:
                # A practice kernel or a scaffold's: a new file, which a reference tree
                # has no DEFINE_DISPATCH or impl to lead back from; new-op's manifest
                # says whose it is.
                found = [written[path]]
            if not found and ops.is_kernel_file(path):
                notes.append(
                    f"{path}: the changed lines are in no kernel that a native_functions.yaml "
                    "entry reaches (a helper, includes, a comment), so no op is named for it."
                )
            for hit in found:
                hits.setdefault(hit.base, []).extend(hit.via)
    for status, path in files:
        if status == "D" or not path.startswith(_PY_OP_FILES) or not path.endswith(".py"):
            continue
        for name, where in _py_defs(ctx.checkout, path, lines.get(path)):
            stem = name.removeprefix("meta_").removeprefix("_")
            if index.for_op(stem):
                hits.setdefault(stem, []).append(f"{where} def {name}")
    out = []
    for base, via in hits.items():
        names = opinfo_names.get(base)
        if names is None:
            names = [e.name for e in index.for_op(base)]
        out.append(ChangedOp(base, tuple(dict.fromkeys(names)), tuple(dict.fromkeys(via))))
    return out


def _kernels_onboard_wrote(ws_root: Path) -> dict[str, ops.OpHit]:
    """The kernel files `onboard new-op` wrote (a scaffold's, a practice op's), each
    with its op, from the manifests it keeps (onboard/workflows/newop/manifest.py)."""
    from onboard.workflows.newop import manifest as manifests

    out: dict[str, ops.OpHit] = {}
    for name in manifests.names(ws_root):
        made = manifests.load(ws_root, name)
        how = "practice kernel" if made.is_practice else "scaffold kernel"
        for role, rel in made.files.items():
            if "kernel" in role and ops.is_kernel_file(rel):
                out[rel] = ops.OpHit(name, [f"{rel}: the {how} `onboard new-op {name}` wrote"])
    return out


def _py_defs(checkout: Path, path: str, lines: set[int] | None) -> list[tuple[str, str]]:
    """The top-level functions of a Python file whose lines the change touches."""
    try:
        text = (checkout / path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    starts = [(text.count("\n", 0, mo.start()) + 1, mo.group(1)) for mo in _PY_DEF.finditer(text)]
    out = []
    for i, (line, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else 1 << 30
        if lines is None or any(line <= ln < end for ln in lines):
            out.append((name, f"{path}:{line}"))
    return out if lines is not None else []
