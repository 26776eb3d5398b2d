"""Benchmark `onboard compile` against the same program with TORCH_TRACE alone.

Target: the run under `onboard compile -- python prog.py` costs at most 1.3x the
program run with TORCH_TRACE set to a folder by hand (torch writes the same trace
both ways; onboard adds its start-up, reading the trace and the answer).

The program: a small MLP compiled with backend="eager", stepped 20 times, with a
graph break (a print) and one recompilation (a new batch size). Measured in the
same run, interleaved, median of N, as CPU time of the process tree (user + sys of
the finished children: what the 2 cores of a loaded machine make stable) with the
wall-clock ratio printed beside it.

Run: python bench/bench_compile.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PROGRAM = """\
import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))


def step(x):
    y = model(x)
    print("step")  # a graph break
    return y.relu().sum()


compiled = torch.compile(step, backend="eager")
for i in range(20):
    compiled(torch.randn(16 if i < 10 else 32, 64))  # a new size: one recompile
"""


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds of the process tree, wall seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench_compile: {argv} failed: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "prog.py"
        script.write_text(textwrap.dedent(PROGRAM))
        cpu: dict[str, list[float]] = {"trace": [], "onboard": []}
        wall: dict[str, list[float]] = {"trace": [], "onboard": []}
        for i in range(runs):
            folder = Path(tmp) / f"trace{i}"
            by_hand = [sys.executable, str(script)]
            ours = [sys.executable, "-m", "onboard", "compile", "--", sys.executable, str(script)]
            for name, argv, env in (
                ("trace", by_hand, {**os.environ, "TORCH_TRACE": str(folder)}),
                ("onboard", ours, dict(os.environ)),
            ):
                c, w = _timed(argv, env)
                cpu[name].append(c)
                wall[name].append(w)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    wmed = {k: statistics.median(v) for k, v in wall.items()}
    ratio = med["onboard"] / med["trace"]
    print(
        f"compile: onboard compile {med['onboard']:.2f} s CPU, the program with TORCH_TRACE "
        f"alone {med['trace']:.2f} s (median of {runs}) -> {ratio:.2f}x (wall clock: "
        f"{wmed['onboard'] / wmed['trace']:.2f}x)"
    )
    print(f"target <= 1.3x: {'met' if ratio <= 1.3 else 'MISSED'}")


if __name__ == "__main__":
    main()
