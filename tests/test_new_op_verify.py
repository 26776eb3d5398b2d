"""`onboard new-op` then verify, for real: torchgen, a C++ compile, numerics, nvcc.

Slow (minutes cold on 2 cores): a `--from-wheel` workspace made by `onboard
setup`, the scaffold, and the workspace's own `nox -s verify` through
`onboard verify`. The module shares one workspace so the compile cache is warm
after the first test, as it is for a user.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli import run_onboard as onboard
from fixtures.cli import wheel_workspace

from onboard import workspace
from onboard.workflows.newop.checks import OpVerification, verify_op

pytestmark = pytest.mark.slow

KERNEL = "aten/src/ATen/native/cpu/MyFracKernel.cpp"
CU_KERNEL = "aten/src/ATen/native/cuda/MyFrac.cu"
TEST_FILE = "test/test_my_frac.py"
OPINFO = "torch/testing/_internal/common_methods_invocations.py"


def steps(result: OpVerification) -> dict[str, tuple[str, str, str | None]]:
    return {s.name: (s.status, s.detail, s.location) for s in result.steps}


def edit(path: Path, old: str, new: str) -> None:  # one exact replacement
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


@pytest.fixture(scope="module")
def frac_ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[workspace.Workspace]:
    base = tmp_path_factory.mktemp("newop")
    root = wheel_workspace(base)
    scaffolded = onboard("new-op", "my_frac", "--json", "--workspace", str(root), cwd=base)
    assert scaffolded.returncode == 0, scaffolded.stderr[-3000:]
    yield workspace.load(root)


MARKER = "TODO(onboard new-op)"


def marked_lines(repo: Path) -> list[str]:
    """path:line of every line the scaffold marked, by a plain text search."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "grep", "-n", "-F", MARKER],
        capture_output=True,
        text=True,
    ).stdout
    return sorted(":".join(row.split(":", 2)[:2]) for row in listed.splitlines())


def test_the_scaffold_as_written_checks_out_but_is_not_written(
    frac_ws: workspace.Workspace,
) -> None:
    result = verify_op(frac_ws, "my_frac")
    got = steps(result)
    for name in (
        "torchgen parses native_functions.yaml",
        "load_derivatives accepts the formula",
        "stub and impl consistent across files",
        "full torchgen codegen",
        "compile (CPU, out of tree)",
        "numerics against REFERENCE",
        "meta device",
        "torch.library.opcheck",
        "CUDA kernel compiles (nvcc)" if Path("/usr/local/bin/nvcc").exists() else "meta device",
    ):
        assert got[name][0] == "passed", (name, got[name])
    assert "float32, float64, bfloat16, float16, int64" in got["numerics against REFERENCE"][1]
    for name in (
        "in-tree build",
        "CUDA numerics",
        "autograd compiled",
        "OpInfo suite",
        "docs build",
    ):
        assert got[name][0] == "not checked"
    # The placeholders compile and agree with the placeholder REFERENCE; they are
    # still not written, and the report says where each one is.
    status, detail, location = got["no new-op placeholder left"]
    truth = marked_lines(frac_ws.checkout_path)
    assert status == "failed" and not result.ok
    assert truth and location == truth[0] and all(where in detail for where in truth)
    for part in ("CPU kernel's math", "CUDA kernel's math", "derivative", "REFERENCE"):
        assert part in detail


