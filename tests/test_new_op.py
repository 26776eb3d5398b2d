"""`onboard new-op`: names, templates, insertion, dry run, the branch, rollback.

The checkout is a real git repository shaped like the `--from-wheel` reference
tree, seeded from the installed wheel's own files (the real
native_functions.yaml, derivatives.yaml, UnaryOps.h, _torch_docs.py, OpInfo
database, ...). No compiles here: tests/test_new_op_verify.py (slow) does those.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fixtures.pytorch_repo import find_package_dir, find_torch_dir

from onboard import workspace
from onboard.cli import cli
from onboard.errors import BadInput, OnboardError
from onboard.jsonable import to_json
from onboard.render import render
from onboard.workflows.newop import apply, family, insert, names, scaffold
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop.checks import consistency
from onboard.workflows.newop.plan import DECOMP_EXPECT, DOCS_INDEX, context
from onboard.workflows.newop.steps import first_compiler_error as _first_compiler_error
from onboard.workflows.newop.steps import reference as _reference

NATIVE_YAML = "aten/src/ATen/native/native_functions.yaml"

# repo path -> path under site-packages (the reference tree's mapping).
_FROM_WHEEL = {
    NATIVE_YAML: "torchgen/packaged/ATen/native/native_functions.yaml",
    "aten/src/ATen/native/tags.yaml": "torchgen/packaged/ATen/native/tags.yaml",
    "tools/autograd/derivatives.yaml": "torchgen/packaged/autograd/derivatives.yaml",
    "aten/src/ATen/native/UnaryOps.h": "torch/include/ATen/native/UnaryOps.h",
    "aten/src/ATen/native/BinaryOps.h": "torch/include/ATen/native/BinaryOps.h",
    "aten/src/ATen/native/DispatchStub.h": "torch/include/ATen/native/DispatchStub.h",
    "torch/_torch_docs.py": "torch/_torch_docs.py",
    "torch/_tensor_docs.py": "torch/_tensor_docs.py",
    "torch/overrides.py": "torch/overrides.py",
    "torch/testing/_internal/common_methods_invocations.py": (
        "torch/testing/_internal/common_methods_invocations.py"
    ),
}
# Small stand-ins for files a full checkout has and a wheel does not ship.
_DOCS_INDEX = """\
Pointwise Ops
~~~~~~~~~~~~~~~~~~~~~~

.. autosummary::
    :toctree: generated
    :nosignatures:

    tan
    tanh
    trunc
    xlogy
