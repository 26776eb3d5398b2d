"""Benchmark `onboard trace` against running the same script bare.

The workload: a small training-like loop (matmul, add, relu, sum, backward)
on CPU. Printed, each a median of the runs:
- `python workload.py` bare (one torch import + the work) and `python -c
  "import torch"` (the import alone), so the script's own time is the difference;
- `onboard trace --json -- python workload.py` (warm caches: the yaml index
  and the installed-torch view are built on a first, untimed run).
Target: trace <= 2x the script's own time plus one torch import (the child
imports torch once, like the script; onboard's own start-up and the location
lookup are inside the measured time).

Run: python bench/bench_trace.py [--runs N] [--steps N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOAD = """\
import torch
w = torch.randn(256, 256, requires_grad=True)
x = torch.randn(64, 256)
for _ in range({steps}):
    loss = torch.relu(x @ w + 1).sum()
    loss.backward()
"""


def _timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="onboard-bench-trace-") as tmp:
        work = Path(tmp)
        script = work / "workload.py"
        script.write_text(WORKLOAD.format(steps=args.steps))
        env = dict(os.environ)
        env["XDG_CACHE_HOME"] = str(work / "cache")
        py = sys.executable
        traced = [py, "-m", "onboard", "trace", "--json", "--", py, str(script)]
        _timed(traced, env)  # builds the yaml index and the installed view once
        importing = statistics.median(
            _timed([py, "-c", "import torch"], env) for _ in range(args.runs)
        )
        bare = statistics.median(_timed([py, str(script)], env) for _ in range(args.runs))
        trace = statistics.median(_timed(traced, env) for _ in range(args.runs))
        own = max(bare - importing, 1e-3)
        budget = 2 * own + importing
        print(
            f"import torch: {importing:.2f} s; bare script: {bare:.2f} s (its own work {own:.2f} s)"
        )
        print(
            f"onboard trace: {trace:.2f} s (ratio {trace / bare:.2f} vs the bare script; "
            f"{(trace - importing) / own:.2f}x the script's own time plus one torch import; "
            f"target <= 2x: {'met' if trace <= budget else 'MISSED'})"
        )


if __name__ == "__main__":
    main()
