"""`advise --check`'s verdict on given samples (python/mpilens/advise/stats.py): the
signed-rank interval of paired relative gains, and confirmed / refuted / not resolved
with their exit statuses (docs/advise.md, Checking advice).  No MPI: the samples are
given, the expected intervals computed here by enumeration."""

from __future__ import annotations

import itertools
import math

import pytest
from mpilens.advise import stats


def _null_by_enumeration(n: int) -> list[int]:
    counts = [0] * (n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(k + 1 for k, s in enumerate(signs) if s)] += 1
    return counts


@pytest.mark.parametrize("n", range(1, 11))
def test_null_distribution_is_the_enumerated_one(n: int) -> None:
    assert stats.null_counts(n) == _null_by_enumeration(n)


def test_critical_counts() -> None:
    # 4 pairs: P(W+ = 0) = 1/16 > 5 %: no 90 % interval
    assert stats.critical(4) is None
    # 5 pairs: P(W+ = 0) = 1/32 <= 5 % < P(W+ <= 1) = 2/32: C = 1, coverage 1 - 2/32
    assert stats.critical(5) == (1, 1 - 2 / 32)
    # 6 pairs: P(W+ <= 2) = 3/64 <= 5 % < P(W+ <= 3) = 5/64: C = 3
    assert stats.critical(6) == (3, 1 - 2 * 3 / 64)
    assert stats.min_pairs() == 5


def test_interval_of_five_pairs_is_min_to_max() -> None:
    d = [0.40, 0.45, 0.50, 0.55, 0.60]
    iv = stats.signed_rank_interval(d)
    assert iv is not None
    assert (iv.lo, iv.hi, iv.n) == (0.40, 0.60, 5)
    assert iv.estimate == pytest.approx(0.50)  # median of the 15 Walsh averages


def test_interval_of_six_pairs() -> None:
    d = [0.01, -0.02, 0.03, 0.05, -0.01, 0.02]
    walsh = sorted((d[i] + d[j]) / 2 for i in range(6) for j in range(i, 6))
    iv = stats.signed_rank_interval(d)
    assert iv is not None
    assert (iv.lo, iv.hi) == (walsh[2], walsh[-3])   # C = 3
    assert iv.coverage == pytest.approx(58 / 64)


def test_large_effect_is_confirmed() -> None:
    v = stats.decide([0.40, 0.45, 0.50, 0.55, 0.60], predicted=0.5)
    assert (v.verdict, v.exit_status) == ("confirmed", 0)
    assert v.noise == pytest.approx(0.10)
    # smaller than predicted, but faster beyond the noise: still confirmed
    assert stats.decide([0.05, 0.06, 0.07, 0.08, 0.09], predicted=0.5).verdict == "confirmed"


def test_no_effect_is_never_confirmed() -> None:
    """A change without effect: the paired gains are noise around 0.  Every sign pattern
    of the same magnitudes but the one where all 5 pairs favour the change (probability
    1/32, the interval's one-sided error) leaves 0 inside the interval."""
    mags = [0.01, 0.02, 0.03, 0.04, 0.05]
    confirmed = []
    for signs in itertools.product((-1, 1), repeat=5):
        d = [s * m for s, m in zip(signs, mags)]
        v = stats.decide(d, predicted=0.03)
        assert v.verdict in ("confirmed", "refuted", "not resolved")
        if v.verdict == "confirmed":
            confirmed.append(signs)
    assert confirmed == [(1, 1, 1, 1, 1)]
    noise = stats.decide([-0.03, 0.01, -0.02, 0.04, 0.0], predicted=0.05)
    assert (noise.verdict, noise.exit_status) == ("not resolved", 3)
    assert noise.noise == pytest.approx(0.035)      # interval -3 % .. +4 %
    assert "noise +-3.5 %" in noise.reason


