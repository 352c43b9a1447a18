"""Rule 3, collective algorithm (Alltoall, Allreduce, Bcast, Allgather).

At the profile's size per call and communicator size, every algorithm the profile's MPI
(or the adaptive Alltoall engine) can select is predicted with the model
(collectives.py); the fastest is proposed when the calls take at least 1.2 times its
prediction.  What the calls take: the model's figure for the algorithm that ran when
the profile records it (the engine's Alltoall section), else the measured time per call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...units import fmt_bytes, fmt_time
from ..collectives import FAMILIES, Algorithm, candidates, knob
from ..finding import FIT_RANGE, Context, Finding, fit_confidence

RULE = 3
WORTH = 1.2  # the engine's re-learning threshold: 20 % slower is worth changing
SPREAD = 8   # size classes this far apart, each with MODE_SHARE of the calls: no mean size
MODE_SHARE = 0.1


def size_modes(f: dict[str, Any]) -> tuple[float, float] | None:
    """(smallest, largest) lower bound of the size classes holding at least MODE_SHARE of
    the function's calls, when they lie SPREAD or more apart: calls of such different
    sizes have no meaningful mean (8 B and 64 KiB Allreduces are not "32 KiB buffers");
    None otherwise."""
    from .latency import bin_range

    hist = f.get("hist_send") or []
    total = sum(hist)
    big = [max(bin_range(b)[0], 1.0) for b, c in enumerate(hist)
           if total and c >= MODE_SHARE * total]
    if len(big) >= 2 and max(big) >= SPREAD * min(big):
        return min(big), max(big)
    return None


def sizes(name: str, f: dict[str, Any], nranks: int) -> tuple[float, int, list[str]]:
    """(size per call m, communicator size P, assumptions) from the function's record."""
    calls = int(f["calls"])
    sent, recv = int(f.get("bytes_sent", 0)), int(f.get("bytes_recv", 0))
    block = int(f.get("hist_send_bytes", 0))
    assume: list[str] = []
    if name == "MPI_Alltoall" and block > 0:
        return block / calls, sent // block, assume  # one block per call; P blocks sent
    if name == "MPI_Allgather" and sent > 0:
        return sent / calls, recv // sent, assume    # recv = P blocks
    assume.append(f"{name}'s communicator is MPI_COMM_WORLD ({nranks} ranks)")
    if name == "MPI_Bcast":
        return (sent + recv) / calls, nranks, assume
    return sent / calls, nranks, assume


def engine_algorithm(ctx: Context, m: float, P: int) -> str | None:
    """The algorithm the adaptive Alltoall engine ran at this size (its profile section),
    None when the MPI's own ran."""
    recs = [r for r in ctx.prof.header.get("alltoall", [])
            if int(r["comm_size"]) == P and int(r["bytes"]) == round(m) and r.get("algorithm")]
    if not recs:
        return None
    alg = max(recs, key=lambda r: int(r["calls"]))["algorithm"]
    return None if alg == "mpi" else str(alg)


def transfer_per_call(ctx: Context, name: str) -> tuple[float, int] | None:
    """Time per call of the rank with the least time per call in the function (rule 5:
    the others' extra is late arrival, not transfer), and that rank; None when no rank
    line has the function."""
    t = ctx.prof.columns()
    i = t.function_index(name)
    if i is None:
        return None
    called = (t.fn_calls[i] > 0).nonzero()[0]
    if not len(called):
        return None
    per = t.fn_time[i][called] / t.fn_calls[i][called].astype(float)
    best = per.min()
    return float(best), int(called[(per == best).nonzero()[0][0]])


def find(ctx: Context) -> list[Finding]:
    out = []
    for name in FAMILIES:
        f = ctx.prof.functions.get(name)
        if not f or not int(f.get("calls", 0)):
            continue
        m, P, assume = sizes(name, f, ctx.nranks)
        if P < 2 or size_modes(f):
            continue  # one rank; or calls of very different sizes (engine.py warns)
        finding = _judge(ctx, name, f, m, P, assume)
        if finding:
            out.append(finding)
    return out


