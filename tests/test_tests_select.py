"""`onboard tests`: the selection for 20 changes on a PyTorch-shaped history.

The workspace is the fixture repository seeded from the installed wheel
(tests/opsource_helpers.py: the real native_functions.yaml and derivatives.yaml,
UnaryOps.cpp, cpu/UnaryOpsKernel.cpp, cuda/UnaryFractionKernels.cu and
LinearAlgebra.cpp in PyTorch's patterns). Each change is a real branch with real
commits (or uncommitted edits) on it. What each selection must hold is computed from
the change and from the installed torch's OpInfo database itself (`op_db` and the
lists the OpInfo-driven test files take: unary_ufuncs, binary_ufuncs, ...), never
from onboard's output.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.pytorch_repo import find_torch_dir, git
from opsource_helpers import (  # noqa: F401 - fixtures, found by pytest in this namespace
    cache_fixture,
    make_clone_workspace,
    make_reference_workspace,
    shared_cache_fixture,
)

from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput
from onboard.workflows.tests import TestsRequest
from onboard.workflows.tests import tests as select_tests
from onboard.workflows.tests.lint import check, linters
from onboard.workflows.tests.result import Selection

UNARY = "aten/src/ATen/native/UnaryOps.cpp"
UNARY_CPU = "aten/src/ATen/native/cpu/UnaryOpsKernel.cpp"
UNARY_CUDA = "aten/src/ATen/native/cuda/UnaryFractionKernels.cu"
LINALG = "aten/src/ATen/native/LinearAlgebra.cpp"
NATIVE = "aten/src/ATen/native/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
REFS = "torch/_refs/__init__.py"


# --- what PyTorch's test files take from the OpInfo database (their @ops lists) ---


@pytest.fixture(scope="module")
def opdb() -> Any:
    import torch.testing._internal.common_methods_invocations as cmi

    return cmi


def opinfo_expectation(cmi: Any, aten: str) -> dict[str, set[str]]:
    """test file -> the -k names it must run for the ATen op ``aten``: every OpInfo
    whose aten_name is the op, in each file whose @ops list holds it."""
    entries = [o for o in cmi.op_db if o.aten_name == aten]
    assert entries, f"op_db has no entry for {aten}"
    files = {
        "test/test_ops.py": entries,
        "test/test_unary_ufuncs.py": [o for o in entries if o in cmi.unary_ufuncs],
        "test/test_binary_ufuncs.py": [o for o in entries if o in cmi.binary_ufuncs],
        "test/test_reductions.py": [o for o in entries if o in cmi.reduction_ops],
        "test/test_spectral_ops.py": [o for o in entries if o in cmi.spectral_funcs],
        "test/test_ops_gradients.py": [o for o in entries if o.supports_autograd],
        "test/test_ops_fwd_gradients.py": [o for o in entries if o.supports_forward_ad],
        "test/test_decomp.py": entries,
        "test/test_meta.py": entries,
        "test/test_ops_jit.py": entries,
    }
    return {test: {o.formatted_name for o in ops} for test, ops in files.items() if ops}


def k_names(command: tuple[str, ...]) -> set[str]:
    return {command[i + 1] for i, arg in enumerate(command) if arg == "-k"}


def assert_op_tests(sel: Selection, cmi: Any, aten: str) -> None:
    expected = opinfo_expectation(cmi, aten)
    by_test = {s.test: s for s in sel.selected}
    for test, names in expected.items():
        assert test in by_test, f"{test} not selected for {aten}: {list(by_test)}"
        assert names <= k_names(by_test[test].command), (test, by_test[test].command)
        assert by_test[test].command[:2] == ("python", test)
    assert {o.name for o in cmi.op_db if o.aten_name == aten} <= set(sel.ops)
    # The OpInfo-driven files come before anything else picked for this op.
    ranks = [s.rank for s in sel.selected if s.test in expected]
    assert ranks == sorted(ranks)


# --- the workspace and its changes ---


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tests-ws") / "ws"
    make_clone_workspace(root)
    repo = root / "pytorch"
    # torch/_refs/__init__.py as the wheel ships it (the Python twin of each op).
    (repo / REFS).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(find_torch_dir() / "_refs" / "__init__.py", repo / REFS)
    git("add", REFS, cwd=repo)
    git("commit", "-q", "-m", "Add torch/_refs", cwd=repo)
    return root


def _back_on_main(path: Path) -> None:
    """The checkout as main left it: the change's edits and branch dropped."""
    git("reset", "-q", "--hard", cwd=path)
    git("clean", "-qfd", cwd=path)
    git("switch", "-q", "main", cwd=path)


