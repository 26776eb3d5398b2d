"""`onboard tests --run` (issue 35 B), fast part: real OpInfo runs against the installed
torch in a reference tree (trunc's references, gelu's float64 gradcheck and error
inputs), and a full checkout's selected test files run in its build's venv. What is
expected comes from torch's own op_db and from the test files written here, never
from onboard's output. The practice kernel (a compile) is tests/test_tests_run_practice.py.
"""

from __future__ import annotations

import dataclasses
import io
import sys
import venv
from pathlib import Path

import pytest
from opsource_helpers import save_workspace
from test_new_op import make_workspace

from onboard import workspace
from onboard.jsonable import to_json
from onboard.workflows.tests.request import TestsRequest
from onboard.workflows.tests.result import Selected, Selection
from onboard.workflows.tests.run import RunReport, parse_output, run_selection


def run_request(ws: workspace.Workspace, timeout: float | None = None) -> TestsRequest:
    """What `onboard tests --run --workspace WS` passes."""
    return TestsRequest(workspace=ws.root, run=True, timeout=timeout)


def selection(checkout: Path, ops: tuple[str, ...], selected=(), full=False) -> Selection:
    return Selection(
        checkout=str(checkout), source="op", base=None, files=(), ops=ops, changed=(),
        selected=tuple(selected), full_checkout=full,
    )  # fmt: skip


@pytest.fixture(scope="module")
def installed_run(tmp_path_factory: pytest.TempPathFactory) -> RunReport:
    ws = make_workspace(tmp_path_factory.mktemp("ref") / "ws")
    return run_selection(
        run_request(ws), selection(ws.checkout_path, ("trunc", "nn.functional.gelu"))
    )


@pytest.fixture(scope="module")
def op_db() -> dict[str, object]:
    from torch.testing._internal.common_methods_invocations import op_db

    return {o.name: o for o in op_db}


def test_installed_trunc_passes_every_reference_sample(installed_run, op_db) -> None:
    import torch

    info = op_db["trunc"]
    rows = [s for s in installed_run.samples if s.op == "trunc" and s.check == "reference"]
    wanted = {
        str(d).replace("torch.", ""): len(list(info.reference_inputs("cpu", d)))
        for d in info.supported_dtypes("cpu")
    }
    got: dict[str, int] = {}
    for row in rows:
        got[row.dtype] = got.get(row.dtype, 0) + 1
    assert got == wanted
    assert {r.status for r in rows} == {"passed"}
    assert all(r.against == "op.ref" for r in rows)
    first = next(r for r in rows if r.dtype == "float32" and r.index == 0)
    sample = next(iter(info.reference_inputs("cpu", torch.float32)))
    assert first.shapes == (tuple(sample.input.shape),)
    assert installed_run.mode == "opinfo" and installed_run.ok
    assert installed_run.exit_code == 0


def test_gelu_gradcheck_and_error_inputs(installed_run, op_db) -> None:
    import torch

    info = op_db["nn.functional.gelu"]
    grads = [s for s in installed_run.samples if s.op == info.name and s.check == "gradcheck"]
    samples = list(info.sample_inputs("cpu", torch.float64, requires_grad=True))
    assert len(grads) == len(samples) and {g.status for g in grads} == {"passed"}
    assert {g.dtype for g in grads} == {"float64"}
    errors = [s for s in installed_run.samples if s.op == info.name and s.check == "error inputs"]
    expected = list(info.error_inputs("cpu"))
    assert len(errors) == len(expected) and {e.status for e in errors} == {"passed"}
    assert expected[0].error_type.__name__ in errors[0].detail
    # What did not run says why: trunc has no error inputs, gelu no reference here.
    said = {(n.op, n.what): n.why for n in installed_run.not_run}
    assert "no error_inputs" in said[("trunc", "error inputs")]
    assert (info.ref is None) == (("nn.functional.gelu", "reference") in said)
    assert ("*", "CUDA") in said


def test_the_run_in_json_and_on_screen(installed_run) -> None:
    from rich.console import Console

    from onboard.views import screen
    from onboard.views.tests import render_run

    data = to_json(installed_run)
    total = len(installed_run.samples)
    assert data["ok"] is True and data["first_failure"] is None
    assert data["counts"] == {"passed": total, "failed": 0, "skipped": 0}
    assert data["samples"][0]["status"] == "passed"
    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_run(installed_run, screen(console, False), False)
    text = console.file.getvalue()
    assert "trunc: reference" in text and "Not run" in text
    assert f"ok: {total} passed, 0 failed" in text