"""
_DECOMP_EXPECT = "aten::_adaptive_avg_pool2d\naten::mm\naten::trunc\naten::zeta\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def make_workspace(
    root: Path, *, full: bool = False, extra: dict[str, str] | None = None
) -> workspace.Workspace:
    """A workspace whose checkout is a reference tree from the wheel (``full``: plus the
    docs index and HasDecompTest expect file a full checkout has)."""
    site = find_torch_dir().parent
    assert find_package_dir("torchgen").parent == site
    checkout = root / "pytorch"
    for dest, src in _FROM_WHEEL.items():
        path = checkout / dest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((site / src).read_bytes())
    files = dict(extra or {})
    if full:
        files[DOCS_INDEX] = _DOCS_INDEX
        files[DECOMP_EXPECT] = _DECOMP_EXPECT
    for dest, text in files.items():
        path = checkout / dest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(checkout.parent, "init", "-q", "-b", "reference", str(checkout))
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-q", "-m", "Reference tree")
    ws = workspace.Workspace(
        root=root,
        torch_version="2.13.0+cpu",
        commit=None,
        commit_kind="release",
        build_prefix=None,
        python=sys.executable,
        checkout="pytorch",
        checkout_kind=workspace.REFERENCE,
    )
    workspace.save(ws)
    return ws


def snapshot(repo: Path) -> dict[str, object]:
    """Everything a failed scaffold must leave as it was."""
    files = {}
    for path in sorted(repo.rglob("*")):
        if ".git" in path.relative_to(repo).parts or not path.is_file():
            continue
        files[path.relative_to(repo).as_posix()] = path.read_bytes()
    dirs = sorted(
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*")
        if p.is_dir() and ".git" not in p.relative_to(repo).parts
    )
    return {
        "branch": _git(repo, "symbolic-ref", "-q", "HEAD").strip(),
        "head": _git(repo, "rev-parse", "HEAD").strip(),
        "branches": _git(repo, "branch", "--format=%(refname)"),
        "status": _git(repo, "status", "--porcelain", "--ignored"),
        "files": files,
        "dirs": dirs,
    }


@pytest.fixture
def ws(tmp_path: Path) -> workspace.Workspace:
    return make_workspace(tmp_path / "ws")


# --------------------------------------------------------------------------
# Names


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("int", ["C++", "keyword", "my_int"]),
        ("lambda", ["Python", "keyword", "my_lambda"]),
        ("Bad-Name", ["not a valid operator name", "identifiers"]),
        ("foo_", ["in-place", "onboard new-op foo"]),
        ("MyOp", ["snake case", "my_op"]),
        ("my__op", ["snake case"]),
        ("__and__", ["dunder"]),
        ("3d_op", ["not a valid operator name"]),
        ("", ["empty"]),
    ],
)
def test_bad_names_are_refused(name: str, words: list[str]) -> None:
    with pytest.raises(BadInput) as info:
        names.check_shape(name)
    text = info.value.paragraph()
    for word in words:
        assert word in text, text


@pytest.mark.parametrize("name", ["my_frac", "_my_private_op", "special_my_erf", "op2"])
def test_good_names_pass(name: str) -> None:
    names.check_shape(name)


def test_existing_op_with_like_is_refused_and_points_at_practice(
    ws: workspace.Workspace,
) -> None:
    before = snapshot(ws.checkout_path)
    with pytest.raises(BadInput) as info:
        scaffold(ws, "trunc", like="floor")
    text = info.value.paragraph()
    assert "`onboard new-op trunc` to practise" in text
    assert "onboard new-op my_trunc --like floor" in text
    assert snapshot(ws.checkout_path) == before


def test_an_inplace_name_of_an_existing_op_is_refused(ws: workspace.Workspace) -> None:
    with pytest.raises(BadInput, match="in-place"):
        scaffold(ws, "trunc_")


def test_a_python_level_torch_function_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        extra={"torch/functional.py": "import torch\n\n\ndef unique(input):\n    pass\n"},
    )
    with pytest.raises(BadInput, match=r"torch/functional.py:4"):
        scaffold(ws, "unique")


def test_an_inplace_only_name_counts_as_existing() -> None:
    found = names.existing_ops("- func: relu_(Tensor(a!) self) -> Tensor(a!)\n")
    assert found == {"relu": [(1, "relu_")]}


def test_practice_name_skips_taken_names() -> None:
    assert names.practice_name("trunc", {"trunc"}) == "my_trunc"
    assert names.practice_name("trunc", {"my_trunc", "my_trunc2"}) == "my_trunc3"


# --------------------------------------------------------------------------
# Templates


@pytest.mark.parametrize(
    "fam",
    [
        family.default("unary"),
        family.default("binary"),
        family.Family("unary", family.UNARY_HEADER, "unary_fn", "trunc", "no_op", like="trunc"),
        family.Family(
            "unary",
            family.UNARY_HEADER,
            "unary_fn",
            "sin",
            "promote",
            ("float32", "float64"),
            like="sin",
        ),
        family.Family(
            "binary",
            family.BINARY_HEADER,
            "structured_binary_fn",
            "hypot",
            "unsupported",
            ("float32", "float64", "bfloat16"),
            like="hypot",
        ),
    ],
    ids=["unary", "binary", "like-trunc", "like-sin", "like-hypot"],
)
def test_every_template_renders_and_parses(fam: family.Family) -> None:
    ctx = context("my_op", fam)
    entries = yaml.safe_load(render("newop/native_functions.yaml.j2", **ctx))
    assert [e["func"].split("(")[0] for e in entries] == ["my_op", "my_op_", "my_op.out"]
    assert entries[2]["structured_inherits"] == "TensorIteratorBase"
    assert entries[2]["dispatch"] == {"CPU, CUDA": "my_op_out"}
    assert all(e["tags"] == "pointwise" for e in entries)
    assert entries[0]["structured_delegate"] == entries[1]["structured_delegate"] == "my_op.out"
    deriv = yaml.safe_load(render("newop/derivatives.yaml.j2", **ctx))
    assert deriv[0]["name"] == entries[0]["func"]
    ast.parse(render("newop/torch_docs.py.j2", **ctx))
    ast.parse(render("newop/tensor_docs.py.j2", **ctx))
    ast.parse("{\n" + render("newop/overrides.py.j2", indent="    ", **ctx) + "}\n")
    ast.parse("[\n" + render("newop/opinfo.py.j2", indent="    ", **ctx) + "]\n")
    test_src = render("newop/test_op.py.j2", **ctx)
    ast.parse(test_src)
    cpp = render("newop/op.cpp.j2", **ctx)
    assert "TORCH_META_FUNC(my_op)" in cpp and "TORCH_IMPL_FUNC(my_op_out)" in cpp
    assert "DEFINE_DISPATCH(my_op_stub);" in cpp
    assert fam.meta_builder in cpp
    assert ("result.copy_(self)" in cpp) == (fam.int_path == "no_op")
    cpu = render("newop/kernel_cpu.cpp.j2", **ctx)
    assert "inline namespace CPU_CAPABILITY" in cpu and "cpu_kernel_vec(" in cpu
    assert "REGISTER_DISPATCH(my_op_stub, &CPU_CAPABILITY::my_op_kernel)" in cpu
    assert ("AT_DISPATCH_INTEGRAL_TYPES" in cpu) == (fam.int_path == "kernel")
    cu = render("newop/kernel_cuda.cu.j2", **ctx)
    assert "gpu_kernel(iter, []GPU_LAMBDA" in cu and "REGISTER_DISPATCH(my_op_stub" in cu
    assert cpu.count("{") == cpu.count("}") and cu.count("{") == cu.count("}")
    if "float16" not in fam.float_dtypes:
        assert "kHalf" not in cpu and "ScalarType::Half" not in cu
    line = render("newop/stub_declaration.h.j2", **ctx).strip()
    assert line == f"DECLARE_DISPATCH({fam.stub_type}, my_op_stub)"


def test_a_missing_template_variable_is_an_error() -> None:
    import jinja2

    ctx = context("my_op", family.default("unary"))
    del ctx["meta_builder"]
    with pytest.raises(jinja2.UndefinedError):
        render("newop/op.cpp.j2", **ctx)


# --------------------------------------------------------------------------
# Insertion


def test_yaml_entries_go_after_the_sibling_group_and_keep_its_comment(
    ws: workspace.Workspace,
) -> None:
    text = (ws.checkout_path / NATIVE_YAML).read_text()
    block = render("newop/native_functions.yaml.j2", **context("my_frac", family.default("unary")))
    placed = insert.native_functions(text, "trunc", block)
    new = placed.text
    assert new.replace(block + "\n", "", 1) == text  # nothing else changed
    lines = new.splitlines()
    assert lines[placed.line - 1] == "- func: my_frac(Tensor self) -> Tensor"
    # trunc.out's trailing comment stays with it; a blank line on each side.
    before = lines[placed.line - 4 : placed.line - 1]
    assert before == ["  tags: pointwise", "# Alias for trunc", ""]
    assert lines[placed.line - 1 + len(block.splitlines())] == ""
    assert lines[placed.line + len(block.splitlines())].startswith("- func: fix(")


def test_yaml_without_the_sibling_appends_at_the_end() -> None:
    placed = insert.native_functions("- func: a(Tensor self) -> Tensor\n", "trunc", "- func: b()\n")
    assert placed.text == "- func: a(Tensor self) -> Tensor\n\n- func: b()\n"
    assert "no `trunc`" in placed.where


def test_stub_declaration_goes_after_the_sibling_or_the_last_of_its_type() -> None:
    text = "DECLARE_DISPATCH(unary_fn, abs_stub)\nDECLARE_DISPATCH(unary_fn, trunc_stub)\nX\n"
    placed = insert.stub_declaration(
        text, "trunc", "unary_fn", "DECLARE_DISPATCH(unary_fn, new_stub)"
    )
    assert placed.text.splitlines() == [
        "DECLARE_DISPATCH(unary_fn, abs_stub)",
        "DECLARE_DISPATCH(unary_fn, trunc_stub)",
        "DECLARE_DISPATCH(unary_fn, new_stub)",
        "X",
    ]
    placed = insert.stub_declaration(text, "sin", "unary_fn", "D(new)")
    assert placed.text.splitlines()[2] == "D(new)" and "not found" in placed.where


def test_python_call_and_list_entry_and_sorted_lines() -> None:
    docs = (
        'add_docstr(\n    torch.a,\n    r"""\nA\n""",\n)\n\n'
        'add_docstr(\n    torch.b,\n    "b",\n)\n'
    )
    placed = insert.python_call(
        docs, "add_docstr", r"\s+torch\.a,\s*$", "add_docstr(\n    torch.n,\n)\n", "a"
    )
    assert placed.text == docs.replace(
        '""",\n)\n\n', '""",\n)\n\nadd_docstr(\n    torch.n,\n)\n\n', 1
    )
    ast.parse(placed.text.replace("add_docstr", "f"))
    op_db = "op_db = [\n    OpInfo('a',\n           x=1,\n           ),\n    OpInfo('b'),\n]\n"
    got = insert.list_entry(
        op_db, re.compile(r"^(\s+)[A-Za-z]*Info\(\s*['\"]a['\"]"), "    OpInfo('n'),\n", "a"
    )
    assert got is not None
    assert got.text == op_db.replace("    OpInfo('b')", "    OpInfo('n'),\n    OpInfo('b')")
    placed = insert.sorted_lines(
        _DECOMP_EXPECT, ["aten::my_frac", "aten::my_frac.out", "aten::my_frac_"], "x"
    )
    assert placed.text.splitlines() == sorted(placed.text.splitlines())
    assert placed.text.count("aten::my_frac") == 3


# --------------------------------------------------------------------------
# The scaffold


def test_dry_run_prints_a_diff_git_can_apply_and_writes_nothing(ws: workspace.Workspace) -> None:
    before = snapshot(ws.checkout_path)
    result = scaffold(ws, "my_frac", dry_run=True)
    assert snapshot(ws.checkout_path) == before
    assert not manifests.names(ws.root)
    diff = result.diff
    assert "+++ b/aten/src/ATen/native/cpu/MyFracKernel.cpp" in diff
    assert "+DECLARE_DISPATCH(unary_fn, my_frac_stub)" in diff
    check = subprocess.run(
        ["git", "-C", str(ws.checkout_path), "apply", "--check", "-"],
        input=diff,
        text=True,
        capture_output=True,
    )
    assert check.returncode == 0, check.stderr
    assert to_json(result)["commit"] is None


def test_scaffold_commits_everything_on_a_new_branch(ws: workspace.Workspace) -> None:
    repo = ws.checkout_path
    base = _git(repo, "rev-parse", "HEAD").strip()
    result = scaffold(ws, "my_frac")
    assert _git(repo, "symbolic-ref", "--short", "HEAD").strip() == "onboard/new-op-my_frac"
    assert _git(repo, "rev-parse", "HEAD~1").strip() == base
    assert _git(repo, "status", "--porcelain") == ""
    changed = set(_git(repo, "diff", "--name-only", base, "HEAD").split())
    assert changed == {c.path for c in result.plan.changes}
    assert {
        NATIVE_YAML,
        "aten/src/ATen/native/UnaryOps.h",
        "aten/src/ATen/native/MyFrac.cpp",
        "aten/src/ATen/native/cpu/MyFracKernel.cpp",
        "aten/src/ATen/native/cuda/MyFrac.cu",
        "tools/autograd/derivatives.yaml",
        "torch/_torch_docs.py",
        "torch/_tensor_docs.py",
        "torch/overrides.py",
        "torch/testing/_internal/common_methods_invocations.py",
        "test/test_my_frac.py",
    } == changed
    # The reference tree lacks the docs index and the decomposition expect file.
    assert {u.path for u in result.plan.unplaced} == {DOCS_INDEX, DECOMP_EXPECT}
    for path in (
        "torch/_torch_docs.py",
        "torch/_tensor_docs.py",
        "torch/overrides.py",
        "torch/testing/_internal/common_methods_invocations.py",
        "test/test_my_frac.py",
    ):
        ast.parse((repo / path).read_text(), filename=path)
    yaml.safe_load((repo / NATIVE_YAML).read_text())
    assert _reference(repo, "test/test_my_frac.py")[0] == "x.clone()"
    saved = manifests.load(ws.root, "my_frac")
    assert saved.family == family.default("unary") and saved.branch == result.branch
    # Then the same name is an existing op on this branch.
    with pytest.raises(BadInput, match="already exists"):
        scaffold(ws, "my_frac")


def test_full_checkout_places_the_docs_index_and_expect_lines(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", full=True)
    result = scaffold(ws, "my_frac")
    assert result.plan.unplaced == []
    index = (ws.checkout_path / DOCS_INDEX).read_text()
    assert "    trunc\n    my_frac\n    xlogy\n" in index
    expect = (ws.checkout_path / DECOMP_EXPECT).read_text().splitlines()
    assert expect == sorted(expect) and "aten::my_frac.out" in expect


def test_binary_scaffold_goes_next_to_hypot(ws: workspace.Workspace) -> None:
    result = scaffold(ws, "my_hypot2", kind="binary")
    repo = ws.checkout_path
    yaml_text = (repo / NATIVE_YAML).read_text()
    assert "- func: my_hypot2(Tensor self, Tensor other) -> Tensor" in yaml_text
    assert "- func: my_hypot2_(Tensor(a!) self, Tensor other) -> Tensor(a!)" in yaml_text
    assert yaml_text.index("- func: hypot_(") < yaml_text.index("- func: my_hypot2(")
    header = (repo / "aten/src/ATen/native/BinaryOps.h").read_text()
    assert (
        "DECLARE_DISPATCH(structured_binary_fn, hypot_stub)\n"
        "DECLARE_DISPATCH(structured_binary_fn, my_hypot2_stub)\n" in header
    )
    kernel = (repo / "aten/src/ATen/native/cpu/MyHypot2Kernel.cpp").read_text()
    assert "iter.common_dtype()" in kernel and "scalar_t a, scalar_t b" in kernel
    assert (
        "BinaryUfuncInfo('my_hypot2'"
        in (repo / "torch/testing/_internal/common_methods_invocations.py").read_text()
    )
    assert to_json(result)["kind"] == "binary"


@pytest.mark.parametrize("fail_at", [1, 4, 11])
def test_a_failure_mid_scaffold_leaves_the_checkout_exactly_as_it_was(
    ws: workspace.Workspace, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    repo = ws.checkout_path
    (repo / "notes.txt").write_text("an untracked file of the user\n")
    before = snapshot(repo)
    real = apply._write_file
    calls = {"n": 0}

    def flaky(path: Path, text: str) -> None:
        calls["n"] += 1
        if calls["n"] == fail_at:
            real(path, text[: len(text) // 2])  # a half-written file, then the failure
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(apply, "_write_file", flaky)
    with pytest.raises(OSError, match="No space left"):
        scaffold(ws, "my_frac")
    assert calls["n"] == fail_at
    assert snapshot(repo) == before
    assert not manifests.names(ws.root)


def test_rollback_from_a_detached_head_stays_detached(
    ws: workspace.Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = ws.checkout_path
    _git(repo, "checkout", "-q", "--detach")
    head = _git(repo, "rev-parse", "HEAD").strip()

    def broken(path: Path, text: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(apply, "_write_file", broken)
    with pytest.raises(PermissionError):
        scaffold(ws, "my_frac")
    assert subprocess.run(["git", "-C", str(repo), "symbolic-ref", "-q", "HEAD"]).returncode == 1
    assert _git(repo, "rev-parse", "HEAD").strip() == head
    assert _git(repo, "status", "--porcelain", "--ignored") == ""
    assert "onboard/new-op-my_frac" not in _git(repo, "branch", "--list")


def test_ctrl_c_during_the_commit_rolls_back_too(
    ws: workspace.Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(ws.checkout_path)

    def interrupted(*args: object, **kwargs: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(apply.git.history, "commit_index", interrupted)
    with pytest.raises(KeyboardInterrupt):
        scaffold(ws, "my_frac")
    assert snapshot(ws.checkout_path) == before


def test_a_dirty_checkout_or_an_existing_branch_is_refused(ws: workspace.Workspace) -> None:
    from onboard.report import Reporter

    repo = ws.checkout_path
    yaml_path = repo / NATIVE_YAML
    yaml_path.write_text(yaml_path.read_text() + "\n# my edit\n")
    docs = repo / "torch/_torch_docs.py"
    docs.write_text(docs.read_text() + "\n# mine\n")
    reporter = Reporter()
    with pytest.raises(OnboardError, match="uncommitted changes") as info:
        scaffold(ws, "my_frac", reporter=reporter)
    # Whole paths (the first status line's leading space is not eaten), and no
    # "writing N files" before the refusal.
    assert f"({NATIVE_YAML}, torch/_torch_docs.py)" in info.value.message
    assert not any(m.startswith("writing") for m in reporter.messages)
    _git(repo, "checkout", "-q", "--", "torch/_torch_docs.py")
    _git(repo, "checkout", "-q", "--", NATIVE_YAML)
    _git(repo, "branch", "onboard/new-op-my_frac")
    before = snapshot(repo)
    with pytest.raises(BadInput, match="already exists"):
        scaffold(ws, "my_frac")
    assert snapshot(repo) == before


def test_an_untracked_file_in_the_way_is_never_overwritten(ws: workspace.Workspace) -> None:
    target = ws.checkout_path / "aten/src/ATen/native/cpu/MyFracKernel.cpp"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("// mine\n")
    with pytest.raises(BadInput, match="never overwrites"):
        scaffold(ws, "my_frac")
    assert target.read_text() == "// mine\n"


def test_like_copies_the_family_from_the_installed_torch(ws: workspace.Workspace) -> None:
    result = scaffold(ws, "my_trunc", like="trunc", dry_run=True)
    fam = result.plan.family
    assert (fam.kind, fam.int_path, fam.sibling, fam.like) == ("unary", "no_op", "trunc", "trunc")
    assert fam.float_dtypes == family.FLOAT_DTYPES
    assert "result.copy_(self)" in result.diff
    hypot = scaffold(ws, "my_hypot", like="hypot", dry_run=True).plan.family
    assert (hypot.kind, hypot.int_path, hypot.header) == (
        "binary",
        "unsupported",
        family.BINARY_HEADER,
    )
    with pytest.raises(BadInput, match="is a binary op but --kind unary"):
        scaffold(ws, "my_hypot", like="hypot", kind="unary", dry_run=True)
    with pytest.raises(BadInput, match="neither"):
        scaffold(ws, "my_mm", like="mm", dry_run=True)
    with pytest.raises(BadInput, match="no `not_an_op` entry"):
        scaffold(ws, "my_x", like="not_an_op", dry_run=True)


def test_torchgen_accepts_the_edited_yaml_and_derivatives(ws: workspace.Workspace) -> None:
    scaffold(ws, "my_frac")
    scaffold(ws, "my_hypot2", kind="binary")
    repo = ws.checkout_path
    code = (
        "import sys\n"
        "from torchgen.gen import parse_native_yaml\n"
        "from torchgen.packaged.autograd.load_derivatives import load_derivatives\n"
        "nf, tags, dv = sys.argv[1:4]\n"
        "fns = parse_native_yaml(nf, tags).native_functions\n"
        "print(sorted(str(f.func.name) for f in fns if 'my_' in str(f.func.name)))\n"
        "infos, _ = load_derivatives(dv, nf, tags)\n"
        "print(sorted(str(s.name) for s in infos if str(s.name).startswith('my_')))\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(repo / NATIVE_YAML),
            str(repo / "aten/src/ATen/native/tags.yaml"),
            str(repo / "tools/autograd/derivatives.yaml"),
        ],
        capture_output=True,
        text=True,
        cwd=ws.root,
        check=True,
    ).stdout.splitlines()
    assert out[0] == str(
        ["my_frac", "my_frac.out", "my_frac_", "my_hypot2", "my_hypot2.out", "my_hypot2_"]
    )
    assert out[1] == str(["my_frac", "my_hypot2"])


# --------------------------------------------------------------------------
# Verify pieces that need no compiler


def test_consistency_names_the_file_that_lacks_the_registration(ws: workspace.Workspace) -> None:
    scaffold(ws, "my_frac")
    files = manifests.load(ws.root, "my_frac").files
    facts = {"kernels": {"CPU": "my_frac_out", "CUDA": "my_frac_out"}}
    passed = consistency(ws.checkout_path, "my_frac", files, facts)
    assert passed.status == "passed"
    # The line of the stub's own DECLARE_DISPATCH, not the header's first one (abs_stub).
    header = (ws.checkout_path / "aten/src/ATen/native/UnaryOps.h").read_text().splitlines()
    declared = next(i for i, ln in enumerate(header, 1) if "my_frac_stub" in ln)
    assert f"my_frac_stub declared (aten/src/ATen/native/UnaryOps.h:{declared})" in passed.detail
    cu = ws.checkout_path / "aten/src/ATen/native/cuda/MyFrac.cu"
    cu.write_text(
        cu.read_text().replace("REGISTER_DISPATCH(my_frac_stub", "// REGISTER(my_frac_stub")
    )
    step = consistency(ws.checkout_path, "my_frac", files, facts)
    assert step.status == "failed"
    assert "not registered for CUDA" in step.detail
    assert step.location == "aten/src/ATen/native/cuda/MyFrac.cu"
    facts = {"kernels": {"CPU": "my_frac_out", "CUDA": "my_frac_cuda_out"}}
    assert (
        "CUDA to my_frac_cuda_out" in consistency(ws.checkout_path, "my_frac", files, facts).detail
    )


def test_compiler_errors_point_at_the_checkout_file(tmp_path: Path) -> None:
    checkout = tmp_path / "pytorch"
    kernel = checkout / "aten/src/ATen/native/cpu/MyFracKernel.cpp"
    log = (
        "[1/3] c++ ...\n"
        "/usr/include/c++/12/bits/x.h:10:3: error: in a system header\n"
        f"{kernel}:31:44: error: 'trnc' is not a member of 'std'\n"
    )
    where, message = _first_compiler_error(log, checkout)
    assert where == "aten/src/ATen/native/cpu/MyFracKernel.cpp:31"
    assert "'trnc' is not a member" in message
    nvcc = (
        f'{checkout}/aten/src/ATen/native/cuda/MyFrac.cu(22): error: identifier "x" is undefined\n'
    )
    assert _first_compiler_error(nvcc, checkout)[0] == "aten/src/ATen/native/cuda/MyFrac.cu:22"


def test_reference_is_read_without_importing_the_test(tmp_path: Path) -> None:
    path = tmp_path / "test" / "test_x.py"
    path.parent.mkdir()
    path.write_text('import torch_not_installed\n\nREFERENCE = "x - torch.trunc(x)"\n')
    assert _reference(tmp_path, "test/test_x.py") == ("x - torch.trunc(x)", 3, None)
    path.write_text("REFERENCE = make()\n")
    assert "string literal" in (_reference(tmp_path, "test/test_x.py")[2] or "")


# --------------------------------------------------------------------------
# The command line


@pytest.mark.parametrize(
    ("name", "said", "next_step"),
    [
        pytest.param("mm", "aten::mm exists, but practice works on structured pointwise ops only",
                     "`onboard where mm`", id="an-existing-op-that-is-not-pointwise"),
        pytest.param("int", "`int` is a C++ keyword", "`onboard new-op my_int`",
                     id="a-cpp-keyword"),
        pytest.param("lambda", "`lambda` is a Python keyword", "`onboard new-op my_lambda`",
                     id="a-python-keyword"),
        pytest.param("Bad-Name", "`Bad-Name` is not a valid operator name",
                     "`onboard new-op NAME`", id="not-an-identifier"),
        pytest.param("foo_", "`foo_` ends in `_`, which torchgen reads as the in-place variant "
                     "of `foo`", "`onboard new-op foo`", id="an-in-place-name"),
    ],
)  # fmt: skip
def test_cli_refusals_exit_2_with_one_paragraph(
    ws: workspace.Workspace,
    capsys: pytest.CaptureFixture[str],
    name: str,
    said: str,
    next_step: str,
) -> None:
    from onboard.crash import run_cli

    code = run_cli(cli, ["new-op", name, "--workspace", str(ws.root), "--json"])
    captured = capsys.readouterr()
    assert code == 2, captured
    payload = json.loads(captured.out)
    error = payload["error"]
    assert payload["ok"] is False
    assert error["message"].startswith(said) and next_step in error["next_step"]
    assert captured.err.startswith("Error: ") and "Traceback" not in captured.err


def test_cli_dry_run_and_scaffold_json(ws: workspace.Workspace) -> None:
    def new_op(option: str) -> subprocess.CompletedProcess[str]:
        argv = ["new-op", "my_frac", option, "--workspace", str(ws.root)]
        return subprocess.run(
            [sys.executable, "-m", "onboard", *argv], capture_output=True, text=True, cwd=ws.root
        )

    proc = new_op("--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "+++ b/aten/src/ATen/native/MyFrac.cpp" in proc.stdout
    assert "Dry run: nothing was written" in proc.stdout
    proc = new_op("--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] and data["branch"] == "onboard/new-op-my_frac" and len(data["commit"]) == 40
    assert {c["action"] for c in data["changes"]} == {"create", "insert"}
    assert {u["path"] for u in data["unplaced"]} == {DOCS_INDEX, DECOMP_EXPECT}
    assert data["diff"] == ""


def test_a_name_too_long_for_a_file_name_is_bad_usage(
    ws: workspace.Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # 300 characters: the branch ref and `test/test_NAME.py` would fail with
    # `File name too long` halfway through.
    from onboard.crash import run_cli

    long_name = "my_" + "x" * 297
    monkeypatch.chdir(ws.root)
    refs_before = _git(ws.checkout_path, "for-each-ref")
    assert run_cli(cli, ["new-op", long_name]) == 2
    err = capsys.readouterr().err
    assert "300 characters long" in err and "at most 80" in err and "Traceback" not in err
    assert "File name too long" not in err
    assert _git(ws.checkout_path, "for-each-ref") == refs_before
    names.check_shape("my_" + "x" * (names.MAX_NAME_LENGTH - 3))  # the limit itself is fine


def test_cli_without_a_workspace_names_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from onboard.crash import run_cli

    monkeypatch.chdir(tmp_path)
    assert run_cli(cli, ["new-op", "my_frac"]) == 1
    assert "onboard setup" in capsys.readouterr().err
