"""`onboard new-op EXISTING`: practise writing the kernel of an op PyTorch already has.

The installed torch already computes the right answer for every dtype and edge
case, so it is the judge (``judge.py``). On a new branch
``onboard/practice-NAME`` this writes what the new-op scaffold writes for a
kernel: the CPU kernel (``native/cpu/PracticeCamelKernel.cpp``), the CUDA kernel
(``native/cuda/PracticeCamel.cu``), each registering ``NAME_stub`` with one
marked line of math left for the learner, and a test of values the installed
torch gave. The yaml entry, the stub's declaration and definition and the
meta/impl functions are PyTorch's own: a second copy would break the in-tree
build, so the guide points at them instead. On a full checkout PyTorch's own
kernels are taken out on that branch (their registrations, and their bodies
when nothing else uses them), so an in-tree build runs the learner's. The
writes go through ``apply.apply`` like a scaffold: all or nothing.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git, proc
from onboard.jsonable import spec, to_json
from onboard.render import render
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.newop import family as families
from onboard.workflows.newop import names, sites
from onboard.workflows.newop.plan import (
    FileChange,
    Plan,
    camel,
    unified_diff,
)

if TYPE_CHECKING:
    from onboard.workspace import Workspace

MARKER = "PRACTICE(onboard)"
GUIDE = "PRACTICE.md"
_GUIDE_STAMP = "<!-- onboard practice:"
PLACEHOLDER = "a"
# dtype name -> the ScalarType an AT_DISPATCH_V2 list names.
SCALAR_TYPES = {
    "float32": "kFloat",
    "float64": "kDouble",
    "bfloat16": "kBFloat16",
    "float16": "kHalf",
    "complex64": "kComplexFloat",
    "complex128": "kComplexDouble",
    "bool": "kBool",
    "uint8": "kByte",
    "int8": "kChar",
    "int16": "kShort",
    "int32": "kInt",
    "int64": "kLong",
}
_INTEGRAL = ("bool", "uint8", "int8", "int16", "int32", "int64")


def branch_name(name: str) -> str:
    return f"onboard/practice-{name}"


def practice_files(name: str) -> dict[str, str]:
    c = camel(name)
    return {
        "CPU kernel": f"{sites.NATIVE}/cpu/Practice{c}Kernel.cpp",
        "CUDA kernel": f"{sites.NATIVE}/cuda/Practice{c}.cu",
        "test": f"test/test_practice_{name}.py",
    }


def kernel_dtypes(probe: dict[str, Any], fam: families.Family) -> tuple[list[str], list[str]]:
    """(dtypes the kernel sees, dtypes the impl copies without it), from what the
    installed torch did with each input dtype."""
    kernel: list[str] = []
    copied: list[str] = []
    for dtype in SCALAR_TYPES:
        entry = probe["dtypes"].get(dtype) or {}
        if not entry.get("ok"):
            continue
        if fam.int_path == "no_op" and dtype in _INTEGRAL and entry.get("identity"):
            copied.append(dtype)
            continue
        result = entry.get("result_dtype", dtype)
        if result in SCALAR_TYPES and result not in kernel:
            kernel.append(result)
    return kernel, copied


@dataclass(frozen=True)
class TakenOut:
    path: str
    line: int
    what: str


def take_out(text: str, name: str, replacement: str) -> tuple[str, list[tuple[int, str]]]:
    """``text`` without the registrations of ``NAME_stub`` (and the kernel functions
    they name, when nothing else in the file uses them); (new text, [(line, what)])."""
    stub = f"{name}_stub"
    register = re.compile(
        rf"^[ \t]*(?:ALSO_)?REGISTER_\w*DISPATCH\(\s*{re.escape(stub)}\s*,"
        r"\s*&?(?P<fn>[\w:]+)\s*\)\s*;?[ \t]*\n",
        re.M,
    )
    macro = re.compile(
        rf"^[ \t]*(?:STATIC_)?IMPLEMENT_\w*KERNEL\w*\(\s*{re.escape(name)}\s*[,)][^\n]*\n", re.M
    )
    spans: list[tuple[int, int, str]] = []
    for mo in macro.finditer(text):
        spans.append((mo.start(), mo.end(), mo.group(0).strip()))
    for mo in register.finditer(text):
        spans.append((mo.start(), mo.end(), mo.group(0).strip()))
        fn = mo.group("fn").split("::")[-1]
        body = _function_span(text, fn)
        if body is not None and len(re.findall(rf"\b{re.escape(fn)}\b", text)) == 2:
            spans.append((*body, f"the kernel function {fn}"))
    removed = []
    for start, end, what in sorted(spans, reverse=True):
        line = text.count("\n", 0, start) + 1
        text = text[:start] + replacement + "\n" + text[end:]
        removed.append((line, what))
    return text, sorted(removed)


def _function_span(text: str, fn: str) -> tuple[int, int] | None:
    """(start, end) of the definition of ``fn`` at the start of a line, through its '}'."""
    mo = re.search(
        rf"^[ \t]*(?:static[ \t]+|inline[ \t]+)*void[ \t]+{re.escape(fn)}[ \t]*\(", text, re.M
    )
    if mo is None:
        return None
    brace = text.find("{", mo.end())
    depth = 0
    for pos in range(brace, len(text)):
        if text[pos] == "{":
            depth += 1
        elif text[pos] == "}":
            depth -= 1
            if depth == 0:
                end = text.find("\n", pos)
                return mo.start(), (end + 1 if end != -1 else len(text))
    return None


@dataclass
class PracticeResult:
    """JSON keys: ``ok``, ``mode`` ("practice"), ``name``, ``kind``, ``dry_run``,
    ``branch``, ``commit`` (null on a dry run), ``checkout``, ``changes`` (path, role,
    action create|take out, line, where), ``taken_out`` (path, line, what),
    ``oracle`` ("torch.NAME"), ``torch_version``, ``kernel_dtypes``, ``copied_dtypes``,
    ``guide`` (its text), ``guide_path``, ``notes``, ``diff`` (dry run only),
    ``next_steps``, ``seconds``."""

    name: str
    plan: Plan = field(metadata=spec(omit=True))  # its part of the JSON: json_extra
    checkout: Path
    dry_run: bool
    branch: str
    torch_version: str
    kernel: list[str] = field(metadata=spec(key="kernel_dtypes"))
    copied: list[str] = field(metadata=spec(key="copied_dtypes"))
    taken_out: list[TakenOut] = field(default_factory=list)
    commit: str | None = None
    guide: str = ""
    guide_path: Path | None = None
    diff: str = field(default="", metadata=spec(omit=True))  # json_extra: dry run only
    seconds: float = field(default=0.0, metadata=spec(digits=3))
    next_steps: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0: what could not be written is an error (exit 1 or 2), not a result."""
        return 0

    def json_extra(self) -> dict[str, object]:
        return {
            "ok": True,
            "mode": "practice",
            "kind": self.plan.family.kind,
            "changes": self.plan.changes,
            "oracle": f"torch.{self.name}",
            "notes": self.plan.notes,
            "diff": self.diff if self.dry_run else "",
        }


