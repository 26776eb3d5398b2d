"""Benchmark `onboard blame` and `onboard reviews` warm, against git itself.

The repository: `build_pytorch_repo` with 12000 merge-bot commits (every fifth
rewrites one of four C++ files, so UnaryOps.cpp has ~600 revisions, as many as
a busy PyTorch kernel file has in a few years), then the review scenario of
tests/fixtures/review_history.py on top; a loopback GitHub serves its review
comments. One `reviews sync` fills the cache (its API calls are counted and
printed), then, each a fresh process, median of RUNS:

- `git blame -L N,N` of the reland's line (the reference a user would run), and
  `git blame --porcelain -M -C -L N,N` (what onboard asks git);
- `onboard blame PATH:N --offline`, history present and the cache warm
  (target: <= 3x `git blame -L`, under 0.5 s);
- `onboard where trunc` (the floor: `reviews trunc` asks it for the files) and
  `onboard reviews trunc --offline` warm (target: under 1 s);
- `onboard --help` (the CLI's own start-up).

The machine is shared: compare the ratios, not the seconds.

Run: python bench/bench_reviews.py [--runs N] [--base-commits N]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.github_reviews import ReviewsAPI  # noqa: E402
from fixtures.review_history import BOOL_CHECK, UNARY_OPS, build_review_repo  # noqa: E402
from opsource_helpers import save_workspace  # noqa: E402
from reviews_helpers import populate  # noqa: E402


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return took


def _median(argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> float:
    return statistics.median(_timed(argv, cwd, env) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--base-commits", type=int, default=12000)
    args = parser.parse_args()
    onboard = [sys.executable, "-m", "onboard"]
    with tempfile.TemporaryDirectory(prefix="onboard-bench-reviews-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "HOME": str(work)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed onboard runs
        env.pop("GH_TOKEN", None)
        env.pop("GITHUB_TOKEN", None)
        root = work / "ws"
        root.mkdir()
        start = time.perf_counter()
        rr = build_review_repo(root / "pytorch", base_commits=args.base_commits)
        save_workspace(root, "repo")
        revisions = subprocess.run(
            ["git", "rev-list", "--count", "HEAD", "--", UNARY_OPS],
            cwd=rr.path, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        print(f"repository: {args.base_commits} + 12 commits, {UNARY_OPS} in {revisions} of "
              f"them ({time.perf_counter() - start:.1f} s to build)")  # fmt: skip
        line = rr.line_of(UNARY_OPS, BOOL_CHECK)
        with ReviewsAPI() as api:
            populate(api, rr)
            sync = [*onboard, "reviews", "sync", "trunc", "--api-url", api.url]
            cold = _timed(sync, root, env)
            print(f"cold `reviews sync trunc`: {cold:.2f} s, {len(api.requests)} API request(s)")
            asked = len(api.requests)
            _timed([*onboard, "blame", f"{UNARY_OPS}:{line}", "--api-url", api.url], root, env)
            print(f"first `blame` of the line: {len(api.requests) - asked} more request(s)")
        rows: dict[str, float] = {}
        # A line one of the last commits wrote, and one every revision of the file
        # carried since the import (blame walks all of them).
        for label, n in (("recent", line), ("old", 1)):
            rows[f"git blame -L ({label} line)"] = _median(
                ["git", "blame", "-L", f"{n},{n}", "--", UNARY_OPS], rr.path, env, args.runs
            )
            rows[f"git blame --porcelain -M -C -L ({label})"] = _median(
                ["git", "blame", "--porcelain", "-M", "-C", "-L", f"{n},{n}", "--", UNARY_OPS],
                rr.path, env, args.runs,
            )  # fmt: skip
            rows[f"onboard blame ({label} line, warm)"] = _median(
                [*onboard, "blame", f"{UNARY_OPS}:{n}", "--offline"], root, env, args.runs
            )
        rows["onboard --help"] = _median([*onboard, "--help"], root, env, args.runs)
        rows["onboard where trunc (warm)"] = _median(
            [*onboard, "where", "trunc"], root, env, args.runs
        )
        rows["onboard reviews trunc (warm)"] = _median(
            [*onboard, "reviews", "trunc", "--offline"], root, env, args.runs
        )
    for name, seconds in rows.items():
        print(f"{name:46s} {seconds * 1000:8.0f} ms")
    for label in ("recent", "old"):
        mine = rows[f"onboard blame ({label} line, warm)"]
        plain = mine / rows[f"git blame -L ({label} line)"]
        same = mine / rows[f"git blame --porcelain -M -C -L ({label})"]
        floor = mine / rows["onboard --help"]
        print(f"blame {label} line: {plain:.2f}x git blame -L (target <= 3x), {same:.2f}x with "
              f"onboard's flags, {floor:.2f}x onboard --help")  # fmt: skip
    warm = rows["onboard reviews trunc (warm)"]
    print(
        f"reviews trunc: {warm:.2f} s warm (target < 1 s), "
        f"{warm / rows['onboard where trunc (warm)']:.2f}x where trunc"
    )


if __name__ == "__main__":
    main()