def test_no_effect_against_a_large_prediction_is_refuted() -> None:
    # the interval -3 % .. +4 % lies below half the predicted 50 %
    v = stats.decide([-0.03, 0.01, -0.02, 0.04, 0.0], predicted=0.5)
    assert (v.verdict, v.exit_status) == ("refuted", 1)
    assert "below 0.5 x the predicted +50.0 %" in v.reason


def test_slower_is_refuted() -> None:
    v = stats.decide([-0.2, -0.25, -0.3, -0.22, -0.28], predicted=0.1)
    assert (v.verdict, v.exit_status) == ("refuted", 1)
    assert "slower beyond the noise" in v.reason


def test_too_few_pairs_are_not_resolved() -> None:
    v = stats.decide([0.5, 0.5, 0.5, 0.5], predicted=0.5)
    assert (v.verdict, v.exit_status, v.interval) == ("not resolved", 3, None)
    assert "5 are needed" in v.reason
    assert stats.decide([0.9], predicted=0.5).verdict == "not resolved"


def _swapped(gains: list[float]) -> list[float]:
    """The gains with each pair's two runs swapped: (c - b) / c = -d / (1 - d)."""
    return [-d / (1 - d) for d in gains]


@pytest.mark.parametrize("ratios", [
    [0.5, 0.55, 0.6, 0.4, 0.45, 0.7, 0.52],           # ~2x faster: confirmed
    [0.14, 0.15, 2.7, 3.0, 3.3, 3.7, 4.1],            # mixed, heavy tails
    [0.98, 1.03, 0.99, 1.01, 0.96, 1.5, 0.9, 1.02],   # noise around 1, 8 pairs
])
def test_swapping_the_runs_mirrors_the_verdict(ratios: list[float]) -> None:
    """Under no effect a pair (baseline b, changed c) and its swap (c, b) are equally
    likely; the verdict must treat them alike: the swapped sample's interval is the
    mirror image (ratio c/b -> b/c) and confirmed <-> refuted (slower).  The relative
    gain (b - c) / b is not symmetric (twice as slow -100 %, twice as fast +50 %): on
    that scale the interval was skewed towards "slower" (issue 30, fourth round)."""
    gains = [1 - r for r in ratios]                    # r = changed / baseline
    v, w = stats.decide(gains, 0.0), stats.decide(_swapped(gains), 0.0)
    assert v.interval is not None and w.interval is not None
    assert w.interval.lo == pytest.approx(-v.interval.hi / (1 - v.interval.hi), rel=1e-12)
    assert w.interval.hi == pytest.approx(-v.interval.lo / (1 - v.interval.lo), rel=1e-12)
    assert (1 - v.interval.estimate) * (1 - w.interval.estimate) == pytest.approx(1, rel=1e-12)
    mirror = {"confirmed": "refuted", "refuted": "confirmed", "not resolved": "not resolved"}
    assert w.verdict == mirror[v.verdict]


def test_interval_is_the_signed_rank_interval_of_the_log_ratios() -> None:
    ratios = [0.14, 0.15, 2.7, 3.0, 3.3, 3.7, 4.1]    # 2 pairs ~7x faster, 5 ~3x slower
    x = sorted(math.log(1 / r) for r in ratios)
    walsh = sorted((x[i] + x[j]) / 2 for i in range(7) for j in range(i, 7))
    v = stats.decide([1 - r for r in ratios], predicted=0.3)
    assert v.interval is not None and stats.critical(7) == (4, 1 - 2 * 5 / 128)
    assert v.interval.lo == pytest.approx(1 - math.exp(-walsh[3]), rel=1e-12)
    assert v.interval.hi == pytest.approx(1 - math.exp(-walsh[-4]), rel=1e-12)
    assert v.interval.coverage == pytest.approx(1 - 10 / 128)
    # 5 of 7 pairs slower is not "slower beyond the noise" (a sign test gives p = 0.23);
    # on the relative gains' scale the two fast pairs weighed +86 % each against
    # -170 .. -310 %, and the interval lay below 0: "refuted"
    assert v.interval.lo < 0 < v.interval.hi and v.verdict == "not resolved"
