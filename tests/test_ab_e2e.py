"""`onboard ab` on the real torch, as the issue's acceptance: in a `--from-wheel`
workspace, a Python-only change that slows a function, committed in the workspace,
is reported "slower" with its interval, and an unchanged pair "no change".
Slow: every run imports torch.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixtures.cli import run_onboard as onboard
from fixtures.cli import wheel_workspace

pytestmark = pytest.mark.slow

BENCH = """\
import time
import torch

x = torch.randn(1000)
start = time.perf_counter()
y = torch.nn.functional.relu(x)
print(f"relu_ms={(time.perf_counter() - start) * 1000}")
print(f"elements={y.numel()}")
print("negative outputs:", int((y < 0).sum()))
"""


def metrics(data: dict[str, object]) -> dict[str, dict[str, object]]:
    found = data["metrics"]
    assert isinstance(found, list)
    return {m["name"]: m for m in found}


def test_a_slower_commit_and_an_unchanged_pair(tmp_path: Path) -> None:
    root = wheel_workspace(tmp_path)
    checkout = root / "pytorch"
    functional = checkout / "torch" / "nn" / "functional.py"
    text = functional.read_text()
    body = "    if inplace:\n        result = torch.relu_(input)\n"
    assert text.count(body) == 1
    functional.write_text(text.replace(body, "    __import__('time').sleep(0.3)\n" + body))
    subprocess.run(["git", "-C", str(checkout), "commit", "-qam", "relu: slower"], check=True)
    bench = tmp_path / "bench.py"
    bench.write_text(BENCH)

    slower = onboard(
        "ab", str(bench), "--rounds", "3", "--json", "--workspace", str(root), cwd=tmp_path
    )
    assert slower.returncode == 0, slower.stderr[-3000:]
    data = json.loads(slower.stdout)
    relu = metrics(data)["relu_ms"]
    assert relu["verdict"] == "slower", relu
    assert relu["ci_low"] > 1 and relu["ci_high"] >= relu["ci_low"]
    assert data["b"]["overlaid_modules"] == ["torch.nn.functional"]
    assert data["outputs"]["same"] is True

    same = onboard(
        "ab",
        str(bench),
        "--a",
        "installed",
        "--b",
        "commit:HEAD~1",
        "--rounds",
        "3",
        "--json",
        "--workspace",
        str(root),
        cwd=tmp_path,
    )
    assert same.returncode == 0, same.stderr[-3000:]
    data = json.loads(same.stdout)
    assert data["b"]["overlaid_modules"] == []  # the same code as the installed torch
    assert metrics(data)["elements"]["verdict"] == "no change"
    listed = subprocess.run(
        ["git", "-C", str(checkout), "worktree", "list"], capture_output=True, text=True
    ).stdout
    assert len(listed.splitlines()) == 1
