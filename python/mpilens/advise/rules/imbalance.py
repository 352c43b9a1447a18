"""Rule 5, load imbalance versus communication.

Time in blocking collectives and MPI_Wait* is split, per function, into late arrival
(each rank's time minus the fastest rank's: waiting for the last rank to arrive) and
transfer (the fastest rank's time, which every rank pays).  When late arrival is at
least half of it and half of the time in MPI, the job is imbalance-bound and no network
change is proposed.
"""

from __future__ import annotations

import numpy as np

from ...report.commpattern import collective_base
from ...units import fmt_time
from ..finding import Context, Finding
from ..late import describe, late_rank

RULE = 5
DOMINANT = 0.5   # late share of the time in MPI at or above which imbalance dominates
                 # (network advice withheld)
NOTABLE = 0.2    # late share at or above which imbalance is reported at all
MARGIN = 0.25    # a late rank is named when it waits this x the late arrival less than the next
WAITS = ("MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome")


def sync_functions(ctx: Context) -> list[str]:
    """Blocking collectives and MPI_Wait* the job called."""
    out = []
    for name in ctx.functions():
        cb = collective_base(name)
        if name in WAITS or (cb is not None and not cb[1]):
            out.append(name)
    return sorted(out)


def split(ctx: Context) -> dict[str, dict[str, float]]:
    """Per synchronising function, over the ranks that called it (a collective of a
    sub-communicator, a wait on some ranks only): late (sum of t_r - min t) and transfer
    (min t for each of them), both per rank of the job; t_r from the rank lines."""
    out = {}
    P = len(ctx.prof.ranks)
    cols = ctx.prof.columns()
    for name in sync_functions(ctx):
        i = cols.function_index(name)
        if i is None:
            continue
        called = (cols.fn_calls[i] > 0).nonzero()[0]
        if not len(called):
            continue
        t = cols.fn_time[i][called]
        fast = t.min()
        fastest = int(called[(t == fast).nonzero()[0][0]])  # the first rank on a tie
        out[name] = {"late_s": sum((t - fast).tolist()) / P,
                     "transfer_s": float(fast) * len(t) / P, "fastest_rank": fastest,
                     "ranks": len(t)}
    return out


def find(ctx: Context) -> list[Finding]:
    parts = split(ctx)
    late = sum(p["late_s"] for p in parts.values())
    transfer = sum(p["transfer_s"] for p in parts.values())
    if late + transfer <= 0:
        return []
    share = late / (late + transfer)
    if share < NOTABLE:
        return []
    worst = max(parts, key=lambda n: parts[n]["late_s"])
    # the rank that arrives last waits least: the shortest total time in these functions
    # (among the ranks that called the worst one)
    cols = ctx.prof.columns()
    acc = np.zeros(cols.n)
    for n in parts:
        acc = acc + cols.time_of(n)
    wi = cols.function_index(worst)
    called = (cols.fn_calls[wi] > 0).nonzero()[0] if wi is not None else np.zeros(0, np.int64)
    tot = acc[called]
    last = int(called[(tot == tot.min()).nonzero()[0][0]])
    # a late rank is named only when it stands out: the next least-waiting rank waits at
    # least MARGIN x the late arrival per rank more (else the "last" rank is noise: seen
    # as none, 3, 2, 1, 1 across five CG profiles)
    others = np.sort(np.delete(tot, (tot == tot.min()).nonzero()[0][0]))
    margin = float(others[0] - tot.min()) if others.size else 0.0
    named = bool(others.size) and margin >= MARGIN * late
    # with the profile's per-collective statistics (late.py), the late rank is the one
    # last in significantly more sampled calls than chance, not the one of the totals
    stats = late_rank(ctx.prof.ranks, ctx.nranks)
    by_calls = stats is not None and stats["sampled"] > 0
    if by_calls:
        named = bool(stats["named"])
        last = int(stats["rank"]) if stats["rank"] is not None else last
    who = (describe(stats) if by_calls else
           f"rank {last} arrives last (it waits {fmt_time(margin)} less than the next)" if named
           else "no single rank arrives last beyond the noise (the least "
           f"waiting, rank {last}, waits only {fmt_time(margin)} less than the next)")
    # on a host with more ranks than CPUs a rank that waits for a CPU arrives last as one
    # that computes longer does (MPICH's busy-polling ranks keep the third of 3 ranks on 2
    # CPUs from its CPU: last in 20 of 20 calls of balanced code): the verdict steps aside
    starved = ctx.starved(last) if named else None
    if starved is not None:
        who = (f"cannot tell which rank is late: {starved['ranks']} ranks on "
               f"{starved['cpus']} CPUs ({starved['host']}), where a rank waiting for a CPU "
               f"arrives last as one that computes longer does (the timings alone: {who})")
        named = False
    mpi_share = late / ctx.mpi_s if ctx.mpi_s > 0 else 0.0
    dominant = share >= DOMINANT and mpi_share >= DOMINANT
    verdict = ("imbalance-bound: no network change is proposed" if dominant
               else "imbalance is a notable part")
    return [Finding(
        rule=RULE, key="imbalance", title="Load imbalance: ranks wait for a late rank",
        what=(f"of {fmt_time(late + transfer)} per rank in blocking collectives and "
              f"MPI_Wait*, {fmt_time(late)} ({100 * share:.1f} %; {100 * mpi_share:.1f} % of the "
              f"time in MPI) is late arrival, "
              f"{fmt_time(transfer)} transfer; most in {worst} "
              f"({fmt_time(parts[worst]['late_s'])}); " + who),
        why=(f"{verdict}: the waiting is other ranks' computation before the call, which no "
             f"network, algorithm or placement change shortens"),
        change=(f"balance the work done before {worst} (code change)"
                + (f": rank {last} spends the least time waiting in it, so it computes the "
                   f"longest" if named else
                   f"; or run at most {starved['cpus']} ranks on {starved['host']} and "
                   f"profile again (its ranks may wait for a CPU)" if starved is not None
                   else ": the late ranks vary (no single late rank)")),
        gain_s=late, gain_pct=ctx.pct(late),
        gain_note="upper bound: every rank arrives with the fastest (perfect balance)",
        confidence="high", confidence_why="measured per-rank times only, no model"
        + ("; the late rank from per-call late arrival (binomial test against chance)"
           if by_calls else ""),
        basis={"profile": [f"{n}: per-rank time_s, late {p['late_s']:.6g} s, transfer "
                           f"{p['transfer_s']:.6g} s" for n, p in parts.items()],
               "model": [],
               "assumptions": ["the fastest rank's time is pure transfer"]},
        network=False,
        figures={"late_s": late, "transfer_s": transfer, "late_share": share,
                 "mpi_share": mpi_share,
                 "dominant": dominant, "last_rank": last if named else None,
                 "last_rank_withheld": (None if starved is None else
                                        {"rank": last, **starved}),
                 "last_rank_margin_s": margin, "functions": parts,
                 "late_arrival": stats})]