def _dispatch_list(dtypes: list[str]) -> str:
    return ", ".join(SCALAR_TYPES[d] for d in dtypes)


def _marked_line(text: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if MARKER in ln)


def _real_kernels(checkout: Path, name: str, files: dict[str, str], note: str) -> list[FileChange]:
    """On a full checkout: the files whose registrations of NAME_stub are taken out."""
    texts = sites.sources(checkout, name)
    found = sites.registrations(texts, f"{name}_stub")
    paths = sorted({hit.rsplit(":", 1)[0] for hits in found.values() for hit in hits})
    changes = []
    for rel in paths:
        if rel in files.values():
            continue
        before = (checkout / rel).read_text("utf-8")
        after, removed = take_out(before, name, note)
        if not removed:
            continue
        what = "; ".join(f"line {line}: {w}" for line, w in removed)
        role = "PyTorch's CUDA kernel" if rel.endswith(".cu") else "PyTorch's CPU kernel"
        changes.append(
            FileChange(rel, role, before, after, removed[0][0], f"taken out: {what}", "take out")
        )
    return changes


def build_plan(
    ws: Workspace, name: str, fam: families.Family, probe: dict[str, Any]
) -> tuple[Plan, list[str], list[str], list[TakenOut]]:
    checkout = ws.checkout_path
    kernel, copied = kernel_dtypes(probe, fam)
    files = practice_files(name)
    unary = fam.kind == "unary"
    note = (
        f"// onboard practice: PyTorch's own {name} kernel is taken out on this branch; "
        f"yours is in {files['CPU kernel'].rsplit('/', 1)[-1]} / "
        f"{files['CUDA kernel'].rsplit('/', 1)[-1]}."
    )
    ctx = {
        "name": name,
        "camel": camel(name),
        "header_include": fam.header.removeprefix("aten/src/"),
        "dtype_getter": "dtype" if unary else "common_dtype",
        "scalar_params": "scalar_t a" if unary else "scalar_t a, scalar_t b",
        "placeholder": PLACEHOLDER,
        "marker": MARKER,
        "kernel_dtypes_text": ", ".join(kernel),
        "cpu_dispatch_types": _dispatch_list(kernel),
        "cuda_dispatch_types": _dispatch_list(kernel),
        "taken_out_note": (
            "PyTorch's own kernel is taken out on this branch."
            if not ws.is_reference
            else "A reference tree has no .cpp/.cu files: this file is new, as for a new op."
        ),
        "torch_version": probe.get("version", ws.torch_version),
        "edges": probe.get("edges", []),
    }
    plan = Plan(name, fam)
    for role, template in (
        ("CPU kernel", "practice/kernel_cpu.cpp.j2"),
        ("CUDA kernel", "practice/kernel_cuda.cu.j2"),
        ("test", "practice/test_practice.py.j2"),
    ):
        text = render(template, **ctx)
        line = _marked_line(text) if role != "test" else 1
        where = "new file; the marked line is yours" if role != "test" else "new file"
        plan.changes.append(FileChange(files[role], role, None, text, line, where))
    taken: list[TakenOut] = []
    if not ws.is_reference:
        removals = _real_kernels(checkout, name, files, note)
        plan.changes += removals
        for change in removals:
            taken.append(
                TakenOut(change.path, change.line, change.where.removeprefix("taken out: "))
            )
        if not any(c.path.endswith(".cu") for c in removals):
            plan.notes.append(
                f"No CUDA registration of {name}_stub was found to take out; if the checkout "
                "has one, an in-tree build registers the stub twice (remove it by hand)."
            )
        if not any(c.path.endswith(".cpp") for c in removals):
            plan.notes.append(
                f"No CPU registration of {name}_stub was found to take out under "
                f"{sites.NATIVE}/cpu; if the checkout has one, remove it by hand."
            )
    return plan, kernel, copied, taken