def test_an_unknown_op_is_not_run_and_says_so(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    report = run_selection(run_request(ws), selection(ws.checkout_path, ()))
    assert report.mode == "none" and not report.samples
    assert "no op that OpInfo covers" in report.not_run[0].why


# --- a full checkout with a build: the selected files' own commands ---

DEMO = """
import unittest


class T(unittest.TestCase):
    def test_one(self):
        pass

    def test_two(self):
        pass

    def test_wrong(self):
        self.assertEqual(1 + 1, 3, "arithmetic")

    @unittest.skip("not here")
    def test_skipped(self):
        pass


if __name__ == "__main__":
    unittest.main()
"""


def test_a_full_checkout_runs_the_selected_files_in_the_build_venv(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "pytorch" / "test").mkdir(parents=True)
    (root / "pytorch" / "test" / "test_demo.py").write_text(DEMO)
    (root / "pytorch" / "test" / "test_fine.py").write_text(DEMO.replace("1 + 1, 3", "1 + 1, 2"))
    ws = save_workspace(root, "clone")
    # The build session's venv (workflows/build/plan.py: WS/.nox/build), a real one.
    venv.create(root / ".nox" / "build", with_pip=False)
    picked = [
        Selected("test/test_demo.py", ("python", "test/test_demo.py"), ("edited",), rank=1),
        Selected("test/test_fine.py", ("python", "test/test_fine.py", "-v"), ("edited",), rank=2),
        Selected("test/test_gone.py", ("python", "test/test_gone.py"), ("x",), rank=3,
                 present=False),
    ]  # fmt: skip
    report = run_selection(
        run_request(ws, timeout=120), selection(ws.checkout_path, (), picked, True)
    )
    assert report.mode == "tests"
    demo, fine = report.tests
    assert Path(demo.command[0]) == root / ".nox" / "build" / "bin" / "python"
    assert (demo.passed, demo.failed, demo.skipped, demo.returncode) == (2, 1, 1, 1)
    assert demo.first_failure.startswith("T.test_wrong") or "test_wrong" in demo.first_failure
    assert "arithmetic" in demo.first_failure
    assert (fine.passed, fine.failed, fine.skipped) == (3, 0, 1) and fine.ok
    assert report.not_run[0].what == "test/test_gone.py"
    assert report.exit_code == 1 and "test_wrong" in str(to_json(report)["first_failure"])


def test_pytest_output_is_read_too(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "test_p.py").write_text(
        "import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    assert 2 == 3\n\n"
        "@pytest.mark.skip(reason='x')\ndef test_c():\n    pass\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfE", "test_p.py"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    passed, failed, skipped, first = parse_output(out.stdout)
    assert (passed, failed, skipped) == (1, 1, 1)
    assert first.startswith("test_p.py::test_b")


def test_no_interpreter_for_opinfo_fails_and_says_what_to_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    # An interpreter without torch or numpy, and no noxfile to make the venv with.
    venv.create(tmp_path / "bare", with_pip=False)
    ws = dataclasses.replace(ws, python=str(tmp_path / "bare" / "bin" / "python"))
    workspace.save(ws)
    report = run_selection(run_request(ws), selection(ws.checkout_path, ("trunc",)))
    assert report.mode == "none" and report.exit_code == 1
    why = report.not_run[0].why
    assert "no noxfile.py" in why and f"nox -s opinfo -- torch=={ws.torch_version}" in why
    assert report.first_failure is not None and "could not run" in report.first_failure


def test_a_new_op_without_an_opinfo_entry_says_where_it_is_checked(tmp_path: Path) -> None:
    from onboard.workflows.tests.result import ChangedOp

    ws = make_workspace(tmp_path / "ws")
    base = selection(ws.checkout_path, ())
    new = ChangedOp("my_new_op", (), ("native_functions.yaml entry my_new_op",))
    report = run_selection(run_request(ws), dataclasses.replace(base, changed=(new,)))
    said = [n for n in report.not_run if n.op == "my_new_op"]
    assert len(said) == 1 and "onboard verify" in said[0].why


def test_a_run_with_nothing_in_it_is_not_called_ok() -> None:
    """A change that touches no op OpInfo covers runs nothing: the verdict says so
    instead of "ok: 0 passed"."""
    from rich.console import Console

    from onboard.views import screen
    from onboard.views.tests import render_run
    from onboard.workflows.tests.run import NotRun, RunReport

    report = RunReport(
        mode="none", not_run=[NotRun("*", "OpInfo checks", "the change touches no op")]
    )
    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_run(report, screen(console, False), False)
    text = console.file.getvalue()
    assert "nothing run: 0 passed, 0 failed, 0 skipped" in text
    assert "ok:" not in text and "the change touches no op" in text