@pytest.fixture
def repo(ws: Path) -> Iterator[Path]:
    yield ws / "pytorch"
    _back_on_main(ws / "pytorch")


# The yaml changes get a workspace of their own: switching back to main rewrites the
# yaml files, and a rewritten yaml is parsed with torchgen again (its cache is keyed by
# the files' stamps), which the other tests would pay for.
@pytest.fixture(scope="module")
def yaml_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tests-yaml-ws") / "ws"
    make_clone_workspace(root)
    return root


@pytest.fixture
def yaml_repo(yaml_ws: Path) -> Iterator[Path]:
    yield yaml_ws / "pytorch"
    _back_on_main(yaml_ws / "pytorch")


_branches = iter(range(1000))


def change(repo: Path, edits: dict[str, Any], *, commit: bool = True) -> None:
    """A new branch off main with ``edits`` (path -> new text, a function of the old
    text, or None to delete), committed unless ``commit`` is False."""
    git("switch", "-q", "-c", f"change-{next(_branches)}", "main", cwd=repo)
    for path, edit in edits.items():
        target = repo / path
        if edit is None:
            target.unlink()
            continue
        old = target.read_text(encoding="utf-8") if target.exists() else ""
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(edit(old) if callable(edit) else edit, encoding="utf-8")
    if commit:
        git("add", "-A", cwd=repo)
        git("commit", "-q", "-m", "a change", cwd=repo)


def insert_after(marker: str, text: str) -> Any:
    """An edit that adds ``text`` as the line after the first line holding ``marker``."""

    def edit(old: str) -> str:
        lines = old.splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if marker in line)
        return "".join(lines[: at + 1] + [text + "\n"] + lines[at + 1 :])

    return edit


def select_branch(ws: Path, **kwargs: Any) -> Selection:
    return select_tests(TestsRequest(workspace=str(ws), lint=False, **kwargs)).selection


def picked(sel: Selection) -> list[str]:
    return [s.test for s in sel.selected]


# --- kernels: each reaches its op through stub and yaml, never by file name ---


def test_cpu_kernel_body_selects_trunc_opinfo_tests(ws: Path, repo: Path, opdb: Any) -> None:
    change(repo, {UNARY_CPU: insert_after("std::trunc(a)", "        // rounding fix")})
    sel = select_branch(ws)
    assert sel.files == (UNARY_CPU,)
    assert [op.base for op in sel.changed] == ["trunc"]
    assert any("trunc_stub" in via for via in sel.changed[0].via)
    assert_op_tests(sel, opdb, "trunc")


def test_register_dispatch_line_selects_its_stub_op(ws: Path, repo: Path, opdb: Any) -> None:
    spaced = "REGISTER_DISPATCH(trunc_stub ,"
    change(repo, {UNARY_CPU: lambda t: t.replace("REGISTER_DISPATCH(trunc_stub,", spaced)})
    assert_op_tests(select_branch(ws), opdb, "trunc")


def test_structured_impl_selects_its_op(ws: Path, repo: Path, opdb: Any) -> None:
    change(repo, {UNARY: insert_after("TORCH_IMPL_FUNC(trunc_out)", "  // impl")})
    sel = select_branch(ws)
    assert [op.base for op in sel.changed] == ["trunc"]
    assert_op_tests(sel, opdb, "trunc")


def test_meta_function_selects_its_op(ws: Path, repo: Path, opdb: Any) -> None:
    change(repo, {UNARY: insert_after("TORCH_META_FUNC(trunc)", "  // meta")})
    assert_op_tests(select_branch(ws), opdb, "trunc")


def test_cuda_kernel_selects_its_op(ws: Path, repo: Path, opdb: Any) -> None:
    change(repo, {UNARY_CUDA: insert_after("return ::trunc(a);", "          // cuda")})
    assert_op_tests(select_branch(ws), opdb, "trunc")


@pytest.mark.parametrize("op", ["mm", "bmm", "mv"])
def test_one_meta_in_a_many_op_file_selects_that_op_only(
    ws: Path, repo: Path, opdb: Any, op: str
) -> None:
    text = (repo / LINALG).read_text()
    metas = re.findall(r"^TORCH_META_FUNC\((\w+)\)", text, re.M)
    assert op in metas and len(metas) > 3  # the file holds several ops
    change(repo, {LINALG: insert_after(f"TORCH_META_FUNC({op})", "  // shape check")})
    sel = select_branch(ws)
    assert [c.base for c in sel.changed] == [op]
    assert_op_tests(sel, opdb, op)
    assert "test/test_linalg.py" in picked(sel)  # the suite owning LinearAlgebra
    others = {m for m in metas if m != op}
    assert not others & set(sel.ops)


