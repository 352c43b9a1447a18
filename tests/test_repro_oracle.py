"""Independent oracle for reproducible sums (exact rational arithmetic), and the
unit test of the C summation kernels (runtime/repro/exactsum.c) against it.

The other test_repro*.py modules import the oracle and data generators from here.
"""

from __future__ import annotations

import math
import random
import struct
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

BINARY64 = (53, -1022, 1023)
BINARY32 = (24, -126, 127)
F32_MAX = float.fromhex("0x1.fffffep127")


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def round_exact(q: Fraction, fmt: tuple[int, int, int]) -> float:
    """q rounded to nearest-even in the format (p, emin, emax), as a Python float."""
    p, emin, emax = fmt
    if q == 0:
        return 0.0
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    scale = max(e, emin) - p + 1  # exponent of one unit in the last place
    m = a / Fraction(2) ** scale
    n = m.numerator // m.denominator
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    val = math.inf if scale + n.bit_length() - 1 > emax else math.ldexp(n, scale)
    return -val if neg else val


def expected_sum(values: list[float], fmt: tuple[int, int, int] = BINARY64) -> float:
    """The correctly rounded exact sum, with IEEE rules for NaN, infinities and signed zero."""
    if any(math.isnan(v) for v in values):
        return math.nan
    pinf = any(v == math.inf for v in values)
    ninf = any(v == -math.inf for v in values)
    if pinf and ninf:
        return math.nan
    if pinf or ninf:
        return math.inf if pinf else -math.inf
    q = sum((Fraction(v) for v in values), Fraction(0))
    if q == 0:
        return -0.0 if values and all(math.copysign(1, v) < 0 for v in values) else 0.0
    return round_exact(q, fmt)


def same(a: float, b: float) -> bool:
    """Bitwise equality, treating every NaN as equal (the engine returns a canonical NaN)."""
    return (math.isnan(a) and math.isnan(b)) or bits(a) == bits(b)


def ill_value(rng: random.Random, single: bool = False) -> float:
    """One ill-conditioned contribution: wild magnitudes, subnormals, ±0, Inf, NaN."""
    r = rng.random()
    if single:
        if r < 0.05:
            return rng.choice([0.0, -0.0, math.inf, -math.inf, math.nan, F32_MAX, -F32_MAX,
                               float.fromhex("0x1p-149"), float.fromhex("-0x1p-126")])
        return struct.unpack("<f", struct.pack("<f", rng.uniform(-1, 1)
                                               * 2.0 ** rng.randint(-150, 127)))[0]
    if r < 0.03:
        return rng.choice([0.0, -0.0, math.inf, -math.inf, math.nan])
    if r < 0.10:
        return rng.choice([1.7976931348623157e308, -1.7976931348623157e308,
                           5e-324, -5e-324, 2.2250738585072014e-308])
    if r < 0.25:  # subnormal
        return rng.choice([-1, 1]) * rng.randint(1, 2**52 - 1) * 5e-324
    return rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300)


def ill_row(rng: random.Random, p: int, single: bool = False, finite: bool = False) -> list[float]:
    """p contributions for one element; often a cancelling pattern (x, -x, tiny...)."""
    while True:
        row = [ill_value(rng, single) for _ in range(p)]
        if p >= 2 and rng.random() < 0.4:  # catastrophic cancellation
            j = rng.randrange(1, p)
            row[j] = -row[0]
            if p >= 3 and rng.random() < 0.5:
                row[rng.randrange(1, p)] = rng.choice([1, -1]) * rng.choice(
                    [5e-324, 2.0**-60, 2.0**-1000, 1e-300])
        if not finite or all(math.isfinite(v) for v in row):
            return row


def mild_row(rng: random.Random, p: int) -> list[float]:
    """Ordinary data (span < 126 bits): served by the fast path."""
    return [rng.uniform(-1, 1) * 2.0 ** rng.randint(-20, 20) for _ in range(p)]


# ---- unit test of the C kernels -------------------------------------------------------

def _xsum_prog() -> Path:
    from conftest import BUILD
    prog = BUILD / "tests" / "repro_xsum"
    if not prog.exists():
        pytest.fail(f"{prog} missing: build first")
    return prog


