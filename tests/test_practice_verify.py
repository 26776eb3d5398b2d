"""Practice mode end to end: in a `--from-wheel` workspace,
`onboard new-op trunc` makes the practice branch, `onboard verify` fails before the
kernel is written and names torch.trunc as the oracle, and passes once the marked
lines compute trunc. Slow: real compiles (and nvcc when present).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.cli import run_onboard as onboard
from fixtures.cli import wheel_workspace

pytestmark = pytest.mark.slow

CPU = "aten/src/ATen/native/cpu/PracticeTruncKernel.cpp"
CU = "aten/src/ATen/native/cuda/PracticeTrunc.cu"


def practice_checks(data: dict[str, object]) -> dict[str, dict[str, str]]:
    checks = data["checks"]
    assert isinstance(checks, list)
    return {c["name"]: c for c in checks if c["name"].startswith("practice trunc")}


def test_practice_on_trunc_fails_until_the_kernel_is_written(tmp_path: Path) -> None:
    root = wheel_workspace(tmp_path)
    started = onboard("new-op", "trunc", "--json", "--workspace", str(root), cwd=tmp_path)
    assert started.returncode == 0, started.stderr[-3000:]
    assert json.loads(started.stdout)["branch"] == "onboard/practice-trunc"
    assert (root / "PRACTICE.md").is_file()

    before = onboard("verify", "--workspace", str(root), cwd=root)
    assert before.returncode == 1, before.stderr[-3000:]
    # Progress, off a terminal: a plain line as each check starts and ends, on stderr.
    assert "started: aten::trunc (practice): CPU compile" in before.stderr
    assert ": aten::trunc (practice): nvcc (" in before.stderr  # its end, with the time
    assert "started:" not in before.stdout
    mine = practice_checks(json.loads((root / ".onboard" / "verify.json").read_text()))
    numerics = mine["practice trunc: numerics against torch.trunc"]
    assert numerics["status"] == "failed"
    assert "You have not written the kernel yet" in numerics["detail"]
    assert "torch.trunc (the installed torch" in numerics["detail"]
    assert "0.5 -> 0.0 expected -> 0.5 got" in numerics["detail"]
    assert mine["practice trunc: compile (CPU, out of tree)"]["status"] == "passed"

    checkout = root / "pytorch"
    for rel, math in ((CPU, "std::trunc(a)"), (CU, "::trunc(a)")):
        path = checkout / rel
        path.write_text(
            re.sub(r"return a;(\s*// PRACTICE)", rf"return {math};\1", path.read_text())
        )
    after = onboard("verify", "--json", "--workspace", str(root), cwd=root)
    assert after.stderr == ""  # --json: one JSON object on stdout, no progress anywhere
    data = json.loads(after.stdout)
    mine = practice_checks(data)
    numerics = mine["practice trunc: numerics against torch.trunc"]
    assert numerics["status"] == "passed", numerics
    assert "float32, float64, bfloat16, float16" in numerics["detail"]
    assert not [c for c in mine.values() if c["status"] == "failed"], mine
    assert after.returncode == 0, (data, after.stderr[-2000:])


def test_a_wrong_kernel_shows_input_expected_got(tmp_path: Path) -> None:
    from test_new_op import make_workspace

    from onboard.workflows.newop import scaffold
    from onboard.workflows.newop.judge import judge_op

    ws = make_workspace(tmp_path / "ws")
    scaffold(ws, "floor")
    kernel = ws.checkout_path / "aten/src/ATen/native/cpu/PracticeFloorKernel.cpp"
    # trunc is not floor: negative non-integers differ.
    kernel.write_text(kernel.read_text().replace("return a;", "return std::trunc(a);"))
    result = judge_op(ws, "floor")
    step = next(s for s in result.steps if s.name == "numerics against torch.floor")
    assert step.status == "failed" and not result.ok
    assert "-0.5 -> -1.0 expected -> -0.0 got" in step.detail
    assert "You have not written" not in step.detail
    assert step.location is not None and step.location.startswith(
        "aten/src/ATen/native/cpu/PracticeFloorKernel.cpp:"
    )