def write_frac(repo: Path, scalar: str = "a - std::trunc(a)") -> Path:
    """The three lambdas of the scaffolded CPU kernel, as a fractional-part op."""
    kernel = repo / KERNEL
    text = kernel.read_text()
    text = re.sub(
        r"cpu_kernel\(iter, \[\]\(scalar_t a\) -> scalar_t \{ return .*; \}\);",
        "cpu_kernel(iter, [](scalar_t a) -> scalar_t { return a - a; });",
        text,
    )
    text = re.sub(
        r"(\n\s+)\[\]\(scalar_t a\) -> scalar_t \{ return .*; \},",
        rf"\g<1>[](scalar_t a) -> scalar_t {{ return {scalar}; }},",
        text,
    )
    text = re.sub(
        r"\[\]\(Vectorized<scalar_t> a\) \{ return .*; \}\);",
        "[](Vectorized<scalar_t> a) { return a - a.trunc(); });",
        text,
    )
    kernel.write_text(text)
    cu = repo / CU_KERNEL
    cu.write_text(
        re.sub(r"return a;  // TODO\(onboard new-op\).*", "return a - trunc(a);", cu.read_text())
    )
    for rel in ("tools/autograd/derivatives.yaml", "torch/_torch_docs.py", OPINFO):
        path = repo / rel  # the derivative (1) and the rest are right as scaffolded
        if path.is_file():
            lines = path.read_text().splitlines(True)
            path.write_text("".join(ln for ln in lines if MARKER not in ln))
    test = repo / TEST_FILE
    test.write_text(
        re.sub(
            r"^REFERENCE = .*$", 'REFERENCE = "x - torch.trunc(x)"', test.read_text(), flags=re.M
        )
    )
    return kernel


def test_a_real_kernel_passes_nox_verify(frac_ws: workspace.Workspace) -> None:
    write_frac(frac_ws.checkout_path)
    done = onboard("verify", "--json", "--workspace", str(frac_ws.root), cwd=frac_ws.root)
    data = json.loads(done.stdout)
    mine = {c["name"]: c for c in data["checks"] if c["name"].startswith("new-op my_frac")}
    assert mine["new-op my_frac: numerics against REFERENCE"]["status"] == "passed", mine
    assert "x - torch.trunc(x)" in mine["new-op my_frac: numerics against REFERENCE"]["detail"]
    assert mine["new-op my_frac: compile (CPU, out of tree)"]["status"] == "passed"
    assert not [c for c in mine.values() if c["status"] == "failed"]
    assert done.returncode == 0, (data, done.stderr[-2000:])
    assert data["ok"] is True


def test_a_wrong_kernel_fails_and_points_at_its_lambda(frac_ws: workspace.Workspace) -> None:
    kernel = write_frac(frac_ws.checkout_path, scalar="a + std::trunc(a)")
    try:
        result = verify_op(frac_ws, "my_frac")
        status, detail, location = steps(result)["numerics against REFERENCE"]
        assert status == "failed" and not result.ok
        assert location == f"{KERNEL}:{line_of(kernel, 'a + std::trunc(a)')}"
        assert "scalar lambda" in detail and "REFERENCE" in detail
        assert "float32/functional/scalar" in detail
    finally:
        write_frac(frac_ws.checkout_path)


def test_a_compile_error_names_the_file_and_line(frac_ws: workspace.Workspace) -> None:
    kernel = write_frac(frac_ws.checkout_path, scalar="a - std::trnc(a)")
    try:
        result = verify_op(frac_ws, "my_frac")
        status, detail, location = steps(result)["compile (CPU, out of tree)"]
        assert status == "failed"
        assert location == f"{KERNEL}:{line_of(kernel, 'std::trnc')}"
        assert "trnc" in detail
    finally:
        write_frac(frac_ws.checkout_path)


def test_a_host_side_mistake_in_the_cu_file_fails_the_nvcc_check(
    frac_ws: workspace.Workspace,
) -> None:
    # The launcher is host code: the check must see it (and the templates it
    # instantiates) though it generates device code only.
    cu = frac_ws.checkout_path / CU_KERNEL
    original = cu.read_text()
    edit(
        cu,
        "void my_frac_kernel_cuda(TensorIteratorBase& iter) {\n",
        "void my_frac_kernel_cuda(TensorIteratorBase& iter) {\n  iter.no_such_member();\n",
    )
    try:
        result = verify_op(frac_ws, "my_frac")
        status, detail, location = steps(result)["CUDA kernel compiles (nvcc)"]
        if shutil.which("nvcc") is None:
            assert status == "not checked" and "nvcc is not on PATH" in detail
            return
        assert status == "failed" and not result.ok
        assert location == f"{CU_KERNEL}:{line_of(cu, 'no_such_member')}"
        assert "no_such_member" in detail
    finally:
        cu.write_text(original)