def test_a_comment_after_every_kernel_names_no_op(ws: Path, repo: Path) -> None:
    change(repo, {LINALG: lambda t: t + "// a closing note\n"})
    sel = select_branch(ws)
    assert sel.changed == () and sel.ops == ()
    assert picked(sel) == ["test/test_linalg.py"]
    assert any(LINALG in note and "no kernel" in note for note in sel.notes)


# --- the yaml files ---


def test_yaml_entry_edit_selects_that_op(yaml_ws: Path, yaml_repo: Path, opdb: Any) -> None:
    change(yaml_repo, {NATIVE: insert_after("- func: mv(Tensor self, Tensor vec)", "  # note")})
    sel = select_branch(yaml_ws)
    assert [c.base for c in sel.changed] == ["mv"]
    assert_op_tests(sel, opdb, "mv")


def test_new_yaml_op_has_no_opinfo_and_says_so(yaml_ws: Path, yaml_repo: Path, opdb: Any) -> None:
    assert not [o for o in opdb.op_db if o.aten_name == "frac_trunc"]
    entry = (
        "\n- func: frac_trunc(Tensor self) -> Tensor\n  variants: function\n"
        "  dispatch:\n    CompositeExplicitAutograd: frac_trunc\n"
    )
    change(yaml_repo, {NATIVE: lambda t: t + entry})
    sel = select_branch(yaml_ws)
    assert [(c.base, c.opinfos) for c in sel.changed] == [("frac_trunc", ())]
    first = sel.selected[0]
    assert first.command == ("python", "test/test_ops.py", "-k", "frac_trunc")
    assert "no OpInfo entry" in first.reasons[0]


def test_derivative_formula_selects_gradient_tests(
    yaml_ws: Path, yaml_repo: Path, opdb: Any
) -> None:
    change(yaml_repo, {DERIVATIVES: insert_after("- name: trunc(Tensor self)", "  # formula")})
    sel = select_branch(yaml_ws)
    assert [c.base for c in sel.changed] == ["trunc"]
    assert_op_tests(sel, opdb, "trunc")
    assert "test/test_autograd.py" in picked(sel)


# --- Python under torch/, tests, docs ---


def test_ref_in_python_selects_its_op_and_public_bindings(ws: Path, repo: Path, opdb: Any) -> None:
    change(repo, {REFS: insert_after("def trunc(", "    # ref")})
    sel = select_branch(ws)
    assert "trunc" in [c.base for c in sel.changed]
    assert_op_tests(sel, opdb, "trunc")
    assert "test/test_public_bindings.py" in picked(sel)


def test_torch_python_change_selects_public_bindings_and_suite(ws: Path, repo: Path) -> None:
    change(repo, {"torch/nn/functional.py": lambda t: t + "\n# note\n"})
    sel = select_branch(ws)
    assert sel.changed == ()
    assert picked(sel)[:2] == ["test/test_nn.py", "test/test_public_bindings.py"]
    bindings = sel.selected[1]
    assert bindings.command == ("python", "test/test_public_bindings.py")
    assert not bindings.present  # this checkout has no test/


def test_deleted_torch_file_still_runs_public_bindings(ws: Path, repo: Path) -> None:
    victim = next(p for p in sorted((repo / "torch/utils").glob("*.py")))
    change(repo, {victim.relative_to(repo).as_posix(): None})
    sel = select_branch(ws)
    assert picked(sel) == ["test/test_public_bindings.py"]


def test_docs_change_selects_nothing_and_says_why(ws: Path, repo: Path) -> None:
    change(repo, {"docs/source/notes/extending.rst": "Extending\n=========\n"})
    sel = select_branch(ws)
    assert sel.selected == ()
    assert any("docs/" in note for note in sel.notes)


def test_uncommitted_edit_is_part_of_the_change(ws: Path, repo: Path, opdb: Any) -> None:
    change(repo, {UNARY: insert_after("TORCH_META_FUNC(trunc)", "  // wip")}, commit=False)
    sel = select_branch(ws)
    assert sel.files == (UNARY,)
    assert_op_tests(sel, opdb, "trunc")


# --- a full checkout: test/ is there ---


OWNED = {
    "test/test_nn.py": '# Owner(s): ["module: nn"]\n',
    "test/test_module_hooks.py": '# Owner(s): ["module: nn"]\n',
    "test/test_optim.py": '# Owner(s): ["module: optimizer"]\n',
    "test/test_ops.py": '# Owner(s): ["module: unknown"]\n',
    "test/test_public_bindings.py": '# Owner(s): ["module: autograd"]\n',
}