def _judge(ctx: Context, name: str, f: dict[str, Any], m: float, P: int,
           assume: list[str]) -> Finding | None:
    model, flavour = ctx.model, ctx.flavour
    algs = candidates(name, P, flavour)
    if not algs:
        return None
    pred = {a.name: a.cost(P, m, model) for a in algs}
    best: Algorithm = min(algs, key=lambda a: (pred[a.name], a.name))
    calls = int(f["calls"])
    per_rank = calls / ctx.nranks
    got = transfer_per_call(ctx, name)
    if got is None:
        return None
    measured, fastest = got
    ran = engine_algorithm(ctx, m, P) if name == "MPI_Alltoall" else None
    if ran is not None and ran in pred:
        # the model gives the ratio, the profile the time: measured x (1 - T_best / T_ran)
        ratio = pred[best.name] / pred[ran] if pred[ran] > 0 else 1.0
        after = measured * ratio
        now_what = (f"the model's {fmt_time(pred[ran])} for {ran}, which ran: {best.name} "
                    f"takes {ratio:.3g} of that, so the measured {fmt_time(measured)} per "
                    f"call becomes {fmt_time(measured * ratio)}")
        worth = ratio * WORTH <= 1
        conf, conf_why = fit_confidence(pred[ran], measured, f"{name} per call ({ran})")
        conf_why += "; the gain uses the model's ratio only, scaled by the measured time"
    else:
        ran = None
        after = pred[best.name]
        now_what = f"the measured {fmt_time(measured)} per call"
        worth = measured >= WORTH * after
        conf, conf_why = ("medium", ("the MPI's own algorithm is not recorded: the gain "
                                     "compares the measured time with the model's best"))
        worst = max(pred.values())
        if measured > FIT_RANGE[1] * worst:
            # the model does not describe the run: it gives the ratio only, as when the
            # algorithm is known, taking the slowest algorithm as the one that ran
            after = measured * pred[best.name] / worst if worst > 0 else measured
            worth = pred[best.name] * WORTH <= worst
            now_what = (f"the measured {fmt_time(measured)} per call, {measured / worst:.3g} x "
                        f"the slowest algorithm's prediction: scaled by the model's ratio "
                        f"{best.name} / slowest, {fmt_time(after)}")
            conf = "low"
            conf_why = (f"the MPI's own algorithm is not recorded, and the measured time is "
                        f"{measured / worst:.3g} x the slowest algorithm's prediction: most of "
                        f"it is not the algorithm's (contention, oversubscription, or a model "
                        f"of a quieter network); the gain takes the slowest algorithm as the "
                        f"one that ran and scales the measured time by the model's ratio, so "
                        f"the gain is an upper bound")
    if best.name == ran or not worth:
        return None
    ch = knob(name, best, flavour)
    if ch is None:
        return None
    gain = per_rank * (measured - after)
    ranked = sorted(pred.items(), key=lambda kv: kv[1])
    table = ", ".join(f"{k} {fmt_time(v)}" for k, v in ranked)
    also = ""
    if name == "MPI_Alltoall":
        mpi_alt = knob(name, replace(best, mpilens=None), flavour)
        also = "; or MPILENS_ALLTOALL=adaptive to let the engine learn the choice"
        if mpi_alt:
            also += f"; or the MPI's own: {mpi_alt['line']}"
    return Finding(
        rule=RULE, key="collective-algorithm", title=f"{name}: another algorithm",
        what=(f"{calls:,} calls ({per_rank:g} per rank) of {fmt_bytes(m)} "
              f"{'blocks' if name in ('MPI_Alltoall', 'MPI_Allgather') else 'buffers'} on "
              f"{P} ranks, {fmt_time(measured)} per call measured on rank {fastest} (the "
              f"fastest; the others' extra is late arrival, rule 5)"
              + (f", algorithm {ran} (adaptive engine)" if ran else "")),
        why=(f"the model predicts per call: {table}; {best.name} ({best.formula}) against "
             f"{now_what}"),
        change=ch["line"] + also, gain_s=gain, gain_pct=ctx.pct(gain),
        gain_note=(f"{per_rank:g} calls per rank x ({fmt_time(measured)} measured - "
                   f"{fmt_time(after)} after)"),
        confidence=conf, confidence_why=conf_why,
        basis={"profile": [f"{name}: rank {fastest}'s time per call {measured:.6g} s",
                           (f"{name}: calls {calls}, time_s {float(f.get('time_s', 0)):.6g}, "
                            f"bytes_sent {int(f.get('bytes_sent', 0))}, bytes_recv "
                            f"{int(f.get('bytes_recv', 0))}, hist_send_bytes "
                            f"{int(f.get('hist_send_bytes', 0))}")]
                          + ([f"alltoall section: algorithm {ran}"] if ran else []),
               "model": [model.describe()]
                        + [f"{a.name}: {a.formula} = {pred[a.name]:.6g} s" for a in algs],
               "assumptions": assume + ["the calls are spread evenly over the ranks"]},
        apply={"env": ch["env"], "launcher_args": []}, target=[name],
        figures={"function": name, "size": m, "comm_size": P, "calls_per_rank": per_rank,
                 "measured_per_call_s": measured, "measured_rank": fastest, "ran": ran, "after_per_call_s": after,
                 "best": best.name, "predicted_s": pred})
