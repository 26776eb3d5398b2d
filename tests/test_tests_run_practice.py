"""`onboard tests --run` on a practice kernel (issue 35 B, how it is judged): practice
trunc with a kernel that rounds instead of truncating fails at the OpInfo sample that
shows it, the right kernel passes every sample. Slow: real out-of-tree compiles; and
the workspace's nox venv for OpInfo made from nothing (pip installs torch's wheel).
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from pathlib import Path

import pytest
from test_new_op import make_workspace
from test_tests_run import run_request, selection

from onboard import workspace
from onboard.workflows.newop import scaffold
from onboard.workflows.tests.run import make_opinfo_venv, opinfo_interpreter, run_selection

pytestmark = pytest.mark.slow

KERNEL = "aten/src/ATen/native/cpu/PracticeTruncKernel.cpp"


def write_math(ws: workspace.Workspace, math_: str) -> None:
    path = ws.checkout_path / KERNEL
    path.write_text(
        re.sub(r"return [^;]*;(\s*// PRACTICE)", rf"return {math_};\1", path.read_text())
    )


def std_round(x: float) -> float:
    """C++'s std::round: halves away from zero (torch.round rounds them to even)."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def test_practice_trunc_wrong_then_right(tmp_path: Path) -> None:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    info = next(o for o in op_db if o.name == "trunc")
    ws = make_workspace(tmp_path / "ws")
    scaffold(ws, "trunc")
    write_math(ws, "std::round(a)")
    wrong = run_selection(run_request(ws), selection(ws.checkout_path, ("trunc",)))
    assert wrong.mode == "practice" and wrong.exit_code == 1
    failed = wrong.failures[0]
    assert failed.kernel == KERNEL and failed.check == "reference"
    # The first sample that shows it: the first one, in the child's order (dtypes by
    # name), where rounding and truncating its input differ somewhere.
    dtypes = sorted(info.supported_dtypes("cpu"), key=str)
    first = None
    for dtype in dtypes:
        if not dtype.is_floating_point:
            continue  # trunc's impl copies integers: the kernel never sees them
        for index, sample in enumerate(info.reference_inputs("cpu", dtype)):
            x = sample.input.double()
            rounded = torch.where(x.abs() % 1 == 0.5, torch.sign(x) * (x.abs() + 0.5).floor(),
                                  x.round())  # fmt: skip
            if bool((rounded != x.trunc()).any()):
                first = (str(dtype).replace("torch.", ""), index)
                break
        if first:
            break
    assert (failed.dtype, failed.index) == first
    m = failed.mismatch
    assert m is not None and m.input is not None
    assert m.expected == math.trunc(m.input) and m.got == std_round(m.input)
    assert m.expected != m.got

    write_math(ws, "std::trunc(a)")
    right = run_selection(run_request(ws), selection(ws.checkout_path, ("trunc",)))
    assert right.ok and right.exit_code == 0, right.first_failure
    wanted = sum(len(list(info.reference_inputs("cpu", d))) for d in dtypes)
    rows = [s for s in right.samples if s.check == "reference"]
    assert len(rows) == wanted
    assert all("the installed torch.trunc" in s.against for s in rows)
    assert {n.what for n in right.not_run} >= {"gradcheck", "error inputs"}


def test_the_opinfo_venv_is_made_by_the_workspace_nox_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "pip-cache"))  # not $HOME's
    ws = make_workspace(tmp_path / "ws")
    # An interpreter without numpy: a bare venv of this Python (with pip, no packages).
    import venv

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=True)
    ws = dataclasses.replace(ws, python=str(bare / "bin" / "python"))
    workspace.save(ws)
    write_noxfile_for(ws)
    found = opinfo_interpreter(ws)
    assert found.python == str(ws.root / ".nox" / "opinfo" / "bin" / "python"), found.why
    assert found.torch_version.split("+")[0] == ws.torch_version.split("+")[0]
    assert make_opinfo_venv(ws, f"torch=={ws.torch_version}") is None  # reused, no error
    assert sys.executable != found.python


def write_noxfile_for(ws: workspace.Workspace) -> None:
    from onboard.render import render

    text = render("setup/noxfile.py.j2", torch_version=ws.torch_version, commit="x", root=ws.root)
    (ws.root / "noxfile.py").write_text(text)


def test_a_kernel_that_does_not_compile_is_a_failure_at_its_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    scaffold(ws, "trunc")
    write_math(ws, "a +")
    report = run_selection(run_request(ws), selection(ws.checkout_path, ("trunc",)))
    assert report.exit_code == 1 and not [s for s in report.samples if s.check == "reference"]
    assert report.first_failure is not None
    assert f"{KERNEL} did not build at {KERNEL}:" in report.first_failure
