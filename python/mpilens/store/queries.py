"""The questions of `mpilens store` (docs/store.md), each a list of plain rows.

apps: the workload by application; gains: advise's findings summed over jobs;
endings: how jobs end; history: one application's MPI share per run with its change
points (Mann-Whitney rank tests with a Bonferroni bound, binary segmentation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import Store

# history: fewer runs than this (in a segment) and no change point can be told apart
MIN_SEGMENT = 5
ALPHA = 0.01  # family-wise error of one segment's test (Bonferroni over its splits)


def _where(since: str | None, until: str | None) -> tuple[str, list[Any]]:
    parts, params = [], []
    if since:
        parts.append("\"end\" >= CAST(? AS TIMESTAMPTZ)")
        params.append(since)
    if until:
        parts.append("\"end\" < CAST(? AS TIMESTAMPTZ)")
        params.append(until)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def apps(s: Store, since: str | None = None, until: str | None = None,
         top: int = 3) -> list[dict[str, Any]]:
    """Per application: jobs, node-hours, MPI share (node-hour weighted), top functions
    (their share of its MPI time) and latency- or bandwidth-bound (module record)."""
    w, p = _where(since, until)
    rows = s.rows(f"""
        SELECT app, count(*) AS jobs, sum(node_hours) AS node_hours,
               sum(mpi_pct * node_hours) / nullif(sum(node_hours), 0) AS mpi_pct,
               sum(latency_share * mpi_mean_s * nranks)
                 / nullif(sum(CASE WHEN latency_share IS NOT NULL
                                   THEN mpi_mean_s * nranks END), 0) AS latency_share,
               max(nranks) AS max_ranks
        FROM jobs{w} GROUP BY app ORDER BY node_hours DESC, app""", p)
    fw = w.replace("\"end\"", "f.\"end\"")
    fns = s.rows(f"""
        SELECT app, function, sum(time_s) AS time_s FROM functions f{fw}
        {'AND' if fw else 'WHERE'} NOT outside GROUP BY app, function""", p)
    by_app: dict[str, list[tuple[float, str]]] = {}
    for r in fns:
        by_app.setdefault(r["app"], []).append((r["time_s"], r["function"]))
    for r in rows:
        f = sorted(by_app.get(r["app"], []), key=lambda x: (-x[0], x[1]))
        total = sum(t for t, _ in f)
        r["top_functions"] = [{"function": n, "mpi_time_pct": 100.0 * t / total if total else 0.0}
                              for t, n in f[:top]]
        ls = r["latency_share"]
        r["bound"] = "-" if ls is None else "latency" if ls >= 0.5 else "bandwidth"
    return rows


def gains(s: Store, since: str | None = None, until: str | None = None) -> list[dict[str, Any]]:
    """advise's findings summed over jobs in node-hours (gain % of each job's wall time x
    its node-hours), the jobs that have them, the sum of their interval ends (None unless
    every finding summed has an interval) and the applications carrying most of it."""
    w, p = _where(since, until)
    rows = s.rows(f"""
        SELECT rule, key, count(DISTINCT job_key) AS jobs, count(*) AS findings,
               sum(gain_pct / 100 * node_hours) AS node_hours,
               CASE WHEN count(gain_lo_s) = count(*) THEN
                 sum(CASE WHEN wall_mean_s > 0 THEN gain_lo_s / wall_mean_s ELSE 0 END
                     * node_hours) END AS node_hours_lo,
               CASE WHEN count(gain_hi_s) = count(*) THEN
                 sum(CASE WHEN wall_mean_s > 0 THEN gain_hi_s / wall_mean_s ELSE 0 END
                     * node_hours) END AS node_hours_hi
        FROM findings{w} GROUP BY rule, key ORDER BY node_hours DESC, rule, key""", p)
    carry = s.rows(f"""
        SELECT rule, key, app, sum(gain_pct / 100 * node_hours) AS node_hours
        FROM findings{w} GROUP BY rule, key, app""", p)
    for r in rows:
        mine = sorted((c for c in carry if c["rule"] == r["rule"] and c["key"] == r["key"]),
                      key=lambda c: (-c["node_hours"], c["app"]))
        tot = r["node_hours"] or 0.0
        r["apps"] = [{"app": c["app"], "share_pct": 100.0 * c["node_hours"] / tot if tot else 0.0}
                     for c in mine[:3]]
    return rows


def endings(s: Store, since: str | None = None, until: str | None = None) -> list[dict[str, Any]]:
    """Jobs and node-hours per way of ending, with the flight recorder's verdicts."""
    w, p = _where(since, until)
    rows = s.rows(f"""
        SELECT ending, count(*) AS jobs, sum(node_hours) AS node_hours
        FROM jobs{w} GROUP BY ending ORDER BY jobs DESC, ending""", p)
    verdicts = s.rows(f"""
        SELECT ending, verdict, count(*) AS jobs FROM jobs{w}
        {'AND' if w else 'WHERE'} verdict <> '' GROUP BY ending, verdict""", p)
    total = sum(r["jobs"] for r in rows)
    for r in rows:
        r["jobs_pct"] = 100.0 * r["jobs"] / total if total else 0.0
        r["verdicts"] = {v["verdict"]: v["jobs"] for v in sorted(
            verdicts, key=lambda v: (-v["jobs"], v["verdict"])) if v["ending"] == r["ending"]}
    return rows