@pytest.fixture
def full_repo(repo: Path) -> Iterator[Path]:
    git("switch", "-q", "main", cwd=repo)
    for path, text in OWNED.items():
        (repo / path).parent.mkdir(exist_ok=True)
        (repo / path).write_text(text + "\n\nclass TestThing:\n    pass\n")
    git("add", "test", cwd=repo)
    git("commit", "-q", "-m", "test files", cwd=repo)
    yield repo
    git("switch", "-q", "main", cwd=repo)
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo)


def test_edited_test_file_comes_first_with_its_new_tests(ws: Path, full_repo: Path) -> None:
    added = "\n    def test_relu6_bounds(self):\n        pass\n"
    edits = {"test/test_nn.py": lambda t: t + added, "torch/nn/functional.py": lambda t: t + "\n"}
    change(full_repo, edits)
    sel = select_branch(ws)
    first = sel.selected[0]
    assert first.test == "test/test_nn.py" and first.rank == 1 and first.present
    assert first.command == ("python", "test/test_nn.py", "-k", "test_relu6_bounds")
    assert ("python", "test/run_test.py", "-i", "test_nn") in first.also


def test_owner_header_and_path_keywords_in_a_full_checkout(ws: Path, full_repo: Path) -> None:
    change(full_repo, {"torch/nn/functional.py": lambda t: t + "\n# x\n"})
    sel = select_branch(ws)
    by_test = {s.test: s for s in sel.selected}
    owners_nn = [p for p, head in OWNED.items() if '"module: nn"' in head]
    for test in owners_nn:
        assert test in by_test
        assert any("Owner(s)" in r for r in by_test[test].reasons)
    assert "test/test_optim.py" not in by_test  # another area's owner
    assert by_test["test/test_public_bindings.py"].present
    change(full_repo, {"torch/optim/sgd.py": "# sgd\n"})
    assert "test/test_optim.py" in picked(select_branch(ws))


# --- the other ways to name the change ---


def test_paths_select_for_whole_files(ws: Path, repo: Path, opdb: Any) -> None:
    text = (repo / UNARY_CPU).read_text()
    stubs = re.findall(r"REGISTER_DISPATCH\((\w+)_stub", text)
    sel = select_branch(ws, paths=(UNARY_CPU,))
    assert sel.source == "paths" and sel.files == (UNARY_CPU,)
    for op in stubs:
        assert_op_tests(sel, opdb, op)


def test_op_option_selects_by_opinfo_name(ws: Path, opdb: Any) -> None:
    sel = select_branch(ws, ops=("nn.functional.gelu",))
    names = {o.formatted_name for o in opdb.op_db if o.name == "nn.functional.gelu"}
    assert sel.ops == ("nn.functional.gelu",)
    test_ops = next(s for s in sel.selected if s.test == "test/test_ops.py")
    assert names <= k_names(test_ops.command)
    with pytest.raises(BadInput):
        select_branch(ws, ops=("no_such_op_anywhere",))


def test_ten_file_change_holds_every_part(ws: Path, repo: Path, opdb: Any) -> None:
    edits: dict[str, Any] = {
        UNARY_CPU: insert_after("std::trunc(a)", "        // 1"),
        LINALG: insert_after("TORCH_META_FUNC(mm)", "  // 2"),
        "torch/nn/functional.py": lambda t: t + "\n# 3\n",
        "docs/source/index.rst": "4\n",
    }
    for i, name in enumerate(["a", "b", "c", "d", "e", "f"]):
        edits[f"torch/utils/_note_{name}.py"] = f"# {i}\n"
    change(repo, edits)
    sel = select_branch(ws)
    assert len(sel.files) == 10
    assert {c.base for c in sel.changed} == {"trunc", "mm"}
    assert_op_tests(sel, opdb, "trunc")
    assert_op_tests(sel, opdb, "mm")
    assert {"test/test_nn.py", "test/test_linalg.py", "test/test_public_bindings.py"} <= set(
        picked(sel)
    )


def test_reference_tree_names_tests_it_cannot_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opdb: Any
) -> None:
    root = tmp_path / "ref"
    make_reference_workspace(root)
    tree = root / "pytorch"
    git("switch", "-q", "-c", "fix", cwd=tree)
    (tree / "torch/nn/functional.py").write_text("# edited\n")
    sel = select_branch(root)
    assert sel.full_checkout is False and sel.base == "reference"
    assert picked(sel) == ["test/test_nn.py", "test/test_public_bindings.py"]
    assert not any(s.present for s in sel.selected)
    assert any("no test/ folder" in n for n in sel.notes)


