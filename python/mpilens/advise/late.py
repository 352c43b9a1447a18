"""The late rank from per-collective late-arrival statistics (runtime/core/late.c).

Each rank line's ``late_arrival`` says in how many of the sampled synchronising
collectives on MPI_COMM_WORLD the rank waited least, i.e. arrived last, counting only the
M calls whose last arrival stands out (``clear``: the next least-waiting rank waited
more than 10x the median least time longer; below that the waits reflect the
algorithm's own skew, which favours some ranks on balanced jobs).  Under the null
hypothesis "no rank is systematically late" each rank is the last one of such a call
with probability 1/P, so its count is Binomial(M, 1/P).  A rank is named only when its count
is beyond chance: the upper tail P(X >= count) times P (Bonferroni, any of P ranks could
have been the one) is below ALPHA.  The share is given with its 95 % Clopper-Pearson
interval.  A rank last beyond chance is named only when its lateness matters: its gaps
(``gap_s``, scaled by the sampling stride ``every``) add up to at least MATERIAL of the
job's wall time.  A balanced job on a busy machine has a rank that is systematically
last by microseconds (Intel MPI, 2 ranks sleeping 2 ms before each of 20 MPI_Allreduce:
one rank last in 13-20 of 13-20 clear calls, 17 us a call, 0.4-0.8 % of the run) --
true, and not worth a code change.  One pass over the rank lines, a few numbers kept
(never one object per rank).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

ALPHA = 0.01       # family-wise error of naming a rank that is not late
MIN_SAMPLED = 5    # fewer sampled calls cannot tell
MATERIAL = 0.05    # the named rank's lateness adds up to this share of the wall time at least


def binom_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (n <= a few thousand)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    c = math.lgamma(n + 1)
    terms = [c - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
             for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def binom_cdf(n: int, k: int, p: float) -> float:
    """P(X <= k)."""
    return 1.0 - binom_tail(n, k + 1, p)


def clopper_pearson(n: int, k: int, level: float = 0.95) -> tuple[float, float]:
    """Exact interval of a binomial proportion (bisection on the tails)."""
    a = (1 - level) / 2

    def solve(f: Any, want: float) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if f(mid) > want:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if k == 0 else 1.0 - solve(lambda q: binom_tail(n, k, 1.0 - q), a)
    high = 1.0 if k == n else solve(lambda p: binom_cdf(n, k, p), a)
    return low, high


def late_rank(ranks: Iterable[dict[str, Any]], nranks: int) -> dict[str, Any] | None:
    """The statistics over the rank lines: None when the profile has none (an older
    profile, a dump); else {sampled, every, clear, rank, last, gap_s, share_lo, share_hi,
    p, named, why}: `rank` the rank last most often in the clear calls (the lowest on a
    tie), `named` whether it is last beyond chance."""
    sampled = every = clear = None
    why = ""
    top_rank, top_last, top_gap, second = -1, -1, 0.0, -1
    seen, wall = 0, 0.0
    for r in ranks:
        wall = max(wall, float(r.get("wall_s") or 0.0))
        la = r.get("late_arrival")
        if not isinstance(la, dict):
            continue
        seen += 1
        n = int(la.get("sampled", 0))
        if sampled is None:
            sampled, every, why = n, int(la.get("every", 0)), str(la.get("why", ""))
            clear = int(la.get("clear", 0))
        if n == 0:
            continue
        c = int(la.get("last_clear", 0))
        if c > top_last:
            second = top_last
            top_rank, top_last, top_gap = int(r["rank"]), c, float(la.get("gap_s", 0.0))
        elif c > second:
            second = c
    if not seen or sampled is None:
        return None
    out: dict[str, Any] = {"sampled": sampled, "every": every, "clear": clear or 0,
                           "rank": None, "last": 0,
                           "gap_s": 0.0, "share_lo": 0.0, "share_hi": 1.0, "p": 1.0,
                           "named": False, "why": why, "chance": 1.0 / max(nranks, 1),
                           "cost_share": None}
    if not sampled or nranks < 2:
        out["why"] = why or "no synchronising collective on MPI_COMM_WORLD was sampled"
        return out
    m = clear or 0
    # its lateness over all calls (the sampled ones stand for `every` calls each)
    cost = top_gap * max(every or 1, 1)
    out["cost_share"] = cost / wall if wall > 0 else None
    if m == 0:
        out["why"] = "no sampled call's last arrival stands out from the algorithm's own skew"
        return out
    p = min(1.0, nranks * binom_tail(m, top_last, 1.0 / nranks))
    lo, hi = clopper_pearson(m, top_last)
    beyond = m >= MIN_SAMPLED and p < ALPHA and top_last > second
    # an unknown wall time (0) does not hold the name back
    material = wall <= 0 or cost >= MATERIAL * wall
    named = beyond and material
    why = ("" if named else
           f"only {m} calls with a clear last arrival" if m < MIN_SAMPLED else
           "no rank is last more often than chance" if not beyond else
           f"its lateness adds up to {100 * cost / wall:.2g} % of the run, below "
           f"{100 * MATERIAL:.0f} %: too little to act on")
    out.update(rank=top_rank, last=top_last, gap_s=top_gap, share_lo=lo, share_hi=hi, p=p,
               named=named, why=why)
    return out


def describe(s: dict[str, Any]) -> str:
    """One clause for a finding."""
    if not s["sampled"]:
        return f"no late-arrival statistics ({s['why']})"
    if s["rank"] is None:
        return (f"no single rank arrives last beyond chance: of {s['sampled']} sampled "
                f"collectives on MPI_COMM_WORLD, {s['why']}")
    chance = 100 * s["chance"]
    body = (f"rank {s['rank']} arrives last in {s['last']} of {s['clear']} sampled collectives "
            f"on MPI_COMM_WORLD whose last arrival stands out (of {s['sampled']} sampled; "
            f"{100 * s['last'] / s['clear']:.0f} %, 95 % interval "
            f"{100 * s['share_lo']:.0f}-{100 * s['share_hi']:.0f} %; chance {chance:.0f} %, "
            f"p = {s['p']:.2g})")
    if s["named"]:
        mean_gap = s["gap_s"] / s["last"] if s["last"] else 0.0
        return body + f", on average {mean_gap * 1e3:.3g} ms after the next"
    if s["why"].startswith("its lateness"):
        return "no rank is named: " + body + "; " + s["why"]
    return "no single rank arrives last beyond chance: the most often, " + body
