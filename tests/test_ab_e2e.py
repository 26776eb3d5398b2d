"""`onboard ab` on the real torch, as a user runs it: in a `--from-wheel`
workspace, a Python-only change that slows a function, committed in the workspace,
is reported "slower" with its interval, and an unchanged pair "no change". And an
A/A run on every pair of sides, with PYTHONDONTWRITEBYTECODE=1, claims nothing.
Slow: every run imports torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
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


AA = """\
import torch

print(torch.ones(2, 3).sum().item())
"""
CLAIMS = {"faster", "slower", "lower", "higher"}


def _interpreter_with_this_torch(folder: Path) -> Path:
    """Another interpreter (a venv of its own) that imports the same installed torch."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    found = subprocess.run(
        [folder / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(found, "onboard-test-torch.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return folder / "bin" / "python"


def _name(spec: str) -> str:
    return "another interpreter" if "/" in spec else spec


def test_an_a_a_run_on_every_pair_of_sides_claims_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in many Docker images: Python writes no bytecode (the wheel's own was compiled
    # by pip at install).
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    root = wheel_workspace(tmp_path)
    other = _interpreter_with_this_torch(tmp_path / "other-venv")
    bench = tmp_path / "aa.py"
    bench.write_text(AA)
    kinds = ["installed", "workspace", "commit:HEAD", str(other)]
    pairs = [(a, b) for i, a in enumerate(kinds) for b in kinds[i:]]

    def run(a: str, b: str, label: str) -> None:
        done = onboard(
            "ab", str(bench), "--a", a, "--b", b, "--rounds", "5", "--json",
            "--workspace", str(root), cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, (label, done.stderr[-3000:])
        data = json.loads(done.stdout)
        found = metrics(data)
        wall, rss = found["wall_s"], found["peak_rss_mb"]
        print(  # the numbers, for whoever reads the log (-s)
            f"{label:36} wall {wall['median_a']:.2f}/{wall['median_b']:.2f} s "
            f"B/A {wall['ratio']:.3f} [{wall['ci_low']:.3f}-{wall['ci_high']:.3f}] "
            f"{wall['detail']}; rss B/A {rss['ratio']:.3f} {rss['detail']}",
            flush=True,
        )
        assert data["outputs"]["same"] is True, label
        assert data["environment"]["differences"] == [], (label, data["environment"])
        claimed = {n: m["detail"] for n, m in found.items() if m["verdict"] in CLAIMS}
        assert not claimed, (label, claimed, found)

    for a, b in pairs:
        run(a, b, f"{_name(a)} / {_name(b)}")
    # `onboard build` made a build: `workspace` is its venv's interpreter now.
    build = _interpreter_with_this_torch(root / ".nox" / "build")
    (root / "pytorch" / "build").mkdir(exist_ok=True)
    (root / "pytorch" / "build" / "CMakeCache.txt").write_text("")
    assert build.is_file()
    for b in kinds:
        run("workspace", b, f"workspace build / {_name(b)}")
