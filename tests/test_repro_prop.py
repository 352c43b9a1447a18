"""Property tests of reproducible reductions (MPILENS_REPRO=1) on 1-9 ranks.

Random ill-conditioned data (cancellation, magnitudes 1e-300..1e300, subnormals,
±0, ±Inf, NaN) for MPI_DOUBLE, MPI_FLOAT and MPI_C_DOUBLE_COMPLEX through every
served collective: each result element must be the correctly rounded exact sum
of the contributions (oracle: exact rationals, test_repro_oracle.py).  Part of
every data set is a family whose exact sums do not depend on the rank count
(fixed targets split exactly into P contributions): those results must be
bitwise equal for every P.
"""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

import pytest
from conftest import run_mpi
from test_repro_oracle import BINARY32, BINARY64, expected_sum, ill_row, mild_row, same

COLLS = ["allreduce", "allreduce_inplace", "reduce", "reduce_scatter_block", "reduce_scatter",
         "scan", "exscan", "reduce_scatter_inplace"]
FAMILY = 24          # elements (scalars) of the rank-count-independent family
PER_RANK = 12        # further elements per rank (so that counts are multiples of P)


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _family_targets(single: bool) -> list[tuple[float, float]]:
    """Fixed (a, b) pairs: the exact sum a + b usually needs rounding (ties included)."""
    rng = random.Random(2015)
    out = []
    for i in range(FAMILY):
        if single:
            a = _f32(rng.uniform(1, 2) * 2.0 ** rng.randint(-60, 100))
            b = _f32(rng.choice([1, -1]) * math.ulp(a) * 2.0 ** -rng.randint(25, 40))
            if i % 4 == 0:
                b = math.copysign(2.0 ** (math.frexp(a)[1] - 25), b)  # exact tie
        else:
            a = rng.uniform(1, 2) * 2.0 ** rng.randint(-900, 900)
            b = rng.choice([1, -1]) * math.ulp(a) * 2.0 ** -rng.randint(1, 200)
            if i % 4 == 0:
                b = math.copysign(math.ulp(a) / 2, b)                 # exact tie
        out.append((a, b))
    return out


def _split(v: float, rng: random.Random, single: bool) -> tuple[float, float] | None:
    """v = hi + lo exactly, both nonzero, by clearing low significand bits; None if v has 1 bit."""
    m, e = math.frexp(v)
    p = 24 if single else 53
    n = int(m * 2**p)
    bits = [i for i in range(p) if n >> i & 1]
    if len(bits) < 2:
        return None
    cut = rng.randint(bits[0] + 1, bits[-1])
    hi_n = n >> cut << cut
    return math.ldexp(hi_n, e - p), math.ldexp(n - hi_n, e - p)


def _family_row(target: tuple[float, float], p: int, rng: random.Random,
                single: bool) -> list[float]:
    """p contributions whose exact sum is target[0] + target[1], with large cancelling pairs."""
    terms = list(target) if p >= 2 else []
    if p == 1:
        return [expected_sum(list(target), BINARY32 if single else BINARY64)]
    while len(terms) < p:
        if len(terms) <= p - 2 and rng.random() < 0.5:
            x = rng.uniform(1, 2) * 2.0 ** (rng.randint(60, 120) if single else rng.randint(500, 1000))
            x = _f32(x) if single else x
            terms += [x, -x]
            continue
        for j in rng.sample(range(len(terms)), len(terms)):
            parts = _split(terms[j], rng, single)
            if parts:
                terms[j:j + 1] = list(parts)
                break
        else:
            terms.append(0.0)
    rng.shuffle(terms)
    return terms


def narrow_row(rng: random.Random, p: int) -> list[float]:
    """Contributions of similar magnitude, some ±0: usually within one int64 slice."""
    return [rng.choice([0.0, -0.0]) if rng.random() < 0.05 else rng.uniform(-1, 1) * 2.0**-3
            for _ in range(p)]


def _dataset(p: int, kind: str, seed: int, per_rank: int = PER_RANK,
             narrow: bool = False) -> list[list[float]]:
    """Columns: one list of p contributions per scalar element.  narrow: mostly
    narrow_row (whole blocks of the vector kernels), an ill row 1 time in 150."""
    single = kind == "f"
    rng = random.Random(seed)
    cols = [_family_row(t, p, rng, single) for t in _family_targets(single)]
    n_elem = FAMILY + per_rank * p
    if kind == "z":
        n_elem *= 2   # scalars: real and imaginary parts
    while len(cols) < n_elem:
        if narrow:
            cols.append(ill_row(rng, p, single) if rng.random() < 1 / 150 else narrow_row(rng, p))
        else:
            cols.append(mild_row(rng, p) if rng.random() < 0.5 else ill_row(rng, p, single))
    return [[_f32(v) for v in c] for c in cols] if single else cols