def practise(
    ws: Workspace,
    name: str,
    yaml_text: str,
    *,
    kind: str | None = None,
    dry_run: bool = False,
    reporter: Reporter | None = None,
) -> PracticeResult:
    """Put a practice scaffold for the existing op ``name`` on ``onboard/practice-NAME``."""
    from onboard import transaction
    from onboard.workflows.newop import apply, manifest

    reporter = reporter or Reporter()
    start = time.monotonic()
    checkout = ws.checkout_path
    reporter.step(f"checking aten::{name} and asking the installed torch what it does")
    fam, probe = families.described(
        checkout, name, kind, ws.python, yaml_text, ws.root, practice=True, edges=True
    )
    plan, kernel, copied, taken = build_plan(ws, name, fam, probe)
    branch = branch_name(name)
    result = PracticeResult(
        name,
        plan,
        checkout,
        dry_run,
        branch,
        str(probe.get("version", ws.torch_version)),
        kernel,
        copied,
        taken,
    )
    result.guide = guide(ws, name, fam, plan, kernel, copied, result.torch_version, yaml_text)
    if dry_run:
        result.diff = unified_diff(plan)
        result.seconds = time.monotonic() - start
        return result
    base = git.refs.head_sha(checkout)
    with transaction.in_workspace(ws.root, command=f"new-op {name}", reporter=reporter) as tx:
        applied = apply.apply(tx, checkout, plan, branch, commit_message(name, plan), reporter)
        files = plan.paths()
        files["header"] = fam.header
        manifest.save(
            ws.root,
            manifest.Manifest(
                name,
                fam,
                files,
                branch,
                mode=manifest.PRACTICE,
                practice={
                    "base_commit": base,
                    "kernel_dtypes": kernel,
                    "copied_dtypes": copied,
                    "taken_out": to_json(taken),
                    "placeholder": PLACEHOLDER,
                    "marker": MARKER,
                },
            ),
        )
        result.guide_path = write_guide(ws.root, name, result.guide)
    result.commit = applied.commit
    cpu = files["CPU kernel"]
    result.next_steps = [
        f"write {name}'s math on the marked lines of {cpu} and "
        f"{files['CUDA kernel']} (the guide: {result.guide_path})",
        f"check it against torch.{name}: `cd {quote(ws.root)} && onboard verify` (or `nox -s "
        "verify`)",
        f"see how PyTorch does it: `onboard new-op {name} --reveal`",
    ]
    result.seconds = time.monotonic() - start
    return result