def test_oracle_known_values() -> None:
    assert expected_sum([1.0, 2.0**-60, -1.0] + [2.0**-60] * 61) == 62 * 2.0**-60
    assert expected_sum([1.0, 2.0**-53]) == 1.0  # tie, to even
    assert expected_sum([1.0, 2.0**-53, 2.0**-200]) == 1.0 + 2.0**-52
    assert expected_sum([1.7976931348623157e308] * 2) == math.inf
    assert expected_sum([1.7976931348623157e308] * 2 + [-1.7976931348623157e308]) \
        == 1.7976931348623157e308
    assert bits(expected_sum([-0.0, -0.0])) == bits(-0.0)
    assert bits(expected_sum([-0.0, 0.0])) == 0
    assert bits(expected_sum([1.0, -1.0])) == 0
    assert expected_sum([5e-324, 1e-323]) == 1.5e-323
    assert expected_sum([2.0**-149, 2.0**-150], BINARY32) == 2.0**-148  # subnormal tie, to even
    assert expected_sum([2.0**-149, 2.0**-151], BINARY32) == 2.0**-149
    assert expected_sum([1.0, 2.0**-24], BINARY32) == 1.0
    assert expected_sum([F32_MAX, F32_MAX], BINARY32) == math.inf
    for _ in range(2000):  # agrees with CPython's correctly rounded int/int division
        rng = random.Random(_)
        row = ill_row(rng, 5, finite=True)
        q = sum((Fraction(v) for v in row), Fraction(0))
        try:
            ref = float(q)
        except OverflowError:
            ref = math.inf if q > 0 else -math.inf
        assert same(expected_sum(row), ref if q != 0 else expected_sum(row)), row


@pytest.mark.parametrize("single", [False, True])
def test_kernels_match_oracle(single: bool) -> None:
    rng = random.Random(6 + single)
    cases: list[list[float]] = []
    for i in range(3000):
        p = rng.randint(1, 12)
        cases.append(mild_row(rng, p) if i % 3 == 0 else ill_row(rng, p, single))
    kind = "f" if single else "d"
    text = "".join(f"{kind} {len(c)} " + " ".join(f"{bits(v):016x}" for v in c) + "\n"
                   for c in cases)
    out = subprocess.run([str(_xsum_prog())], input=text, capture_output=True, text=True,
                         check=True, timeout=60).stdout.splitlines()
    assert len(out) == len(cases)
    fmt = BINARY32 if single else BINARY64
    n_exact_win = 0
    for case, line in zip(cases, out):
        acc, seq, tree, *extra = line.split()
        want = expected_sum(case, fmt)
        assert same(from_bits(int(acc, 16)), want), (case, line, want)
        assert extra == [], (case, line)          # ml_win is canonical: order-independent
        assert seq == tree
        finite = [v for v in case if v != 0 and math.isfinite(v)]
        if all(math.isfinite(v) for v in case) and finite:
            lows = [math.frexp(v)[1] - 53 + _trailing(v) for v in finite]
            tops = [math.frexp(v)[1] - 1 for v in finite]
            fits = max(tops) - min(lows) + 1 + len(case).bit_length() <= 126
            assert (seq != "inexact") == fits, (case, line)
        if seq != "inexact":
            n_exact_win += 1
            assert same(from_bits(int(seq, 16)), want), (case, line, want)
    assert n_exact_win > 1000  # the fast representation was exercised


def _trailing(v: float) -> int:
    """Number of trailing zero bits of v's 53-bit significand."""
    m, _ = math.frexp(abs(v))
    n = int(m * 2**53)
    return (n & -n).bit_length() - 1


def test_block_kernels_same_bits_at_every_x86_level() -> None:
    """The library runs one build of the block kernels (picked at load time by the
    CPU); widek_clones runs the x86-64-v4, v3 and baseline builds side by side on
    the same 200000 pseudo-random blocks and counts any difference in bits or in
    which blocks they hand back to the scalar code."""
    from conftest import BUILD
    prog = BUILD / "tests" / "widek_clones"
    if not prog.exists():
        # tests/CMakeLists.txt builds it only with GCC on x86-64 (where the library
        # has per-level clones at all); elsewhere there is one build and nothing to compare.
        pytest.skip("kernel levels are built only with GCC on x86-64")
    out = subprocess.run([str(prog), "200000"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    words = out.stdout.split()
    levels = words[1:words.index("blocks")]
    assert levels[:2] == ["base", "v3"]  # every CI machine has AVX2; v4 where AVX-512 is
    # exact counts of blocks the kernels serve (codes, fixed point, rounding): the data
    # are deterministic, and a level that flagged differently would count as a mismatch
    assert words[words.index("blocks"):] == ["blocks", "200000", "fast", "193841", "146905",
                                             "62606", "mismatches", "0"]