# --- the command ---


def test_cli_json_and_text(ws: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, {UNARY: insert_after("TORCH_META_FUNC(trunc)", "  // cli")})
    code = run_cli(cli, ["tests", "--json", "--no-lint", "--workspace", str(ws)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    sel = data["selection"]
    assert sel["files"] == [UNARY] and "trunc" in sel["ops"]
    first = sel["selected"][0]
    assert first["command_line"] == " ".join(first["command"])
    code = run_cli(cli, ["tests", "--no-lint", "--workspace", str(ws)])
    out = capsys.readouterr().out
    assert code == 0 and "$ python test/test_ops.py -k trunc" in out
    code = run_cli(cli, ["tests", "--op", "no_such_op_anywhere", "--workspace", str(ws)])
    assert code == 2


# --- lint ---


def test_lint_state_from_lintrunner_toml(ws: Path, repo: Path) -> None:
    config = repo / ".lintrunner.toml"
    config.write_text(
        "[[linter]]\ncode = 'PYTESTPIN'\ninit_command = [\n    'python3',\n"
        "    'tools/linter/adapters/pip_init.py',\n    'pytest==8.0.0',\n]\n\n"
        "[[linter]]\ncode = \"ABSENT\"\ninit_command = ['python3', 'no-such-linter-pkg==1.0']\n"
    )
    assert linters(config) == [("PYTESTPIN", ["pytest"]), ("ABSENT", ["no-such-linter-pkg"])]
    python3 = shutil.which("python3")
    assert python3
    probe = "import importlib.util as u; print(u.find_spec('pytest') is not None)"
    has_pytest = (
        subprocess.run(
            [python3, "-c", probe], capture_output=True, text=True, check=False
        ).stdout.strip()
        == "True"
    )
    from onboard.report import Reporter

    report = check(repo, [UNARY], Reporter())
    states = {s.name: s.ready for s in report.linters}
    assert states == {"PYTESTPIN": has_pytest, "ABSENT": False}
    assert report.config
    if shutil.which("lintrunner") is None:
        assert report.executable is None and report.result is None
        assert any("not installed" in n for n in report.not_checked)
    config.unlink()
    no_config = check(repo, [UNARY], Reporter())
    assert not no_config.config and any(".lintrunner.toml" in n for n in no_config.not_checked)


def test_package_imports_under_pytest() -> None:
    import onboard.workflows.tests as pkg

    assert Path(pkg.__file__).parent.name == "tests"
    assert "onboard" in Path(pkg.__file__).parts
    assert sys.modules["onboard.workflows.tests"] is pkg


# --- onboard pr's test plan is this selection ---


def test_pr_test_plan_is_the_selection_and_asks_for_lintrunner(
    ws: Path, repo: Path, opdb: Any
) -> None:
    from onboard.workflows.pr.change import collect
    from onboard.workflows.pr.testplan import tests_for

    change(
        repo,
        {
            UNARY_CPU: insert_after("std::trunc(a)", "        // pr"),
            ".lintrunner.toml": "[[linter]]\ncode = 'X'\ninit_command = ['no-such-pkg-x==1']\n",
        },
    )
    sel = select_branch(ws)
    assert_op_tests(sel, opdb, "trunc")
    plan = tests_for(collect(repo))
    commands = [t.command for t in plan]
    assert commands[: len(sel.selected)] == [s.command_line for s in sel.selected]
    lint_line = commands[len(sel.selected) :]
    if shutil.which("lintrunner") is None:
        assert lint_line == ["pip install lintrunner && lintrunner init"]
    else:  # its one linter's tool is not installed anywhere
        assert lint_line == ["lintrunner init"]


def test_a_practice_kernel_selects_its_op_through_new_ops_manifest(
    tmp_path: Path, opdb: Any
) -> None:
    """`onboard new-op trunc` writes a new kernel file into a reference tree, which has
    no DEFINE_DISPATCH or impl to lead back from: the manifest new-op keeps names it."""
    from test_new_op import make_workspace

    from onboard.workflows.newop import manifest as manifests
    from onboard.workflows.newop import scaffold

    made = make_workspace(tmp_path / "ws")
    scaffold(made, "trunc")
    kernel = manifests.load(made.root, "trunc").files["CPU kernel"]
    path = made.checkout_path / kernel
    path.write_text(path.read_text().replace("return a;", "return std::round(a);"))
    sel = select_branch(made.root)
    assert kernel in sel.files
    assert [op.base for op in sel.changed] == ["trunc"]
    assert any("practice kernel" in via and kernel in via for via in sel.changed[0].via)
    assert_op_tests(sel, opdb, "trunc")
