"""What two sets of noisy numbers say: medians, a bootstrap interval of B/A, a verdict.

The ratio of medians B/A, and its 95% interval from resampling each side's
runs with replacement (the percentile bootstrap; seeded, so the same runs give
the same interval). A verdict is only "faster" / "slower" when the whole
interval is beyond ``MIN_EFFECT`` on one side of 1; an interval inside that
band is a clear "no change", and one that straddles it is "no change this
noise can show".

Two rules come before the interval: with fewer than ``MIN_RUNS`` runs a side
there is no verdict ("not enough runs to tell": the percentile bootstrap of two
samples a side says "clear" for identical code), and on a noisy machine a
time's "faster" / "slower" stands only when the interval is also beyond that
metric's own noise (``NOISY_EFFECT``, or three times its spread, whichever is
wider); else it is "too noisy to tell".
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

# Differences under 2% are reported as no change: process start and import
# times on a shared machine wander by about that much between identical runs.
MIN_EFFECT = 0.02
RESAMPLES = 2000
# Between rounds, whether to go on is decided on fewer resamples (it runs each round).
QUICK_RESAMPLES = 400
# Fewer runs a side give no verdict: with 2 a side, an A/A run on a loaded machine was
# "slower 1.47x" with an interval that excluded 1 (the bootstrap of 2 values has 3).
MIN_RUNS = 5
# On a noisy machine (load above the cores, or wall times spreading by more than 5%),
# a time must differ by more than this, and by three times its own spread, to be told.
NOISY_EFFECT = 0.25
NOISE_SPREADS = 3.0
FASTER = "faster"
SLOWER = "slower"
LOWER = "lower"
HIGHER = "higher"
NO_CHANGE = "no change"
TOO_FEW = "not enough runs to tell"
TOO_NOISY = "too noisy to tell"


@dataclass(frozen=True)
class Comparison:
    median_a: float
    median_b: float
    ratio: float | None  # B/A; None when A's median is 0
    low: float | None
    high: float | None
    verdict: str
    clear: bool  # the interval settles it (more rounds would not change the verdict)
    detail: str


def bootstrap(
    a: list[float], b: list[float], seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float] | None:
    """95% interval of median(B)/median(A) over resamples of each side."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        ma = statistics.median(rng.choices(a, k=len(a)))
        mb = statistics.median(rng.choices(b, k=len(b)))
        if ma > 0:
            ratios.append(mb / ma)
    if len(ratios) < resamples // 2:
        return None
    ratios.sort()
    return ratios[int(0.025 * len(ratios))], ratios[int(0.975 * len(ratios)) - 1]


def compare(
    a: list[float],
    b: list[float],
    *,
    time_like: bool,
    resamples: int = RESAMPLES,
    noisy: bool = False,
) -> Comparison:
    """A and B's values of one metric (lower is better when ``time_like``); ``noisy``:
    the machine was (``NOISY_EFFECT``)."""
    ma, mb = statistics.median(a), statistics.median(b)
    down, up = (FASTER, SLOWER) if time_like else (LOWER, HIGHER)
    fewest = min(len(a), len(b))
    if fewest < MIN_RUNS:
        ratio = mb / ma if ma else None
        runs = "1 run" if fewest == 1 else f"{fewest} runs"
        detail = f"{TOO_FEW} ({runs} a side; {MIN_RUNS} are needed)"
        return Comparison(ma, mb, ratio, None, None, TOO_FEW, False, detail)
    if ma == 0:
        same = mb == 0
        return Comparison(ma, mb, None, None, None, NO_CHANGE if same else up, same, "A is 0")
    ratio = mb / ma
    interval = bootstrap(a, b, resamples=resamples)
    if interval is None:
        return Comparison(ma, mb, ratio, None, None, NO_CHANGE, False, "too few runs")
    low, high = interval
    if high < 1 - MIN_EFFECT:
        verdict, clear = down, True
    elif low > 1 + MIN_EFFECT:
        verdict, clear = up, True
    else:
        verdict = NO_CHANGE
        clear = low >= 1 - MIN_EFFECT and high <= 1 + MIN_EFFECT
    if verdict == NO_CHANGE and not clear:
        detail = "no change this noise can show"
    elif verdict == NO_CHANGE:
        detail = f"no change (within {MIN_EFFECT:.0%})"
    else:
        detail = verdict
    if noisy and time_like and verdict in (down, up):
        band = max(NOISY_EFFECT, NOISE_SPREADS * max(spread(a), spread(b)))
        if not (high < 1 / (1 + band) or low > 1 + band):
            verdict, clear = TOO_NOISY, False
            detail = (
                f"{TOO_NOISY} (it looked {detail}; on this noisy machine a time must "
                f"differ by more than {band:.0%})"
            )
    return Comparison(ma, mb, ratio, low, high, verdict, clear, detail)


def spread(values: list[float]) -> float:
    """Robust relative spread: the median absolute deviation over the median (x1.4826,
    so it reads like a coefficient of variation for normal noise)."""
    if len(values) < 2:
        return 0.0
    mid = statistics.median(values)
    if mid == 0:
        return 0.0
    mad = statistics.median(abs(v - mid) for v in values)
    return 1.4826 * mad / abs(mid)