def _run(p: int, kind: str, cols: list[list[float]], build: Path, tmp: Path) -> list[list[list[float]]]:
    fmt = "f" if kind == "f" else "d"
    n = len(cols)
    infile, outfile = tmp / f"in-{kind}-{p}.bin", tmp / f"out-{kind}-{p}.bin"
    infile.write_bytes(b"".join(struct.pack(f"<{n}{fmt}", *(c[r] for c in cols)) for r in range(p)))
    run_mpi(p, [build / "bin" / "mpilens-exec", build / "tests" / "repro_prop", kind, infile,
                outfile], env={"MPILENS_REPRO": "1", "MPILENS_PROFILE": "off"}, cwd=tmp)
    raw = outfile.read_bytes()
    vals = struct.unpack(f"<{len(raw) // struct.calcsize(fmt)}{fmt}", raw)
    assert len(vals) == len(COLLS) * p * n
    return [[list(vals[(c * p + r) * n:(c * p + r + 1) * n]) for r in range(p)]
            for c in range(len(COLLS))]


def _blocks(p: int, n_elem: int, mult: int) -> tuple[list[int], list[int]]:
    """Scalar offsets of each rank's block for Reduce_scatter_block and uneven Reduce_scatter."""
    blk = [r * (n_elem // p) * mult for r in range(p + 1)]
    tri = p * (p + 1) // 2
    uneven = [n_elem * (r * (r + 1) // 2) // tri * mult for r in range(p + 1)]
    return blk, uneven


@pytest.mark.parametrize("kind", ["d", "f", "z"])
def test_random_ill_conditioned(kind: str, build: Path, tmp_path: Path) -> None:
    _check_rank_counts(kind, range(1, 10), PER_RANK, build, tmp_path)


@pytest.mark.parametrize("kind", ["d", "f"])
def test_long_vectors(kind: str, build: Path, tmp_path: Path) -> None:
    """>= 2048 scalars: Allreduce and Reduce take the two-phase path (int64 limbs)."""
    _check_rank_counts(kind, [3, 4], 900, build, tmp_path)


@pytest.mark.parametrize("kind", ["d", "z"])
def test_long_vectors_narrow(kind: str, build: Path, tmp_path: Path) -> None:
    """Mostly narrow data: the vectorised block kernels serve most 64-element
    blocks, the scalar code the blocks holding an ill row, the last partial
    block and every block with a zero-only element."""
    _check_rank_counts(kind, [2, 5], 701, build, tmp_path, narrow=True)


def _check_rank_counts(kind: str, ranks: range | list[int], per_rank: int, build: Path,
                       tmp_path: Path, narrow: bool = False) -> None:
    fmt = BINARY32 if kind == "f" else BINARY64
    mult = 2 if kind == "z" else 1
    family: dict[int, list[float]] = {}
    for p in ranks:
        cols = _dataset(p, kind, seed=100 * p + ord(kind) + per_rank, per_rank=per_rank,
                        narrow=narrow)
        n = len(cols)
        res = _run(p, kind, cols, build, tmp_path)
        total = [expected_sum(c, fmt) for c in cols]
        prefix = [[expected_sum(c[:r + 1], fmt) for c in cols] for r in range(p)]
        blk, uneven = _blocks(p, n // mult, mult)

        def check(coll: str, rank: int, lo: int, hi: int, want: list[float],
                  res: list = res, p: int = p, cols: list = cols) -> None:
            got = res[COLLS.index(coll)][rank]
            for i in range(lo, hi):
                assert same(got[i], want[i]), (
                    f"P={p} {kind} {coll} rank {rank} element {i}: got {got[i]!r} "
                    f"want {want[i]!r} from {cols[i]!r}")

        for r in range(p):
            check("allreduce", r, 0, n, total)
            check("allreduce_inplace", r, 0, n, total)
            check("reduce_scatter_block", r, blk[r], blk[r + 1], total)
            check("reduce_scatter", r, uneven[r], uneven[r + 1], total)
            check("reduce_scatter_inplace", r, uneven[r], uneven[r + 1], total)
            check("scan", r, 0, n, prefix[r])
            if r > 0:
                check("exscan", r, 0, n, prefix[r - 1])
        check("reduce", p - 1, 0, n, total)
        family[p] = res[0][0][:FAMILY]
    # Same exact sums whatever the rank count: the same bits for every P.
    first = min(family)
    for p, res in family.items():
        assert [struct.pack("<d", v) for v in res] == \
               [struct.pack("<d", v) for v in family[first]], f"P={p} differs from P={first}"
