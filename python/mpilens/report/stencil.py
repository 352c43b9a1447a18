"""Stencils on Cartesian grids: is the point-to-point traffic a halo exchange, and on
which grid?

Ranks of a d-dimensional grid are numbered in row-major order (the last dimension
varies fastest), as MPI_Cart_create numbers them.  Two ranks are neighbours in a
"faces" stencil when their coordinates differ by 1 in exactly one dimension (5 points
in 2-D, 7 in 3-D), in a "faces and corners" stencil when they differ by at most 1 in
every dimension (9 and 27 points); in a periodic dimension of size D the offsets
+-(D - 1) are neighbours too.  The traffic is a stencil on a grid when

- at least SHARE of its bytes go between neighbours of the grid, and
- at least COVERAGE of the grid's neighbour pairs exchange data,

and the stencil's neighbours are not every pair of ranks (then nothing tells a
stencil from all-to-all).  The grid is the application's own when it created one
(MPI_Cart_create, recorded in the profile); otherwise every factorisation of the rank
count into 1, 2 or 3 dimensions of size >= 2 is tried and the one that fits best wins
(coverage, then share, then fewer dimensions, then the smaller stencil).  A dimension
of size 2 looks the same periodic or not: its periodicity is then unknown (None)
unless the application's topology says.

`pairs` everywhere: bytes exchanged between two different ranks, both ways, keyed by
(a, b) with a < b; traffic of a rank with itself is not a pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

SHARE = 0.90
COVERAGE = 0.75
FACES, BOX = "faces", "faces and corners"


@dataclass
class Stencil:
    dims: list[int]
    periods: list[bool | None]
    neighbours: str      # FACES or BOX
    grid: str            # "MPI_Cart_create" (the application's) or "inferred"
    share: float         # fraction of the point-to-point bytes between grid neighbours
    coverage: float      # fraction of the grid's neighbour pairs that exchange data

    def as_dict(self) -> dict[str, Any]:
        return {"dims": self.dims, "periods": self.periods, "neighbours": self.neighbours,
                "grid": self.grid, "share_pct": 100.0 * self.share,
                "coverage_pct": 100.0 * self.coverage}

    def sentence(self) -> str:
        """'2-D stencil on a 3 x 3 grid (periodic, non-periodic), 5-point (face neighbours),
        grid inferred from the peer offsets: 100 % of the bytes between grid neighbours'"""
        def per(p: bool | None) -> str:
            return "periodic" if p else "non-periodic" if p is False else "periodic or not"

        if len(self.dims) == 1:
            where = (f"a ring of {self.dims[0]} ranks" if self.periods[0]
                     else f"a line of {self.dims[0]} ranks")
        else:
            where = (f"a {' x '.join(map(str, self.dims))} grid "
                     f"({', '.join(per(p) for p in self.periods)})")
        points = (2 * len(self.dims) + 1 if self.neighbours == FACES
                  else 3 ** len(self.dims))
        source = ("the application's MPI_Cart_create grid" if self.grid == "MPI_Cart_create"
                  else "grid inferred from the peer offsets")
        what = "face neighbours" if self.neighbours == FACES else "faces and corners"
        return (f"{len(self.dims)}-D stencil on {where}, {points}-point ({what}), {source}: "
                f"{100 * self.share:.0f} % of the bytes between grid neighbours")


def coords(rank: int, dims: list[int]) -> list[int]:
    """Row-major coordinates (the last dimension varies fastest), as MPI_Cart_coords."""
    out = []
    for d in reversed(dims):
        out.append(rank % d)
        rank //= d
    return out[::-1]


