"""Benchmark `onboard new-op` and the verify of its scaffold.

Prints:
- `onboard new-op my_frac` wall time (a new process, as a user runs it; target
  under 2 s), median of 3 fresh workspaces, against `python -c pass`;
- the scaffold workflow alone (in process), the part onboard controls;
- verify cold (empty cache: torchgen parse, full codegen, the CPU compile,
  numerics, nvcc when present; target under 3 minutes on 2 cores) against that
  target, and warm (nothing changed) against `python -c "import torch"`.

The workspace is the wheel-seeded reference tree of tests/test_new_op.py.

Run: python bench/bench_new_op.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_new_op import make_workspace  # noqa: E402

from onboard.workflows.newop import scaffold  # noqa: E402
from onboard.workflows.newop.verify import verify_op  # noqa: E402

COLD_TARGET_S = 180.0
NEW_OP_TARGET_S = 2.0


def _wall(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-new-op-") as tmp:
        base = Path(tmp)
        env = dict(os.environ, HOME=str(base / "home"), XDG_CACHE_HOME=str(base / "cache"))
        # An identity for the scaffold commit without touching the real git config.
        env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
        for role in ("AUTHOR", "COMMITTER"):
            env[f"GIT_{role}_NAME"] = "onboard bench"
            env[f"GIT_{role}_EMAIL"] = "bench@onboard.invalid"
        os.environ.update(env)
        python_pass = statistics.median(
            _wall([sys.executable, "-c", "pass"], base) for _ in range(5)
        )
        cli_times, flow_times = [], []
        for i in range(3):
            ws = make_workspace(base / f"cli{i}")
            cli_times.append(
                _wall(
                    [
                        sys.executable,
                        "-m",
                        "onboard",
                        "new-op",
                        "my_frac",
                        "--json",
                        "--workspace",
                        str(ws.root),
                    ],
                    base,
                    env,
                )
            )
            ws2 = make_workspace(base / f"flow{i}")
            start = time.perf_counter()
            scaffold(ws2, "my_frac")
            flow_times.append(time.perf_counter() - start)
        new_op = statistics.median(cli_times)
        print(
            f"onboard new-op wall: {new_op:.2f} s (ratio {new_op / python_pass:.1f}x vs "
            f"python -c pass {python_pass:.3f} s; target < {NEW_OP_TARGET_S:.0f} s: "
            f"{'met' if new_op < NEW_OP_TARGET_S else 'NOT met'})"
        )
        flow = statistics.median(flow_times)
        ratio = flow / python_pass
        print(f"new-op workflow in process: {flow:.2f} s (ratio {ratio:.1f}x vs python -c pass)")

        ws = make_workspace(base / "verify")
        scaffold(ws, "my_frac")
        start = time.perf_counter()
        cold = verify_op(ws, "my_frac")
        cold_s = time.perf_counter() - start
        parts = ", ".join(f"{s.name} {s.seconds:.0f} s" for s in cold.steps if s.seconds >= 1)
        print(
            f"verify cold: {cold_s:.1f} s on {os.cpu_count()} cores "
            f"(ratio {cold_s / COLD_TARGET_S:.2f} vs the {COLD_TARGET_S:.0f} s target; "
            f"{'passed' if cold.ok else 'FAILED'}; {parts})"
        )
        import_torch = _wall([sys.executable, "-c", "import torch"], base)
        start = time.perf_counter()
        warm = verify_op(ws, "my_frac")
        warm_s = time.perf_counter() - start
        print(
            f"verify warm: {warm_s:.1f} s (ratio {warm_s / import_torch:.1f}x vs "
            f"python -c 'import torch' {import_torch:.1f} s; {'passed' if warm.ok else 'FAILED'})"
        )


if __name__ == "__main__":
    main()
