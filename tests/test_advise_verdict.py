"""`advise --check`'s verdict on given samples (python/mpilens/advise/stats.py): the
signed-rank interval of paired relative gains, and confirmed / refuted / not resolved
with their exit statuses (docs/advise.md, Checking advice).  No MPI: the samples are
given, the expected intervals computed here by enumeration."""

from __future__ import annotations

import itertools

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
