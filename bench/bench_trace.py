"""Benchmark `onboard trace` against running the same script bare.

Target: tracing costs at most 2x the script's own time plus one torch import,
i.e. (traced - import) / (bare - import) <= 2, where "import" is `python -c
"import torch"`, "bare" is `python SCRIPT` and "traced" is `onboard trace
--json -- python SCRIPT` (onboard's own start-up, the child's torch import,
the profiler, the location lookup and the JSON are all inside it).

Two scripts, measured in the same run:
- model: a small training loop as people write it (nn.Sequential MLP, 128 x
  784 inputs, cross_entropy, backward, SGD; 100 steps). The verdict is taken
  on this one.
- tiny ops: 200 steps of a 64 x 256 matmul, add, relu, sum and backward,
  ops of a few microseconds each, whose own time is within the noise of
  torch's import. Printed for the cost of tracing per op call (the
  profiler's, plus onboard's work per recorded op), which such a script
  cannot amortize; no verdict.

How it is measured: each figure is the median of N runs, interleaved
(import, bare, traced, import, ...) so a change in the machine's load hits
all three alike, in CPU seconds (user + system of the process and its
children) with one intra-op thread (OMP_NUM_THREADS=1) for all three. On a
shared machine the wall clock also counts other people's work, and with
several threads an idle OpenMP worker spins: both made the ratio swing from
1x to 3x between runs. The wall-clock ratio is printed beside it.

Run: python bench/bench_trace.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = """\
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(784, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(128, 784)
target = torch.randint(0, 10, (128,))
for _ in range(100):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), target)
    loss.backward()
    opt.step()
"""
TINY_OPS = """\
import torch
w = torch.randn(256, 256, requires_grad=True)
x = torch.randn(64, 256)
for _ in range(200):
    loss = torch.relu(x @ w + 1).sum()
    loss.backward()
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run, its children included."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return _children_cpu() - cpu, elapsed


def _ratio(med: dict[str, float]) -> tuple[float, float]:
    """(traced - import) / own, and the script's own time."""
    own = max(med["bare"] - med["import"], 1e-3)
    return (med["traced"] - med["import"]) / own, own


def measure(name: str, source: str, work: Path, env: dict[str, str], runs: int) -> float:
    script = work / f"{name.replace(' ', '_')}.py"
    script.write_text(source)
    py = sys.executable
    commands = {
        "import": [py, "-c", "import torch"],
        "bare": [py, str(script)],
        "traced": [py, "-m", "onboard", "trace", "--json", "--", py, str(script)],
    }
    # the first run builds the yaml index and the installed view; it also counts the ops
    first = subprocess.run(commands["traced"], env=env, capture_output=True, text=True)
    if first.returncode != 0:
        raise SystemExit(f"onboard trace failed ({first.returncode}):\n{first.stderr[-2000:]}")
    op_calls = int(json.loads(first.stdout)["summary"]["op_calls"])
    times: dict[str, list[tuple[float, float]]] = {what: [] for what in commands}
    for _ in range(runs):
        for what, argv in commands.items():
            times[what].append(_timed(argv, env))
    cpu = {what: statistics.median(t[0] for t in runs_) for what, runs_ in times.items()}
    wall = {what: statistics.median(t[1] for t in runs_) for what, runs_ in times.items()}
    ratio, own = _ratio(cpu)
    wall_ratio, _ = _ratio(wall)
    per_op = (cpu["traced"] - cpu["bare"]) / max(op_calls, 1) * 1e6
    print(
        f"{name}: import torch {cpu['import']:.2f} s, bare {cpu['bare']:.2f} s (own work "
        f"{own:.2f} s), traced {cpu['traced']:.2f} s CPU -> {ratio:.2f}x the script's own "
        f"time plus one torch import (wall clock: {wall_ratio:.2f}x); {op_calls} op calls, "
        f"{per_op:.0f} us of tracing per op call, fixed costs included"
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="onboard-bench-trace-") as tmp:
        work = Path(tmp)
        env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"), OMP_NUM_THREADS="1")
        ratio = measure("model", MODEL, work, env, args.runs)
        measure("tiny ops", TINY_OPS, work, env, args.runs)
    print(f"target <= 2x on the model script: {'met' if ratio <= 2.0 else 'MISSED'}")


if __name__ == "__main__":
    main()
