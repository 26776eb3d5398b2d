"""Benchmark `onboard memory` against the same program run by itself.

Target: `onboard memory -- python prog.py` costs at most 2x the plain run (the
census at step boundaries, not on every op: onboard adds its start-up, a census
at the boundaries its time budget allows, the two probe steps under a
TorchFunctionMode, and the holder search for what grows).

The program: a 100-step CPU training loop (an MLP, Adam, batches of 64), with
one planted growth (each step's loss kept in a list) so that the holder search is
part of the cost. Measured in the same run, interleaved, median of N, as CPU time
of the process tree, with the wall-clock ratio printed beside it.

Run: python bench/bench_memory.py [--runs N]
"""

from __future__ import annotations

import argparse
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

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10),
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for step in range(100):
    x, y = torch.randn(64, 128), torch.randint(0, 10, (64,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss)
"""


def _timed(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds of the process tree, wall seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench_memory: {argv} failed: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "prog.py"
        script.write_text(textwrap.dedent(PROGRAM))
        cpu: dict[str, list[float]] = {"plain": [], "onboard": []}
        wall: dict[str, list[float]] = {"plain": [], "onboard": []}
        for _ in range(runs):
            plain = [sys.executable, str(script)]
            ours = [sys.executable, "-m", "onboard", "memory", "--", sys.executable, str(script)]
            for name, argv in (("plain", plain), ("onboard", ours)):
                c, w = _timed(argv)
                cpu[name].append(c)
                wall[name].append(w)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    wmed = {k: statistics.median(v) for k, v in wall.items()}
    ratio = med["onboard"] / med["plain"]
    print(
        f"memory: onboard memory {med['onboard']:.2f} s CPU, the program alone "
        f"{med['plain']:.2f} s (median of {runs}) -> {ratio:.2f}x (wall clock: "
        f"{wmed['onboard'] / wmed['plain']:.2f}x)"
    )
    print(f"target <= 2x: {'met' if ratio <= 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
