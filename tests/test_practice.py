"""Practice mode, `onboard new-op EXISTING`: the branch, the files, what is taken out
on a full checkout, the guide, refusals, rollback, `--reveal`, and the judge's checks
that need no compiler. The compiles are in tests/test_practice_verify.py (slow).

The checkout is the wheel-seeded reference tree of tests/test_new_op.py; a "full
checkout" adds C++/CUDA files shaped like PyTorch's own kernels of trunc
(cpu/UnaryOpsKernel.cpp registers it with one macro line, cuda/UnaryFractionKernels.cu
with a kernel function and REGISTER_DISPATCH).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from test_new_op import _git, make_workspace, snapshot

from onboard import workspace
from onboard.errors import BadInput
from onboard.jsonable import to_json
from onboard.workflows.newop import apply, judge, practice, scaffold
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop.reveal import reveal

CPU = "aten/src/ATen/native/cpu/PracticeTruncKernel.cpp"
CU = "aten/src/ATen/native/cuda/PracticeTrunc.cu"
REAL_CPU = "aten/src/ATen/native/cpu/UnaryOpsKernel.cpp"
REAL_CU = "aten/src/ATen/native/cuda/UnaryFractionKernels.cu"
REAL_META = "aten/src/ATen/native/UnaryOps.cpp"
UNARY_OPS_KERNEL = """\
namespace at::native {
inline namespace CPU_CAPABILITY {
static void ceil_kernel(TensorIteratorBase& iter) {}
} // namespace CPU_CAPABILITY
IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(ceil)
IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(trunc)
IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(i0)
} // namespace at::native
"""
FRACTION_KERNELS = """\
namespace at::native {

void trunc_kernel_cuda(TensorIteratorBase& iter) {
  AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, iter.dtype(), "trunc_cuda", [&]() {
    gpu_kernel(iter, []GPU_LAMBDA(scalar_t a) -> scalar_t {
      return ::trunc(static_cast<accscalar_t>(a));
    });
  });
}

void frac_kernel_cuda(TensorIteratorBase& iter) {}