def factorisations(n: int, maxdims: int = 3) -> list[list[int]]:
    """Every ordered way to write n as a product of 1..maxdims factors >= 2."""
    out: list[list[int]] = []

    def rec(rest: int, prefix: list[int]) -> None:
        if prefix and rest == 1:
            out.append(prefix)
            return
        if len(prefix) == maxdims:
            return
        for f in range(2, rest + 1):
            if rest % f == 0:
                rec(rest // f, prefix + [f])

    if n >= 2:
        rec(n, [])
    return out


def neighbour_pairs(dims: list[int], periods: list[bool], neighbours: str) -> int:
    """How many distinct rank pairs are neighbours in the grid."""
    n = math.prod(dims)
    if neighbours == FACES:
        return sum((n // d) * (d if p and d > 2 else d - 1) for d, p in zip(dims, periods))
    # faces and corners: sum over ranks of the distinct positions within +-1 per
    # dimension, a product over dimensions, minus the rank itself; each pair twice
    reach = [d * min(3, d) if p else (1 if d == 1 else 3 * d - 2) for d, p in zip(dims, periods)]
    return (math.prod(reach) - n) // 2


def _offset_ok(delta: int, d: int) -> tuple[bool, bool]:
    """(a neighbour offset in a dimension of size d, wraps around)"""
    a = abs(delta)
    if a <= 1:
        return True, False
    return a == d - 1, True


Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _arrays(pairs: dict[tuple[int, int], int]) -> Arrays:
    """The pairs as arrays: ranks a, ranks b (int64), bytes (uint64)."""
    if not pairs:
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0, dtype=np.uint64)
    ab = np.array(list(pairs), dtype=np.int64).reshape(-1, 2)
    return ab[:, 0].copy(), ab[:, 1].copy(), np.array(list(pairs.values()), dtype=np.uint64)


def fit(dims: list[int], pairs: dict[tuple[int, int], int] | Arrays, total: int,
        index: dict[int, int] | None = None,
        periods: list[bool] | None = None) -> tuple[Stencil, Stencil]:
    """The faces and the faces-and-corners stencils of the traffic on one grid.

    `index` maps a world rank to its grid rank (None: the same number); `periods` the
    application's periodicity (None: inferred from wrap-around offsets).  Vectorised
    over the pairs (numpy): a, b's coordinates, the offset per dimension."""
    a, b, v = _arrays(pairs) if isinstance(pairs, dict) else pairs
    if index is not None:
        top = max(max(index) if index else 0, int(a.max()) if len(a) else 0,
                  int(b.max()) if len(b) else 0)
        lut = np.full(top + 1, -1, dtype=np.int64)
        for w, g in index.items():
            if 0 <= w <= top:
                lut[w] = g
        ga, gb = lut[a], lut[b]
        keep = (ga >= 0) & (gb >= 0)
        ga, gb, v = ga[keep], gb[keep], v[keep]
    else:
        ga, gb = a, b
    ok = np.ones(len(ga), dtype=bool)
    moved = np.zeros(len(ga), dtype=np.int64)
    wrap = []
    stride = math.prod(dims)
    for k, d in enumerate(dims):
        stride //= d
        delta = (gb // stride) % d - (ga // stride) % d
        mag = np.abs(delta)
        w = mag > 1
        good = (mag <= 1) | (mag == d - 1)
        if periods is not None and not periods[k]:
            good &= ~w
        ok &= good
        moved += delta != 0
        wrap.append(w & (d > 2))
    masks = {FACES: ok & (moved == 1), BOX: ok}
    out = []
    for kind in (FACES, BOX):
        m = masks[kind]
        share = int(v[m].sum()) if m.any() else 0
        used = int(np.count_nonzero(m))
        wraps = [bool((wk & m).any()) for wk in wrap]
        if periods is not None:
            per: list[bool | None] = list(periods)
            count_periods = periods
        else:
            per = [w if d > 2 else None for w, d in zip(wraps, dims)]
            count_periods = [bool(p) for p in per]
        npairs = neighbour_pairs(dims, count_periods, kind)
        out.append(Stencil(dims=list(dims), periods=per, neighbours=kind,
                           grid="inferred" if index is None and periods is None
                           else "MPI_Cart_create",
                           share=share / total if total else 0.0,
                           coverage=used / npairs if npairs else 0.0))
    return out[0], out[1]


def _best(cands: list[Stencil], n: int, own_grid: bool) -> Stencil | None:
    good = []
    for s in cands:
        if s.share < SHARE:
            continue
        everyone = neighbour_pairs(s.dims, [bool(p) for p in s.periods], s.neighbours) \
            == n * (n - 1) // 2
        if not own_grid and (s.coverage < COVERAGE or everyone):
            continue
        good.append(s)
    if not good:
        return None
    return max(good, key=lambda s: (s.coverage, s.share, -len(s.dims), s.neighbours == FACES,
                                    -sum(bool(p) for p in s.periods)))


def infer(n: int, pairs: dict[tuple[int, int], int]) -> Stencil | None:
    """The best-fitting stencil on a grid of the n world ranks, or None."""
    total = sum(pairs.values())
    cands: list[Stencil] = []
    arrays = _arrays(pairs)
    for dims in factorisations(n):
        # a grid whose fewest neighbour pairs (faces, non-periodic) outnumber the pairs
        # with traffic by more than 1 / COVERAGE cannot be covered: not a candidate
        if len(pairs) < COVERAGE * neighbour_pairs(dims, [False] * len(dims), FACES):
            continue
        cands.extend(fit(dims, arrays, total))
    return _best(cands, n, own_grid=False)


def from_topology(topo: dict[str, Any], pairs: dict[tuple[int, int], int]) -> Stencil | None:
    """The stencil on the application's Cartesian topology (header `topologies` entry)."""
    if topo.get("kind") != "cart":
        return None
    ranks = topo["ranks"]
    index = {w: t for t, w in enumerate(ranks)}
    fitted = fit(list(topo["dims"]), pairs, sum(pairs.values()), index=index,
                 periods=[bool(p) for p in topo["periods"]])
    return _best(list(fitted), len(ranks), own_grid=True)


def graph_share(topo: dict[str, Any], pairs: dict[tuple[int, int], int]) -> float | None:
    """Fraction of the bytes along the edges of a recorded graph topology (None: no edges)."""
    if topo.get("kind") not in ("graph", "dist_graph") or topo.get("edges") is None:
        return None
    ranks = topo["ranks"]
    edges = {tuple(sorted((ranks[t], ranks[u]))) for t, out in enumerate(topo["edges"])
             for u in out if ranks[t] != ranks[u]}
    total = sum(pairs.values())
    return sum(b for p, b in pairs.items() if p in edges) / total if total else 0.0