def _ranks(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Mid-ranks of x (1-based) and the tie term sum(t^3 - t)."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    n = len(x)
    ranks = np.empty(n)
    starts = np.r_[0, np.nonzero(np.diff(xs))[0] + 1]
    ends = np.r_[starts[1:], n]
    mid = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(mid, ends - starts)
    t = (ends - starts).astype(float)
    return ranks, float(np.sum(t ** 3 - t))


def best_split(x: np.ndarray) -> tuple[int, float] | None:
    """The split k (x[:k] | x[k:]) whose Mann-Whitney two-sided p-value (normal
    approximation, tie-corrected) is least, and that p-value times the number of splits
    tried (Bonferroni); None when x is too short for segments of MIN_SEGMENT."""
    n = len(x)
    if n < 2 * MIN_SEGMENT:
        return None
    r, ties = _ranks(x)
    k = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    u = np.cumsum(r)[k - 1] - k * (k + 1) / 2.0
    m = n - k
    mu = k * m / 2.0
    var = k * m / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    ok = var > 0
    if not ok.any():
        return None
    z = np.zeros(len(k))
    z[ok] = (np.abs(u[ok] - mu[ok]) - 0.5) / np.sqrt(var[ok])
    i = int(np.argmax(z))
    p = math.erfc(max(z[i], 0.0) / math.sqrt(2))
    return int(k[i]), min(1.0, p * len(k))


def change_points(x: np.ndarray, offset: int = 0) -> list[tuple[int, float]]:
    """Binary segmentation: split where the test says so, then test each side."""
    found = best_split(x)
    if found is None or found[1] >= ALPHA:
        return []
    k, p = found
    return (change_points(x[:k], offset) + [(offset + k, p)]
            + change_points(x[k:], offset + k))


def history(s: Store, app: str, since: str | None = None,
            until: str | None = None) -> dict[str, Any]:
    """An application's runs in time order with their MPI share, and its change points
    (runs from which the MPI share differs beyond the noise)."""
    w, p = _where(since, until)
    cond = (w + " AND" if w else " WHERE") + " app = ?"
    runs = s.rows(f"""
        SELECT job_key, job_id, start, nranks, wall_s, mpi_pct, ending FROM jobs{cond}
        ORDER BY start, job_key""", [*p, app])
    x = np.array([r["mpi_pct"] for r in runs], dtype=float)
    cps = change_points(x)
    bounds = [0, *(k for k, _ in cps), len(x)]
    points = []
    for j, (k, pv) in enumerate(cps):
        before, after = x[bounds[j]:k], x[k:bounds[j + 2]]
        points.append({"run": k, "job_id": runs[k]["job_id"], "start": runs[k]["start"],
                       "p_bonferroni": pv, "median_before_pct": float(np.median(before)),
                       "median_after_pct": float(np.median(after))})
    if len(x) < 2 * MIN_SEGMENT:
        verdict = (f"cannot tell: {len(x)} runs, a change point needs at least "
                   f"{MIN_SEGMENT} runs on either side")
    elif not cps:
        verdict = (f"no change point: no split of the {len(x)} runs differs beyond the noise "
                   f"(Mann-Whitney, p < {ALPHA} after Bonferroni)")
    else:
        verdict = f"{len(cps)} change point{'s' if len(cps) > 1 else ''} in {len(x)} runs"
    return {"app": app, "runs": runs, "change_points": points, "verdict": verdict}