def test_a_yaml_mistake_is_reported_by_torchgen(frac_ws: workspace.Workspace) -> None:
    yaml_path = frac_ws.checkout_path / "aten/src/ATen/native/native_functions.yaml"
    original = yaml_path.read_text()
    try:
        edit(
            yaml_path,
            "  structured_delegate: my_frac.out\n",
            "  structured_delegate: my_frac.outt\n",
        )
        result = verify_op(frac_ws, "my_frac")
        status, detail, location = steps(result)["torchgen parses native_functions.yaml"]
        assert status == "failed" and "my_frac.outt" in detail
        assert location is not None and location.startswith(
            "aten/src/ATen/native/native_functions.yaml:"
        )
        assert steps(result)["compile (CPU, out of tree)"][0] == "not checked"
    finally:
        yaml_path.write_text(original)


def test_a_binary_op_verifies(tmp_path: Path) -> None:
    from test_new_op import make_workspace

    from onboard.workflows.newop import scaffold

    ws = make_workspace(tmp_path / "ws")
    scaffold(ws, "my_hypot2", kind="binary")
    result = verify_op(ws, "my_hypot2")
    got = steps(result)
    failed = [name for name, (status, _, _) in got.items() if status == "failed"]
    assert failed == ["no new-op placeholder left"], got  # the scaffold as written
    assert got["numerics against REFERENCE"][0] == "passed"
    assert "`x + y`" in got["numerics against REFERENCE"][1]


def test_integer_inputs_with_non_integer_results_point_at_the_meta_function(
    tmp_path: Path,
) -> None:
    import torch
    from test_new_op import make_workspace

    from onboard.workflows.newop import scaffold

    math = "x / (1 + x.abs())"
    # The premise, from torch itself: on integers the math gives non-integer floats.
    ints = torch.arange(-5, 6, dtype=torch.int64)
    expected = eval(math, {"x": ints})
    assert expected.is_floating_point() and bool((expected != expected.trunc()).any())

    ws = make_workspace(tmp_path / "ws")
    scaffold(ws, "my_softsign", kind="unary")
    repo = ws.checkout_path
    kernel = repo / "aten/src/ATen/native/cpu/MySoftsignKernel.cpp"
    text = kernel.read_text()
    vector = "[](Vectorized<scalar_t> a) { return a; }"
    text = text.replace(
        vector, vector.replace("a; }", "a / (a.abs() + Vectorized<scalar_t>(1)); }")
    )
    text = text.replace("{ return a; }", "{ return a / (1 + std::abs(a)); }")
    kernel.write_text(text)
    test = repo / "test/test_my_softsign.py"
    test.write_text(
        re.sub(r"^REFERENCE = .*$", f"REFERENCE = {math!r}", test.read_text(), flags=re.M)
    )
    meta = repo / "aten/src/ATen/native/MySoftsign.cpp"

    status, detail, location = steps(verify_op(ws, "my_softsign"))["numerics against REFERENCE"]
    assert status == "failed" and "int64" in detail
    assert (
        location
        == f"aten/src/ATen/native/MySoftsign.cpp:{line_of(meta, 'build_borrowing_unary_op')}"
    )
    assert "build_borrowing_unary_float_op" in detail and "--like sin" in detail
    assert "look at the" not in detail  # no kernel lambda can change the output dtype

    # The hint is the fix: with a float-promoting meta function every dtype agrees.
    edit(meta, "build_borrowing_unary_op(", "build_borrowing_unary_float_op(")
    status, detail, _ = steps(verify_op(ws, "my_softsign"))["numerics against REFERENCE"]
    assert status == "passed", detail
