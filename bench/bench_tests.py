"""Benchmark `onboard tests`: the selection for a 10-file change, warm.

The tree: the fixture repo (tests/fixtures/pytorch_repo.py, seeded from the
installed wheel: the real native_functions.yaml and derivatives.yaml, UnaryOps.cpp,
its CPU and CUDA kernels, LinearAlgebra.cpp) plus every ATen header the wheel ships
at its source path, so the kernel index has a checkout's size. The change: a branch
of ten files (a CPU kernel, a structured meta function, torch/ Python, docs, new
modules), so every rule runs: kernel -> stub -> yaml entry -> OpInfo entry, the
public-bindings rule, suites, keywords.

Printed (medians of N, each a fresh `python -m onboard tests --no-lint --json`
process, after one cold run that builds the caches: torchgen's yaml index, the
kernel index and the OpInfo index of the installed torch), against `onboard --help`
(the CLI's start-up floor) in the same run; and the selection in-process.
Target: the warm command < 1 s.

Run: python bench/bench_tests.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.pytorch_repo import build_pytorch_repo, find_torch_dir, git  # noqa: E402
from opsource_helpers import save_workspace  # noqa: E402

EDITS = {
    "aten/src/ATen/native/cpu/UnaryOpsKernel.cpp": ("std::trunc(a)", "        // bench"),
    "aten/src/ATen/native/LinearAlgebra.cpp": ("TORCH_META_FUNC(mm)", "  // bench"),
}


def _tree(dest: Path) -> None:
    build_pytorch_repo(dest, commits=2)
    headers = find_torch_dir() / "include" / "ATen"
    shutil.copytree(headers, dest / "aten/src/ATen", dirs_exist_ok=True)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "headers", cwd=dest)
    git("switch", "-q", "-c", "bench-change", cwd=dest)
    for path, (marker, text) in EDITS.items():
        lines = (dest / path).read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if marker in line)
        (dest / path).write_text("".join(lines[: at + 1] + [text + "\n"] + lines[at + 1 :]))
    (dest / "torch/nn/functional.py").write_text(
        (dest / "torch/nn/functional.py").read_text() + "\n# bench\n"
    )
    (dest / "docs").mkdir(exist_ok=True)
    (dest / "docs/index.rst").write_text("bench\n")
    for i in range(6):
        (dest / f"torch/utils/_bench_{i}.py").write_text(f"# {i}\n")
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "a 10-file change", cwd=dest)


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="onboard-bench-tests-") as tmp:
        work = Path(tmp)
        ws_root = work / "ws"
        ws_root.mkdir()
        _tree(ws_root / "pytorch")
        save_workspace(ws_root, "clone")
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "HOME": str(work)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cwd = ws_root / "pytorch"
        command = [sys.executable, "-m", "onboard", "tests", "--no-lint", "--json"]
        floor = [sys.executable, "-m", "onboard", "--help"]
        cold = _timed(command, env, cwd)
        out = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True).stdout
        sel = json.loads(out)["selection"]
        assert len(sel["files"]) == 10, sel["files"]
        warm, help_ = [], []
        for _ in range(args.runs):  # interleaved: both see the same load
            warm.append(_timed(command, env, cwd))
            help_.append(_timed(floor, env, cwd))
        os.environ["XDG_CACHE_HOME"] = env["XDG_CACHE_HOME"]
        from onboard.workflows.tests import TestsRequest, tests

        inproc = []
        for _ in range(args.runs):
            start = time.perf_counter()
            tests(TestsRequest(workspace=str(ws_root), lint=False))
            inproc.append(time.perf_counter() - start)
    w, h, i = statistics.median(warm), statistics.median(help_), statistics.median(inproc)
    print(f"tree: {len(sel['files'])}-file change, {len(sel['selected'])} tests selected, "
          f"ops {', '.join(sel['ops'])}")  # fmt: skip
    print(f"`onboard tests` cold (caches built): {cold:.2f} s")
    print(
        f"`onboard tests` warm: {w:.3f} s (median of {args.runs}) = {w / h:.2f}x "
        f"`onboard --help` ({h:.3f} s); in-process selection {i:.3f} s"
    )
    print(f"target warm < 1 s: {'met' if w < 1.0 else 'MISSED'}")


if __name__ == "__main__":
    main()
