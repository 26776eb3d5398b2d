"""Benchmark `onboard bisect` on PyTorch-shaped histories with a Python-only regression.

For N = 256, 1024, 4096 commits (seeded from the installed wheel, merge-bot
messages, every 5th commit touching C++), it prints:
- repro executions against ceil(log2 N) + 2 (the target: at most that per repeat);
- builds (target: 0, the regression and the path to it are Python-only);
- wall time per tested commit beyond the repro's own time, median of --runs
  bisects of each kind, alternating (everything onboard
  does: pre-flight checkouts, one `git bisect` per step, the restore at the
  end), against the same figure for plain `git bisect run` on the same
  history in the same process (target: <= 1.5x). onboard marks each step with
  `git bisect good|bad|skip`, as documented; where `git bisect` is still a
  shell script (git <= 2.40), each mark pays that script's start-up, which
  `git bisect run` pays once: the line also gives that start-up, measured
  here, and the ratio without it (what git >= 2.41, a builtin, would see).

Run: python bench/bench_bisect.py [--runs N]
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.pytorch_repo import REGRESSION_MODULE, build_pytorch_repo  # noqa: E402

from onboard.report import Reporter  # noqa: E402
from onboard.workflows.bisect import BisectRequest, run_bisect  # noqa: E402

SIZES = (256, 1024, 4096)

# The seeded tree's torch/__init__.py is the wheel's and needs the compiled
# torch._C, so the repro loads the one module it checks straight from its file
# in the checkout (the first entry of PYTHONPATH).
REPRO = f"""\
import importlib.util
import os
import sys

checkout = os.environ["PYTHONPATH"].split(os.pathsep)[0]
spec = importlib.util.spec_from_file_location(
    "torch._onboard_regression", os.path.join(checkout, {REGRESSION_MODULE!r})
)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.exit(0 if module.check() else 1)
"""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def plain_git_bisect_run(
    repo: Path, good: str, repro: Path, work: Path
) -> tuple[float, int, float]:
    """(wall seconds, repro runs, seconds inside the repro) of plain `git bisect run`.

    The repro's own time is taken around it by the shell step (`date +%s%N`),
    the same span onboard's figure subtracts (process start to exit).
    """
    times = work / "git-run-times.txt"
    times.write_text("")
    step = (
        f"s=$(date +%s%N); PYTHONPATH={repo} {sys.executable} {repro}; rc=$?; "
        f"e=$(date +%s%N); echo $((e - s)) >> {times}; exit $rc"
    )
    start = time.perf_counter()
    _git(repo, "bisect", "start", "--first-parent", "HEAD", good)
    _git(repo, "bisect", "run", "sh", "-c", step)
    wall = time.perf_counter() - start
    _git(repo, "bisect", "reset", "main")
    spans = [int(x) / 1e9 for x in times.read_text().split()]
    return wall, len(spans), sum(spans)


def script_startup(repo: Path, samples: int = 7) -> float:
    """Seconds `git bisect` spends before it does anything, beyond one git process:
    0 where it is a builtin (git >= 2.41), its shell script's start-up before."""
    exec_path = Path(_git(repo, "--exec-path").stdout.strip())
    script = exec_path / "git-bisect"
    if not script.is_file() or not script.read_bytes().startswith(b"#!"):
        return 0.0

    def median(*args: str) -> float:
        spans = []
        for _ in range(samples):
            start = time.perf_counter()
            _git(repo, *args)
            spans.append(time.perf_counter() - start)
        return statistics.median(spans)

    # `git bisect log` outside a bisect: the script starts, then its one git call says no.
    return max(0.0, median("bisect", "log") - median("rev-parse", "HEAD"))


def one(size: int, work: Path, runs: int) -> None:
    regression_at = (size * 2) // 3 + 1
    info = build_pytorch_repo(
        work / f"pytorch-{size}", commits=size, regression_at=regression_at, seed_from_wheel=True
    )
    repro = work / "repro.py"
    repro.write_text(REPRO)
    overheads, git_overheads = [], []
    for _ in range(runs):  # alternating, so a busy moment hits both
        start = time.perf_counter()
        result = run_bisect(
            BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)), Reporter()
        )
        wall = time.perf_counter() - start
        c = result.commits
        assert c is not None and c.culprit is not None
        if c.culprit.sha != info.regression_sha:
            raise SystemExit(
                f"wrong culprit for N={size}: {c.culprit.sha} != {info.regression_sha}"
            )
        repro_s = sum(s.verdict.seconds for s in c.steps if s.verdict)
        overheads.append((wall - repro_s) / len(c.steps))
        mean_repro = repro_s / c.executions
        git_wall, git_runs, git_repro_s = plain_git_bisect_run(
            info.path, info.commits[0], repro, work
        )
        git_overheads.append((git_wall - git_repro_s) / max(git_runs, 1))
    overhead = statistics.median(overheads)
    git_overhead = statistics.median(git_overheads)
    script = script_startup(info.path)

    target = math.ceil(math.log2(size)) + 2
    print(
        f"N={size}: repro executions: {c.executions} "
        f"(ratio {c.executions / target:.2f} vs ceil(log2 N) + 2 = {target}; "
        f"plain git bisect run: {git_runs} + 0 checks)"
    )
    print(f"N={size}: builds: {c.builds} (target 0)")
    print(
        f"N={size}: wall per tested commit beyond the repro: {overhead * 1000:.0f} ms "
        f"(ratio {overhead / git_overhead:.2f} vs plain "
        f"`git bisect run` {git_overhead * 1000:.0f} ms; repro itself {mean_repro * 1000:.0f} ms; "
        f"target <= 1.5: {'met' if overhead / git_overhead <= 1.5 else 'MISSED'})"
    )
    if script:
        print(
            f"N={size}: of which `git bisect`'s shell script (git <= 2.40) at each mark: "
            f"{script * 1000:.0f} ms; without it: ratio {(overhead - script) / git_overhead:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="bisects of each kind per size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bisect-") as tmp:
        for size in SIZES:
            one(size, Path(tmp), args.runs)


if __name__ == "__main__":
    main()
