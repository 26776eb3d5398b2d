"""What `onboard new-op` writes: every file of the structured-kernel pattern, rendered and placed.

The C++ of the new op goes in its own files (``native/<Camel>.cpp``,
``native/cpu/<Camel>Kernel.cpp``, ``native/cuda/<Camel>.cu``): ATen's build
globs those folders (aten/src/ATen/CMakeLists.txt, cmake/Codegen.cmake compiles
every ``native/cpu/*.cpp`` once per CPU capability), so nothing else has to
list them, and `onboard verify` can compile exactly the op's code. Everything
else is inserted next to a sibling op's entry in the files PyTorch keeps them in.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.jsonable import spec
from onboard.render import render
from onboard.workflows.newop import insert
from onboard.workflows.newop.family import Family
from onboard.workflows.newop.names import NATIVE_YAML

DERIVATIVES_YAML = "tools/autograd/derivatives.yaml"
TORCH_DOCS = "torch/_torch_docs.py"
TENSOR_DOCS = "torch/_tensor_docs.py"
OVERRIDES = "torch/overrides.py"
OPINFO = "torch/testing/_internal/common_methods_invocations.py"
DOCS_INDEX = "docs/source/torch.rst"
DECOMP_EXPECT = "test/expect/HasDecompTest.test_has_decomposition.expect"

_DTYPE_CPP = {
    "bfloat16": ("kBFloat16", "ScalarType::BFloat16"),
    "float16": ("kHalf", "ScalarType::Half"),
}
_DTYPE_TORCH = {"bfloat16": "torch.bfloat16", "float16": "torch.half"}


@dataclass(frozen=True)
class FileChange:
    path: str  # repo-relative, posix
    role: str  # what PyTorch uses the entry for
    before: str | None = field(metadata=spec(omit=True))  # None: a new file
    after: str = field(metadata=spec(omit=True))
    line: int  # 1-based line where the new text starts
    where: str
    # "create" / "insert" by default; practice mode's "take out" removes a real kernel.
    # In JSON the action taken, default or not (json_extra).
    action: str = field(default="", metadata=spec(omit=True))

    @property
    def created(self) -> bool:
        return self.before is None

    def json_extra(self) -> dict[str, object]:
        return {"action": self.action or ("create" if self.created else "insert")}


@dataclass(frozen=True)
class Unplaced:
    path: str
    role: str
    reason: str


@dataclass
class Plan:
    name: str
    family: Family
    changes: list[FileChange] = field(default_factory=list)
    unplaced: list[Unplaced] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def paths(self) -> dict[str, str]:
        return {c.role: c.path for c in self.changes}


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def op_files(name: str) -> dict[str, str]:
    """Repo paths of the files new-op creates for ``name``."""
    c = camel(name)
    return {
        "meta/impl": f"aten/src/ATen/native/{c}.cpp",
        "CPU kernel": f"aten/src/ATen/native/cpu/{c}Kernel.cpp",
        "CUDA kernel": f"aten/src/ATen/native/cuda/{c}.cu",
        "test": f"test/test_{name}.py",
    }


def default_reference(family: Family) -> str:
    math = "x.clone()" if family.kind == "unary" else "x + y"
    if family.int_path == "promote":
        return f"{math} if x.is_floating_point() else ({math}).to(torch.get_default_dtype())"
    return math


def context(name: str, family: Family) -> dict[str, Any]:
    unary = family.kind == "unary"
    extras = [d for d in ("bfloat16", "float16") if d in family.float_dtypes]
    n = len(extras)
    macro = "AT_DISPATCH_FLOATING_TYPES" + ("" if n == 0 else "_AND" if n == 1 else "_AND2")
    cpu_extra = "".join(f"{_DTYPE_CPP[d][0]}, " for d in extras)
    cuda_extra = "".join(f"{_DTYPE_CPP[d][1]}, " for d in extras)
    torch_extras = ", ".join(_DTYPE_TORCH[d] for d in extras)
    ints = family.int_path != "unsupported"
    if ints:
        opinfo_dtypes = f"all_types_and({torch_extras})" if extras else "all_types()"
    else:
        opinfo_dtypes = f"floating_types_and({torch_extras})" if extras else "floating_types()"
    supported = family.supported_dtypes
    meta_comments = {
        "kernel": "the common dtype of the inputs, integers included",
        "no_op": "same dtype as the input; integers are copied in impl (as for trunc)",
        "promote": "integer inputs give the default float dtype (as for sin)",
        "unsupported": "same dtype as the input; the kernel dispatches floating types only",
    }
    return {
        "name": name,
        "camel": camel(name),
        "kind": family.kind,
        "stub_type": family.stub_type,
        "header_include": family.header.removeprefix("aten/src/"),
        "meta_builder": family.meta_builder,
        "meta_comment": meta_comments[family.int_path],
        "int_path": family.int_path,
        "like_or_sibling": family.like or family.sibling,
        "schema_args": "Tensor self" if unary else "Tensor self, Tensor other",
        "inplace_extra_args": "" if unary else ", Tensor other",
        "variants": family.variants,
        "tags_yaml": "pointwise",
        "cpp_args": "const Tensor& self" if unary else "const Tensor& self, const Tensor& other",
        "cpp_arg_names": "self" if unary else "self, other",
        "dtype_getter": "dtype" if unary else "common_dtype",
        "scalar_params": "scalar_t a" if unary else "scalar_t a, scalar_t b",
        "vector_params": "Vectorized<scalar_t> a"
        if unary
        else "Vectorized<scalar_t> a, Vectorized<scalar_t> b",
        "placeholder_scalar": "a" if unary else "a + b",
        "placeholder_vector": "a" if unary else "a + b",
        "placeholder_math": "the identity" if unary else "a + b",
        "float_dispatch": macro,
        "float_dispatch_cpu_extra": cpu_extra,
        "float_dispatch_cuda_extra": cuda_extra,
        "py_sig": "input, " if unary else "input, other, ",
        "method_sig": "" if unary else "other",
        "override_args": "input, " if unary else "input, other, ",
        "opinfo_class": "UnaryUfuncInfo" if unary else "BinaryUfuncInfo",
        "opinfo_dtypes": opinfo_dtypes,
        "promotes_int_to_float": family.int_path == "promote",
        "reference_repr": repr(default_reference(family)),
        "dtype_list": ", ".join(supported[:-1]) + f" and {supported[-1]}",
        "torch_dtypes": ", ".join(f"torch.{d}" for d in supported)
        + ("," if len(supported) == 1 else ""),
    }


def _read(checkout: Path, rel: str) -> str | None:
    path = checkout / rel
    if not path.is_file():
        return None
    return path.read_text("utf-8")


def build(checkout: Path, name: str, family: Family, yaml_text: str) -> Plan:
    """Render every template and place it; files that are missing become ``unplaced``."""
    ctx = context(name, family)
    plan = Plan(name, family)
    sib = family.sibling

    def changed(rel: str, role: str, before: str, placed: insert.Placement) -> None:
        plan.changes.append(FileChange(rel, role, before, placed.text, placed.line, placed.where))

    def present(rel: str, role: str, why: str = "file not in this checkout") -> str | None:
        """The file's text, or None after recording it as unplaced (a reference tree lacks some)."""
        text = _read(checkout, rel)
        if text is None:
            plan.unplaced.append(Unplaced(rel, role, why))
        return text

    # 1. native_functions.yaml: functional, in-place, structured out=.
    block = render("newop/native_functions.yaml.j2", **ctx)
    changed(
        NATIVE_YAML,
        "native_functions.yaml entries",
        yaml_text,
        insert.native_functions(yaml_text, sib, block),
    )

    # 2. The stub declaration in the family header.
    header = present(
        family.header, "DECLARE_DISPATCH of the stub", "the header is not in this checkout"
    )
    if header is not None:
        line = render("newop/stub_declaration.h.j2", **ctx)
        changed(
            family.header,
            "DECLARE_DISPATCH of the stub",
            header,
            insert.stub_declaration(header, sib, family.stub_type, line),
        )

    # 3-5, 13. New files: meta/impl, CPU kernel, CUDA kernel, the reference test.
    files = op_files(name)
    for role, template in (
        ("meta/impl", "newop/op.cpp.j2"),
        ("CPU kernel", "newop/kernel_cpu.cpp.j2"),
        ("CUDA kernel", "newop/kernel_cuda.cu.j2"),
        ("test", "newop/test_op.py.j2"),
    ):
        text = render(template, **ctx)
        plan.changes.append(FileChange(files[role], role, None, text, 1, "new file"))

    # 6. derivatives.yaml.
    deriv = present(DERIVATIVES_YAML, "autograd formula")
    if deriv is not None:
        changed(
            DERIVATIVES_YAML,
            "autograd formula",
            deriv,
            insert.derivatives(deriv, sib, render("newop/derivatives.yaml.j2", **ctx)),
        )

    # 7. torch/_torch_docs.py: add_docstr(torch.NAME, ...).
    docs = present(TORCH_DOCS, "torch.NAME docstring")
    if docs is not None:
        changed(
            TORCH_DOCS,
            "torch.NAME docstring",
            docs,
            insert.python_call(
                docs,
                "add_docstr",
                rf"\s+torch\.{re.escape(sib)},\s*$",
                render("newop/torch_docs.py.j2", **ctx),
                f"the torch.{sib} docstring",
            ),
        )

    # 8. torch/_tensor_docs.py: Tensor.NAME and Tensor.NAME_.
    if "method" in family.variants:
        tdocs = present(TENSOR_DOCS, "Tensor.NAME docstrings")
        if tdocs is not None:
            key = sib + "_" if f'add_docstr_all(\n    "{sib}_",' in tdocs else sib
            changed(
                TENSOR_DOCS,
                "Tensor.NAME docstrings",
                tdocs,
                insert.python_call(
                    tdocs,
                    "add_docstr_all",
                    rf'\s+"{re.escape(key)}",\s*$',
                    render("newop/tensor_docs.py.j2", **ctx),
                    f"the Tensor.{key} docstring",
                ),
            )

    # 9. torch/overrides.py: get_testing_overrides().
    over = present(OVERRIDES, "__torch_function__ override entry")
    if over is not None:
        mo = re.search(rf"^(\s+)torch\.{re.escape(sib)}: lambda", over, re.M)
        if mo is None:
            plan.unplaced.append(
                Unplaced(
                    OVERRIDES,
                    "__torch_function__ override entry",
                    f"no `torch.{sib}: lambda` line to place it next to",
                )
            )
        else:
            line = render("newop/overrides.py.j2", indent=mo.group(1), **ctx)
            changed(
                OVERRIDES,
                "__torch_function__ override entry",
                over,
                insert.after_line(
                    over,
                    re.compile(rf"^\s+torch\.{re.escape(sib)}: lambda"),
                    None,
                    line,
                    f"torch.{sib}",
                ),
            )

    # 10. The OpInfo entry in op_db.
    opinfo = present(OPINFO, "OpInfo entry")
    if opinfo is not None:
        entry_re = re.compile(rf"^(\s+)[A-Za-z]*Info\(\s*['\"]{re.escape(sib)}['\"]")
        mo = next((m for m in (entry_re.match(ln) for ln in opinfo.splitlines()) if m), None)
        placed = None
        if mo is not None:
            block = render("newop/opinfo.py.j2", indent=mo.group(1), **ctx)
            placed = insert.list_entry(opinfo, entry_re, block, f"the `{sib}` OpInfo")
        if placed is None:
            plan.unplaced.append(
                Unplaced(OPINFO, "OpInfo entry", f"no OpInfo for `{sib}` to place it next to")
            )
        else:
            changed(OPINFO, "OpInfo entry", opinfo, placed)

    # 11. The docs index (Pointwise Ops in docs/source/torch.rst).
    index = present(
        DOCS_INDEX,
        "docs index entry",
        "the docs/ folder is not in this checkout (a wheel does not ship it)",
    )
    if index is not None:
        mo = re.search(rf"^(\s+){re.escape(sib)}\s*$", index, re.M)
        if mo is None:
            plan.unplaced.append(
                Unplaced(DOCS_INDEX, "docs index entry", f"`{sib}` is not listed there")
            )
        else:
            line = render("newop/docs_index.rst.j2", indent=mo.group(1), **ctx)
            changed(
                DOCS_INDEX,
                "docs index entry",
                index,
                insert.after_line(
                    index, re.compile(rf"^\s+{re.escape(sib)}\s*$"), None, line, f"`{sib}`"
                ),
            )

    # 12. test_decomp's list of ops without a decomposition.
    expect = present(
        DECOMP_EXPECT,
        "HasDecompTest expect lines",
        "the test/ folder is not in this checkout (a wheel does not ship it)",
    )
    if expect is not None:
        lines = render("newop/decomp_expect.j2", **ctx).splitlines()
        changed(
            DECOMP_EXPECT,
            "HasDecompTest expect lines",
            expect,
            insert.sorted_lines(expect, lines, "aten::NAME entries"),
        )

    order = {c.path: i for i, c in enumerate(plan.changes)}
    plan.changes.sort(key=lambda c: (c.before is None, order[c.path]))
    return plan


def unified_diff(plan: Plan) -> str:
    chunks: list[str] = []
    for c in plan.changes:
        before = [] if c.before is None else c.before.splitlines(keepends=True)
        after = c.after.splitlines(keepends=True)
        chunks.extend(
            difflib.unified_diff(
                before,
                after,
                fromfile="/dev/null" if c.before is None else f"a/{c.path}",
                tofile=f"b/{c.path}",
                n=3,
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in chunks)
