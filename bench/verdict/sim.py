#!/usr/bin/env python3
"""How often `advise --check`'s verdict comes out confirmed / refuted / not resolved,
by simulation: each pair's baseline b and changed c time per call are lognormal
(sigma), c multiplied by (1 - effect); the verdict's interval computed on the log ratios
ln(b / c) (stats.decide, what --check does) and, for comparison, on the relative gains
(b - c) / b (what it did before).  Run by hand (docs/advise.md, Checking advice):

    PYTHONPATH=python python3 bench/verdict/sim.py --pairs 7 --sigma 1 --effect 0 0.3
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys

from mpilens.advise import stats


def verdict(lo: float, hi: float) -> str:
    return stats.CONFIRMED if lo > 0 else stats.REFUTED if hi < 0 else stats.UNRESOLVED


def rates(pairs: int, sigma: float, effect: float, trials: int,
          rng: random.Random) -> dict[str, dict[str, float]]:
    out = {scale: dict.fromkeys((stats.CONFIRMED, stats.REFUTED, stats.UNRESOLVED), 0.0)
           for scale in ("log_ratio", "relative_gain")}
    for _ in range(trials):
        gains = [1 - math.exp(rng.gauss(0, sigma)) * (1 - effect) / math.exp(rng.gauss(0, sigma))
                 for _ in range(pairs)]
        v = stats.decide(gains, 0.0)  # predicted 0: only the interval's sign decides
        rel = stats.signed_rank_interval(gains)
        if v.interval is None or rel is None:
            raise SystemExit(f"--pairs {pairs}: no interval (at least {stats.min_pairs()})")
        out["log_ratio"][v.verdict] += 1 / trials
        out["relative_gain"][verdict(rel.lo, rel.hi)] += 1 / trials
    return {s: {k: round(x, 4) for k, x in r.items()} for s, r in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--sigma", type=float, default=1.0, help="sd of ln(time per call)")
    ap.add_argument("--effect", type=float, nargs="+", default=[0.0, 0.3],
                    help="true relative gains (0: no effect)")
    ap.add_argument("--trials", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.pairs < 1 or a.trials < 1 or a.sigma < 0 or any(not 0 <= e < 1 for e in a.effect):
        print("sim.py: --pairs and --trials >= 1, --sigma >= 0, --effect in [0, 1)",
              file=sys.stderr)
        raise SystemExit(2)
    rng = random.Random(a.seed)
    json.dump({"pairs": a.pairs, "sigma": a.sigma, "trials": a.trials, "seed": a.seed,
               "effects": {str(e): rates(a.pairs, a.sigma, e, a.trials, rng) for e in a.effect}},
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