def guide(
    ws: Workspace,
    name: str,
    fam: families.Family,
    plan: Plan,
    kernel: list[str],
    copied: list[str],
    torch_version: str,
    yaml_text: str,
) -> str:
    checkout = ws.checkout_path
    files = plan.paths()
    by_path = {c.path: c for c in plan.changes}
    definition = names.find_definition(checkout, name, yaml_text)
    yaml_line = definition.yaml_lines[0] if definition else 1
    header_text = (checkout / fam.header).read_text("utf-8", errors="replace")
    declare = re.search(rf"^DECLARE_DISPATCH\([^;\n]*\b{name}_stub\b", header_text, re.M)
    declare_line = header_text.count("\n", 0, declare.start()) + 1 if declare else 1
    if ws.is_reference:
        define_where = (
            "in a .cpp file this reference tree does not have; "
            f"`onboard new-op {name} --reveal` links it at the installed commit"
        )
    else:
        texts = sites.sources(checkout, name)
        found = sites.find(texts, rf"DEFINE_DISPATCH\(\s*{name}_stub\s*\)", (".cpp",))
        define_where = f"`{found}`" if found else "not found in this checkout"
    taken = [c for c in plan.changes if c.action == "take out"]
    taken_text = (
        "PyTorch's own kernel is taken out on this branch: "
        + "; ".join(f"`{c.path}:{c.line}`" for c in taken)
        + "."
        if taken
        else "This reference tree has no PyTorch kernel files, so yours are new files."
    )
    return render(
        "practice/PRACTICE.md.j2",
        name=name,
        branch=branch_name(name),
        checkout=checkout,
        workspace=ws.root,
        torch_version=torch_version,
        oracle_dtypes=", ".join([*kernel, *copied]),
        cpu_kernel=files["CPU kernel"],
        cpu_line=by_path[files["CPU kernel"]].line,
        cuda_kernel=files["CUDA kernel"],
        cuda_line=by_path[files["CUDA kernel"]].line,
        placeholder=PLACEHOLDER,
        scalar_params="scalar_t a" if fam.kind == "unary" else "scalar_t a, scalar_t b",
        kernel_dtypes_text=", ".join(kernel),
        copied=bool(copied),
        copied_text=", ".join(copied),
        nvcc=proc.which("nvcc") is not None,
        yaml_where=f"{names.NATIVE_YAML}:{yaml_line}",
        declare_where=f"{fam.header}:{declare_line}",
        stub_type=fam.stub_type,
        define_where=define_where,
        taken_out_text=taken_text,
    )


def write_guide(ws_root: Path, name: str, text: str) -> Path:
    """PRACTICE.md in the workspace (not the checkout); a PRACTICE.md onboard did not
    write is kept, and the guide goes to .onboard/practice/NAME.md instead."""
    from onboard import files

    path = ws_root / GUIDE
    if path.exists() and not path.read_text("utf-8", errors="replace").startswith(_GUIDE_STAMP):
        path = ws_root / ".onboard" / "practice" / f"{name}.md"
        files.make_dirs(path.parent)
    files.write_text(path, text)
    return path


def commit_message(name: str, plan: Plan) -> str:
    lines = [
        f"Practice: write the kernel of aten::{name} (onboard new-op {name})",
        "",
        "The CPU and CUDA kernels as new files, one marked line of math each, and a test",
        f"of values the installed torch.{name} gave. `onboard verify` judges them.",
    ]
    taken = [c for c in plan.changes if c.action == "take out"]
    if taken:
        lines += ["", "PyTorch's own kernel is taken out on this branch:"]
        lines += [f"- {c.path}: {c.where.removeprefix('taken out: ')}" for c in taken]
    return "\n".join(lines) + "\n"
