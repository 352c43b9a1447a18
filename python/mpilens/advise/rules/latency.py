"""Rule 2, latency-bound small messages.

Point-to-point messages (the send histograms of functions that are not collectives)
below the model's crossovers cost mostly the fixed per-message part L + g(0).  When
they are at least half of the messages sent, aggregating k of them into one saves
(1 - 1/k)(L + g(0)) per message (P-LogP's linear regime: g(km) = k g(m) - (k-1) g(0)).
"""

from __future__ import annotations

import math

from ...report.analysis import dominant_classes
from ...report.commpattern import collective_base
from ...report.schema import NBINS
from ...units import fmt_bytes, fmt_time
from ..finding import Context, Finding, fit_confidence

RULE = 2
AGGREGATE = 8      # k: messages aggregated into one (an assumption, stated)
DOMINANT = 0.5     # share of point-to-point messages that makes them "the" pattern
RECEIVES = ("MPI_Recv", "MPI_Irecv", "MPI_Mrecv", "MPI_Imrecv", "MPI_Wait", "MPI_Waitall",
            "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany",
            "MPI_Testsome", "MPI_Probe", "MPI_Iprobe")


def bin_range(b: int) -> tuple[float, float]:
    """Sizes of histogram class b: 0, 1, 2^(b-1) .. 2^b - 1, >= 8 MiB."""
    if b <= 1:
        return float(b), float(b)
    if b == NBINS - 1:
        return float(1 << (b - 1)), math.inf
    return float(1 << (b - 1)), float((1 << b) - 1)


def p2p_senders(ctx: Context) -> dict[str, dict]:
    return {n: f for n, f in ctx.functions().items()
            if collective_base(n) is None and sum(f.get("hist_send", [])) > 0}


def representative(f: dict, b: int) -> float:
    """The size taken for the messages of class b of function f: the function's mean
    message size, clamped into the class (exact when it sends one class only)."""
    n = sum(f["hist_send"])
    mean = int(f.get("hist_send_bytes", f.get("bytes_sent", 0))) / n
    lo, hi = bin_range(b)
    return min(max(mean, lo), hi)


def threshold(ctx: Context) -> tuple[float, int | None, int | None]:
    """Messages below min(eager, latency crossover) are latency-bound; a crossover the
    model does not show counts as its largest size."""
    eager, lat = ctx.model.eager_crossover(), ctx.model.latency_crossover()
    top = ctx.model.sizes[-1]
    return float(min(eager if eager is not None else top, lat if lat is not None else top)), \
        eager, lat


def find(ctx: Context) -> list[Finding]:
    senders = p2p_senders(ctx)
    if not senders:
        return []
    limit, eager, lat = threshold(ctx)
    model = ctx.model
    total = small = 0
    now_all = now_small = 0.0
    combined = [0] * NBINS
    for f in senders.values():
        for b, count in enumerate(f["hist_send"]):
            if not count:
                continue
            s = representative(f, b)
            t = count * model.msg(s)
            total += count
            now_all += t
            combined[b] += count
            if s < limit:
                small += count
                now_small += t
    if total == 0 or small < DOMINANT * total:
        return []
    per_rank = small / ctx.nranks
    fixed = model.L + model.gap(0)
    gain = per_rank * (1 - 1 / AGGREGATE) * fixed
    bound = per_rank * fixed
    labels = ctx.prof.hist_labels()
    dom = dominant_classes([c if bin_range(b)[0] < limit else 0 for b, c in enumerate(combined)],
                           labels)
    measured = sum(float(f.get("time_s", 0.0)) for n, f in ctx.functions().items()
                   if n in senders or n in RECEIVES) / ctx.nranks
    conf, conf_why = fit_confidence(now_all / ctx.nranks, measured,
                                    "point-to-point time (sends, receives, waits)")
    names = ", ".join(sorted(senders))
    cross = (f"eager crossover {fmt_bytes(eager) if eager is not None else 'not seen'}, "
             f"latency crossover {fmt_bytes(lat) if lat is not None else 'not seen'}")
    return [Finding(
        rule=RULE, key="latency", title="Latency-bound small messages",
        what=(f"{small:,} of {total:,} point-to-point messages ({100 * small / total:.1f} %) "
              f"are below {fmt_bytes(limit)}; dominant classes "
              f"{', '.join(x + ' B' for x in dom['labels'])} ({names})"),
        why=(f"below the crossovers ({cross}) a message costs mostly the fixed L + g(0) = "
             f"{fmt_time(fixed)}: the model gives {fmt_time(now_small / ctx.nranks)} per rank "
             f"for these messages, {fmt_time(per_rank * fixed)} of it fixed cost"),
        change=(f"aggregate messages to the same peer (pack {AGGREGATE} into one), or replace "
                f"the exchange by a neighbourhood collective (MPI_Neighbor_alltoall(v) on the "
                f"communication graph) or persistent requests (MPI_Send_init/MPI_Start): a "
                f"code change"),
        gain_s=gain, gain_pct=ctx.pct(gain),
        gain_note=(f"{per_rank:g} messages per rank x (1 - 1/{AGGREGATE}) x (L + g(0)); "
                   f"at most {fmt_time(bound)} ({ctx.pct(bound):.1f} %) if all were merged"),
        confidence=conf, confidence_why=conf_why,
        basis={"profile": [f"hist_send and hist_send_bytes of {names}",
                           f"time in sends, receives and waits {measured:.6g} s per rank",
                           f"wall_s.mean {ctx.wall_s:.6g} s"],
               "model": [model.describe(), f"L + g(0) = {fixed:.6g} s", cross],
               "assumptions": [f"k = {AGGREGATE} messages merged into one",
                               ("a class's messages have the function's mean size, clamped "
                                "into the class"),
                               "the saving is on every rank's critical path"]},
        figures={"messages": total, "small_messages": small, "limit_bytes": limit,
                 "eager_bytes": eager, "latency_crossover_bytes": lat,
                 "fixed_s": fixed, "model_small_s": now_small / ctx.nranks,
                 "model_all_s": now_all / ctx.nranks, "measured_s": measured,
                 "aggregate": AGGREGATE, "bound_s": bound})]