REGISTER_DISPATCH(frac_stub, &frac_kernel_cuda)
REGISTER_DISPATCH(trunc_stub, &trunc_kernel_cuda)

} // namespace at::native
"""
UNARY_OPS = """\
TORCH_META_FUNC(trunc) (const Tensor& self) {
  build_borrowing_unary_op(maybe_get_output(), self);
}
CREATE_UNARY_TORCH_IMPL_INTEGER_NO_OP_FUNC(trunc_out, trunc_stub)
DEFINE_DISPATCH(trunc_stub);
"""


def full_workspace(root: Path) -> workspace.Workspace:
    """A workspace whose checkout is a full clone (PyTorch's own trunc kernels in it)."""
    ws = make_workspace(
        root,
        full=True,
        extra={REAL_CPU: UNARY_OPS_KERNEL, REAL_CU: FRACTION_KERNELS, REAL_META: UNARY_OPS},
    )
    commit = _git(ws.checkout_path, "rev-parse", "HEAD").strip()
    full = replace(ws, checkout_kind=workspace.CLONE, commit=commit)
    workspace.save(full)
    return workspace.load(root)


_PROBED: dict[tuple[object, ...], dict[str, object]] = {}


@pytest.fixture(autouse=True)
def probe_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ask the installed torch about an op once per session (each ask imports torch)."""
    from onboard.workflows.newop import family

    real = family.probe

    def cached(python: str, op: str, kind: str, cwd: Path, *, edges: bool = False) -> object:
        key = (python, op, kind, edges)
        if key not in _PROBED:
            _PROBED[key] = real(python, op, kind, cwd, edges=edges)
        return _PROBED[key]

    monkeypatch.setattr(family, "probe", cached)


@pytest.fixture
def ws(tmp_path: Path) -> workspace.Workspace:
    return make_workspace(tmp_path / "ws")


def test_practice_on_the_reference_tree_writes_new_files_on_its_branch(
    ws: workspace.Workspace,
) -> None:
    repo = ws.checkout_path
    base = _git(repo, "rev-parse", "HEAD").strip()
    result = scaffold(ws, "trunc")
    assert isinstance(result, practice.PracticeResult)
    assert _git(repo, "symbolic-ref", "--short", "HEAD").strip() == "onboard/practice-trunc"
    assert _git(repo, "rev-parse", "HEAD~1").strip() == base
    assert _git(repo, "status", "--porcelain") == ""
    changed = set(_git(repo, "diff", "--name-only", base, "HEAD").split())
    assert changed == {CPU, CU, "test/test_practice_trunc.py"}
    # One marked line per kernel, returning the placeholder; the stub registered.
    for rel in (CPU, CU):
        text = (repo / rel).read_text()
        marked = [ln for ln in text.splitlines() if practice.MARKER in ln]
        assert len(marked) == 1 and marked[0].strip().startswith("return a;")
        assert "REGISTER_DISPATCH(trunc_stub, &" in text
        assert text.count("{") == text.count("}")
    assert "kFloat, kDouble, kBFloat16, kHalf" in (repo / CPU).read_text()
    # trunc's impl copies integers (as the installed torch shows): not the kernel's job.
    assert result.kernel == ["float32", "float64", "bfloat16", "float16"]
    assert {"int64", "uint8"} <= set(result.copied)
    test_src = (repo / "test/test_practice_trunc.py").read_text()
    ast.parse(test_src)
    assert "float('nan')" in test_src and "-0.0" in test_src
    # The guide: in the workspace, not the checkout; names the three parts.
    assert result.guide_path == ws.root / "PRACTICE.md"
    guide = result.guide_path.read_text()
    assert "DECLARE_DISPATCH(unary_fn, trunc_stub)" in guide
    cpu_line = next(c.line for c in result.plan.changes if c.path == CPU)
    assert f"{CPU}:{cpu_line}" in guide
    assert "native_functions.yaml:" in guide and "onboard verify" in guide
    saved = manifests.load(ws.root, "trunc")
    assert saved.is_practice and saved.branch == "onboard/practice-trunc"
    assert saved.practice["base_commit"] == base
    assert judge.practice_ops(ws) == (["trunc"], [])
    data = to_json(result)
    assert data["mode"] == "practice" and data["oracle"] == "torch.trunc"
    assert data["taken_out"] == []
    # The same practice twice: the branch is there, so it is refused.
    _git(repo, "checkout", "-q", "reference")
    with pytest.raises(BadInput, match="already exists"):
        scaffold(ws, "trunc")


def test_practice_on_a_full_checkout_takes_out_the_real_kernel_on_its_branch_only(
    tmp_path: Path,
) -> None:
    ws = full_workspace(tmp_path / "ws")
    repo = ws.checkout_path
    _git(repo, "branch", "my-work")
    before_cpu = (repo / REAL_CPU).read_text()
    before_cu = (repo / REAL_CU).read_text()
    result = scaffold(ws, "trunc")
    assert isinstance(result, practice.PracticeResult)
    cpu = (repo / REAL_CPU).read_text()
    assert "IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(trunc)" not in cpu
    assert "IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(ceil)" in cpu
    assert "IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(i0)" in cpu
    cu = (repo / REAL_CU).read_text()
    assert "trunc_kernel_cuda" not in cu  # the registration and the function
    assert "REGISTER_DISPATCH(frac_stub, &frac_kernel_cuda)" in cu
    assert cu.count("{") == cu.count("}")
    assert "taken out on this branch" in cu
    assert {t.path for t in result.taken_out} == {REAL_CPU, REAL_CU}
    assert {to_json(c)["action"] for c in result.plan.changes} == {"create", "take out"}
    # PyTorch's meta/impl and DEFINE_DISPATCH stay; the guide points at them.
    assert (repo / REAL_META).read_text() == UNARY_OPS
    assert f"`{REAL_META}:5`" in result.guide
    # The user's branch and the real sources on other branches are untouched.
    for branch in ("my-work", "reference"):
        assert _git(repo, "show", f"{branch}:{REAL_CPU}") == before_cpu
        assert _git(repo, "show", f"{branch}:{REAL_CU}") == before_cu
    # Only the learner's files register the stub now.
    step = judge.registrations(ws.checkout_path, manifests.load(ws.root, "trunc"))
    assert step.status == "passed", step


def test_the_judge_finds_a_real_registration_left_behind(tmp_path: Path) -> None:
    ws = full_workspace(tmp_path / "ws")
    scaffold(ws, "trunc")
    real = ws.checkout_path / REAL_CU
    real.write_text(real.read_text() + "REGISTER_DISPATCH(trunc_stub, &trunc_kernel_cuda)\n")
    step = judge.registrations(ws.checkout_path, manifests.load(ws.root, "trunc"))
    assert step.status == "failed"
    assert "registered for CUDA at aten/src/ATen/native/cuda/UnaryFractionKernels.cu" in (
        step.detail
    )
    assert "twice" in step.detail


def test_the_judge_says_when_the_cuda_line_is_still_the_placeholder(
    ws: workspace.Workspace,
) -> None:
    scaffold(ws, "trunc")
    manifest = manifests.load(ws.root, "trunc")
    step = judge.cuda_written(ws.checkout_path, manifest)
    assert step.status == "failed" and step.location is not None
    assert step.location.startswith(CU + ":")
    cu = ws.checkout_path / CU
    cu.write_text(cu.read_text().replace("return a;", "return ::trunc(a);"))
    assert judge.cuda_written(ws.checkout_path, manifest).status == "passed"
    assert judge.pytorch_parts(ws.checkout_path, manifest).status == "passed"
    yaml_path = ws.checkout_path / "aten/src/ATen/native/native_functions.yaml"
    yaml_path.write_text(yaml_path.read_text() + "\n# mine\n")
    assert judge.pytorch_parts(ws.checkout_path, manifest).status == "not checked"


def test_take_out_keeps_a_kernel_function_something_else_uses() -> None:
    text = (
        "void shared_kernel(TensorIteratorBase& iter) {\n  x();\n}\n"
        "REGISTER_DISPATCH(trunc_stub, &shared_kernel)\n"
        "REGISTER_DISPATCH(floor_stub, &shared_kernel)\n"
    )
    after, removed = practice.take_out(text, "trunc", "// gone")
    assert "void shared_kernel" in after and "floor_stub" in after
    assert "trunc_stub" not in after
    assert [line for line, _ in removed] == [4]


def test_a_failure_mid_practice_leaves_the_full_checkout_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = full_workspace(tmp_path / "ws")
    before = snapshot(ws.checkout_path)
    real = apply._write_file
    calls = {"n": 0}

    def flaky(path: Path, text: str) -> None:
        calls["n"] += 1
        if calls["n"] == 4:  # after the new files, while taking the real kernel out
            raise KeyboardInterrupt
        real(path, text)

    monkeypatch.setattr(apply, "_write_file", flaky)
    with pytest.raises(KeyboardInterrupt):
        scaffold(ws, "trunc")
    assert snapshot(ws.checkout_path) == before
    assert not manifests.names(ws.root)
    assert not (ws.root / "PRACTICE.md").exists()


def test_practice_dry_run_writes_nothing(ws: workspace.Workspace) -> None:
    before = snapshot(ws.checkout_path)
    result = scaffold(ws, "trunc", dry_run=True)
    assert snapshot(ws.checkout_path) == before
    assert f"+++ b/{CPU}" in result.diff
    assert not (ws.root / "PRACTICE.md").exists()


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("mm", ["structured pointwise", "neither", "onboard where mm"]),
        ("abs", ["not a structured TensorIterator op", "onboard new-op trunc"]),
    ],
)
def test_ops_that_are_not_structured_pointwise_are_refused(
    ws: workspace.Workspace, name: str, words: list[str]
) -> None:
    before = snapshot(ws.checkout_path)
    with pytest.raises(BadInput) as info:
        scaffold(ws, name)
    text = info.value.paragraph()
    for word in words:
        assert word in text, text
    assert snapshot(ws.checkout_path) == before


def test_a_guide_the_user_wrote_is_kept(ws: workspace.Workspace) -> None:
    mine = ws.root / "PRACTICE.md"
    mine.write_text("my own notes\n")
    result = scaffold(ws, "trunc")
    assert isinstance(result, practice.PracticeResult)
    assert mine.read_text() == "my own notes\n"
    assert result.guide_path == ws.root / ".onboard" / "practice" / "trunc.md"


def test_reveal_on_a_full_checkout_shows_the_lines_at_the_installed_commit(
    tmp_path: Path,
) -> None:
    ws = full_workspace(tmp_path / "ws")
    scaffold(ws, "trunc")  # takes the kernel out on the practice branch
    result = reveal(ws, "trunc")
    shown = {(s.path, s.line): s for s in result.snippets}
    assert (REAL_CPU, 6) in shown
    assert "IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(trunc)" in shown[(REAL_CPU, 6)].text
    cuda = shown[(REAL_CU, 3)]
    assert cuda.text.startswith("void trunc_kernel_cuda") and cuda.text.rstrip().endswith("}")
    assert (REAL_META, 1) in shown and (REAL_META, 5) in shown
    assert any(s.path.endswith("native_functions.yaml") for s in result.snippets)
    assert result.commit == ws.commit and result.source == "checkout"


def test_reveal_on_the_reference_tree_links_the_installed_commit(
    ws: workspace.Workspace,
) -> None:
    ws = replace(ws, commit="cf30153c4c131c8164ee7798e5022d810682e2cb")
    result = reveal(ws, "trunc")
    assert result.source == "links"
    urls = [u for _, u in result.links]
    assert any(u.endswith(f"/blob/{ws.commit}/aten/src/ATen/native/UnaryOps.cpp") for u in urls)
    assert any("github.com/search" in u for u in urls)
    declared = [s for s in result.snippets if "DECLARE_DISPATCH" in s.text]
    assert declared and declared[0].path == "aten/src/ATen/native/UnaryOps.h"
    assert any("full checkout" in n for n in result.notes)


def test_reveal_of_a_name_that_is_not_an_op_is_refused(ws: workspace.Workspace) -> None:
    with pytest.raises(BadInput, match="not an op"):
        reveal(ws, "not_an_op")


def test_cli_practice_and_reveal_json(ws: workspace.Workspace) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "onboard", "new-op", *args, "--workspace", str(ws.root)],
            capture_output=True,
            text=True,
            cwd=ws.root,
        )

    done = run("trunc", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["mode"] == "practice" and data["branch"] == "onboard/practice-trunc"
    shown = run("trunc", "--reveal", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["name"] == "trunc"
    refused = run("not_an_op", "--reveal", "--json")
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["ok"] is False
    both = run("trunc", "--reveal", "--dry-run")
    assert both.returncode == 2 and "--reveal" in both.stderr
    # The checkout's own branch is where the user left it, apart from the practice.
    assert data["commit"] == _git(ws.checkout_path, "rev-parse", "HEAD").strip()


def test_an_op_the_installed_torch_lacks_cannot_be_practised(tmp_path: Path) -> None:
    """In the checkout's yaml (a new op on some branch), but nothing can judge it."""
    ws = make_workspace(tmp_path / "ws")
    yaml_path = ws.checkout_path / "aten/src/ATen/native/native_functions.yaml"
    text = yaml_path.read_text()
    start = text.index("- func: trunc(Tensor self) -> Tensor")
    end = text.index("- func: fix(", start)
    yaml_path.write_text(text + "\n" + text[start:end].replace("trunc", "their_op"))
    header = ws.checkout_path / "aten/src/ATen/native/UnaryOps.h"
    header.write_text(header.read_text() + "DECLARE_DISPATCH(unary_fn, their_op_stub)\n")
    _git(ws.checkout_path, "commit", "-qam", "their op")
    with pytest.raises(BadInput) as info:
        scaffold(ws, "their_op")
    assert "not in the installed torch" in info.value.paragraph()
    assert "onboard new-op trunc" in info.value.paragraph()


def test_verify_takes_a_practice_branch_on_a_full_checkout_as_the_installed_sources(
    tmp_path: Path,
) -> None:
    from onboard.workflows import verify

    ws = full_workspace(tmp_path / "ws")
    scaffold(ws, "trunc")
    check = verify.installed_commit(verify.VerifyContext(ws))
    assert check.status == "passed", check
    assert "1 commit(s) of yours on top of the installed commit" in check.detail
