"""Start-up cost: median wall time of `onboard --help` against `python -c pass`.

Target: under 0.3 s on these machines. Also checks which heavy
modules the start-up imported, so a regression names its cause.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 15


def median_wall(argv: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def heavy_imports() -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "onboard", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    heavy = {"torch", "git", "github", "torchgen", "yaml", "rich", "jinja2", "elftools"}
    found = []
    for line in proc.stderr.splitlines():
        name = line.rsplit("|", 1)[-1].strip()
        if name in heavy:
            found.append(name)
    return found


def main() -> None:
    base = median_wall([sys.executable, "-c", "pass"])
    help_ = median_wall([sys.executable, "-m", "onboard", "--help"])
    print(f"python -c pass: {base * 1000:.0f} ms (median of {RUNS})")
    print(
        f"onboard --help: {help_ * 1000:.0f} ms (ratio {help_ / base:.2f}x vs python -c pass; "
        f"target < 300 ms: {'met' if help_ < 0.3 else 'MISSED'})"
    )
    heavy = heavy_imports()
    print(f"heavy modules imported at start-up: {', '.join(heavy) if heavy else 'none'}")


if __name__ == "__main__":
    main()
