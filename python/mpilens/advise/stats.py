"""Paired comparisons that state their uncertainty (docs/advise.md, Checking advice).

`signed_rank_interval` is the distribution-free confidence interval of the median of
paired differences from Wilcoxon's signed-rank test (Hodges-Lehmann): the Walsh
averages (d_i + d_j) / 2, i <= j, sorted; the interval runs from the C-th smallest to
the C-th largest, C the largest count with P(W+ <= C - 1) <= (1 - level) / 2 under the
null distribution of W+ (exact, counted by dynamic programming).  With too few pairs no
such C exists (5 pairs at 90 %: the interval is [min, max] at 93.75 %; 4 pairs give
none) and the function says so: "cannot tell" beats a guess.

`decide` turns paired relative gains into the verdict of `--check`.  It computes the
interval on the log ratios x_i = ln(t_baseline,i / t_changed,i) = -ln(1 - d_i) and maps
it back to relative gains (1 - e^-x, monotonic): when the change has no effect, a
pair's two runs are exchangeable, so x_i is symmetric about 0 (swapping the runs
negates it) and the signed-rank interval's error is exact; the relative gain d_i is
not (a run twice as slow is -100 %, one twice as fast +50 %), which made a change
without effect come out "refuted" more often than the stated level (8.6 % instead of
<= 5 % with 7 pairs of lognormal noise, sigma 1).  With 5 pairs the interval is
[min, max] on either scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import median

LEVEL = 0.90          # the interval's nominal confidence
REFUTE_SHARE = 0.5    # refuted when the interval lies below this share of the prediction

CONFIRMED, REFUTED, UNRESOLVED = "confirmed", "refuted", "not resolved"
EXIT = {CONFIRMED: 0, REFUTED: 1, UNRESOLVED: 3}  # --check's exit status per verdict


@dataclass(frozen=True)
class Interval:
    estimate: float    # Hodges-Lehmann: the median of the Walsh averages
    lo: float
    hi: float
    coverage: float    # the exact confidence of [lo, hi] (at least the level asked)
    n: int


def null_counts(n: int) -> list[int]:
    """Number of subsets of {1..n} with each sum w = 0 .. n(n+1)/2: W+'s null
    distribution times 2^n."""
    top = n * (n + 1) // 2
    c = [1] + [0] * top
    for k in range(1, n + 1):
        for w in range(top, k - 1, -1):
            c[w] += c[w - k]
    return c


def critical(n: int, level: float = LEVEL) -> tuple[int, float] | None:
    """(C, exact coverage): the largest C >= 1 with P(W+ <= C - 1) <= (1 - level) / 2;
    None when even C = 1 fails (too few pairs)."""
    if n < 1:
        return None
    counts, total = null_counts(n), 2 ** n
    tail = (1.0 - level) / 2
    best, cum = None, 0
    for c in range(1, len(counts) + 1):
        cum += counts[c - 1]          # P(W+ <= c - 1) * 2^n
        if cum / total > tail:
            break
        best = (c, 1.0 - 2 * cum / total)
    return best


def signed_rank_interval(d: list[float], level: float = LEVEL) -> Interval | None:
    """The confidence interval of the median paired difference; None with too few pairs."""
    n = len(d)
    crit = critical(n, level)
    if crit is None:
        return None
    c, coverage = crit
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    return Interval(estimate=median(walsh), lo=walsh[c - 1], hi=walsh[len(walsh) - c],
                    coverage=coverage, n=n)


def min_pairs(level: float = LEVEL) -> int:
    n = 1
    while critical(n, level) is None:
        n += 1
    return n


@dataclass(frozen=True)
class Verdict:
    verdict: str       # confirmed / refuted / not resolved
    reason: str
    interval: Interval | None
    noise: float | None  # half the interval's width (a relative gain): "noise +-x %"

    @property
    def exit_status(self) -> int:
        return EXIT[self.verdict]


def log_ratio(gain: float) -> float:
    """ln(t_baseline / t_changed) of a relative gain (t_baseline - t_changed) / t_baseline."""
    return math.inf if gain >= 1 else -math.log1p(-gain)


def gain_of(x: float) -> float:
    """The relative gain of a log ratio (log_ratio's inverse)."""
    return -math.expm1(-x)


def decide(gains: list[float], predicted: float, level: float = LEVEL) -> Verdict:
    """The verdict on relative gains d_i = (baseline_i - changed_i) / baseline_i of the
    targeted function (positive: faster with the change), against the predicted
    relative gain; the interval is the signed-rank interval of the log ratios
    -ln(1 - d_i), given as relative gains:

    - confirmed: the interval lies above 0 (faster beyond the noise);
    - refuted: it lies below 0 (slower beyond the noise), or entirely below
      REFUTE_SHARE x the prediction (not even half the predicted gain);
    - not resolved otherwise, with the noise (half the interval's width)."""
    logs = signed_rank_interval([log_ratio(g) for g in gains], level)
    iv = None if logs is None else replace(logs, estimate=gain_of(logs.estimate),
                                           lo=gain_of(logs.lo), hi=gain_of(logs.hi))
    if iv is None:
        return Verdict(UNRESOLVED, (f"{len(gains)} pair(s) of runs give no {100 * level:.0f} % "
                                    f"interval: {min_pairs(level)} are needed (--runs)"),
                       None, None)
    noise = (iv.hi - iv.lo) / 2
    span = (f"gain {100 * iv.estimate:+.1f} %, {100 * iv.coverage:.1f} % interval "
            f"{100 * iv.lo:+.1f} .. {100 * iv.hi:+.1f} % over {iv.n} pairs")
    if iv.lo > 0:
        return Verdict(CONFIRMED, f"{span}: faster beyond the noise", iv, noise)
    if iv.hi < 0:
        return Verdict(REFUTED, f"{span}: slower beyond the noise", iv, noise)
    if predicted > 0 and iv.hi < REFUTE_SHARE * predicted:
        return Verdict(REFUTED, (f"{span}: below {REFUTE_SHARE:g} x the predicted "
                                 f"{100 * predicted:+.1f} %"), iv, noise)
    return Verdict(UNRESOLVED, f"{span}: noise +-{100 * noise:.1f} %", iv, noise)
