"""Rule 3, collective algorithm (Alltoall, Allreduce, Bcast, Allgather, Alltoallv).

At the profile's size per call and communicator size, every algorithm the profile's MPI
(or the adaptive Alltoall engine) can select is predicted with the model
(collectives.py); the fastest is proposed when the calls take at least 1.2 times its
prediction.  What the calls take: the model's figure for the algorithm that ran when
the profile records it (the engine's Alltoall section), else the measured time per call.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ...units import fmt_bytes, fmt_time
from ..collectives import FAMILIES, Algorithm, candidates, knob
from ..finding import FIT_RANGE, Context, Finding, fit_confidence
from ..measure import BASELINE, DISAGREE, Sample

RULE = 3
BENCH_V = 4 / 3  # bench coll's Alltoallv size for a mean of m per peer (its v-counts)
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
    if name == "MPI_Alltoallv":  # the mean bytes per peer: the counts vary (rule 8)
        assume.append(f"{name}'s size per call is its mean bytes per peer; its counts vary")
        return sent / calls / max(nranks, 1), nranks, assume
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


def far_off(pred: dict[str, float], ran: str | None, measured: float) -> str | None:
    """Why the model and the measured time per call are more than DISAGREE x apart (the
    algorithm that ran: its prediction; not recorded: every algorithm's), None if not."""
    lo, hi = (pred[ran], pred[ran]) if ran else (min(pred.values()), max(pred.values()))
    if hi > 0 and measured > DISAGREE * hi:
        return (f"the measured {fmt_time(measured)} per call is {measured / hi:.3g} x the "
                f"model's {'prediction for ' + ran if ran else 'slowest algorithm'} "
                f"({fmt_time(hi)})")
    if lo > 0 and measured < lo / DISAGREE:
        return (f"the measured {fmt_time(measured)} per call is {lo / measured:.3g} x below "
                f"the model's {'prediction for ' + ran if ran else 'fastest algorithm'} "
                f"({fmt_time(lo)})")
    return None


def find(ctx: Context) -> list[Finding]:
    out = []
    for name in FAMILIES:
        f = ctx.prof.functions.get(name)
        if not f or not int(f.get("calls", 0)):
            continue
        m, P, assume = sizes(name, f, ctx.nranks)
        if P < 2:
            continue  # one rank
        # Alltoallv: each call's counts differ by rank by design (rule 8), and every call
        # involves every rank: judged on its mean per peer, never split by size
        if not size_modes(f) or name == "MPI_Alltoallv":
            finding = _judge(ctx, name, f, m, P, assume)
            out += [finding] if finding else []
            continue
        # calls of very different sizes: judged per size, from the call sites (each of
        # one size); without such call sites not at all (engine.py warns)
        for group in split_by_size(ctx, name, f, P) or []:
            finding = _judge(ctx, name, group["function"], group["size"], P,
                             assume + [group["assumption"]], group["transfer"],
                             group["label"])
            if finding:  # --check decides on the call sites of this size class
                finding.figures["size_class"] = group["size_class"]
                out.append(finding)
    return out


def site_class(site: dict[str, Any]) -> int:
    """A call site's size class: the class of most of its calls (its `hist`)."""
    hist = site.get("hist") or []
    return max(range(len(hist)), key=lambda b: (hist[b], -b)) if hist else 0


def split_by_size(ctx: Context, name: str, f: dict[str, Any], P: int
                  ) -> list[dict[str, Any]] | None:
    """The function's calls grouped by size, from the rank lines' call sites (each
    site's calls in one size class; a group: the sites of one class): per group the
    calls, bytes and time (as a function record), the size per call, and the fastest
    rank's time per call.  None when a site mixes classes SPREAD apart or the profile
    has no call sites of the function (MPILENS_CALLSITES=0)."""
    groups: dict[int, dict[str, Any]] = {}
    for rank, r in enumerate(ctx.prof.ranks):
        per: dict[int, list[float]] = {}
        for site in r.get("callsites") or []:
            if site.get("function") != name or not int(site.get("calls", 0)):
                continue
            if size_modes({"hist_send": site.get("hist") or []}):
                return None  # one site, very different sizes: no split
            cls = site_class(site)
            g = groups.setdefault(cls, {"calls": 0, "bytes_sent": 0, "bytes_recv": 0,
                                        "time_s": 0.0})
            for k in ("calls", "bytes_sent", "bytes_recv"):
                g[k] += int(site.get(k, 0))
            g["time_s"] += float(site.get("time_s", 0.0))
            acc = per.setdefault(cls, [0.0, 0.0])
            acc[0] += float(site.get("time_s", 0.0))
            acc[1] += int(site.get("calls", 0))
        for cls, (t, c) in per.items():
            if c and ("best" not in groups[cls] or t / c < groups[cls]["best"][0]):
                groups[cls]["best"] = (t / c, rank)
    if len(groups) < 2 or sum(g["calls"] for g in groups.values()) != int(f["calls"]):
        return None  # one size after all, or calls outside the recorded sites
    out = []
    for cls in sorted(groups):
        g = groups[cls]
        calls = g["calls"]
        if name in ("MPI_Alltoall", "MPI_Alltoallv"):
            m = g["bytes_sent"] / calls / P    # P blocks per call (P from the function)
        elif name == "MPI_Bcast":
            m = (g["bytes_sent"] + g["bytes_recv"]) / calls
        else:
            m = g["bytes_sent"] / calls
        fn = {"calls": calls, "bytes_sent": g["bytes_sent"], "bytes_recv": g["bytes_recv"],
              "time_s": g["time_s"], "hist_send_bytes": round(m * calls)}
        out.append({"function": fn, "size": m, "transfer": g["best"], "size_class": cls,
                    "label": f"{fmt_bytes(m)} calls",
                    "assumption": (f"{name}'s {calls:,} calls of {fmt_bytes(m)} (their call "
                                   f"sites) judged apart from its calls of other sizes; the "
                                   f"knob applies to every call of {name}")})
    return out


def _judge(ctx: Context, name: str, f: dict[str, Any], m: float, P: int,
           assume: list[str], transfer: tuple[float, int] | None = None,
           label: str = "") -> Finding | None:
    model, flavour = ctx.model, ctx.flavour
    algs = candidates(name, P, flavour)
    if not algs:
        return None
    pred = {a.name: a.cost(P, m, model) for a in algs}
    best: Algorithm = min(algs, key=lambda a: (pred[a.name], a.name))
    calls = int(f["calls"])
    per_rank = calls / ctx.nranks
    got = transfer or transfer_per_call(ctx, name)
    if got is None:
        return None
    measured, fastest = got
    ran = engine_algorithm(ctx, m, P) if name == "MPI_Alltoall" else None
    ran = ran if ran in pred else None
    far = far_off(pred, ran, measured)
    unmeasured = "not measured: the profile ran on another host, or --no-measure"
    if far and ctx.measure is not None:
        done = _measured(ctx, name, f, m, P, assume, algs, pred, ran, measured, fastest, far,
                         label)
        if not isinstance(done, str):
            return done
        unmeasured = done  # the measurement failed: the model's ratio, low confidence
    if ran is not None:
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
    if far:
        conf_why += f"; {far}, and the candidates were {unmeasured}: the gain scales the model"
        conf = "low"
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
        rule=RULE, key="collective-algorithm", title=_title(name, label),
        what=_what(name, calls, per_rank, m, P, measured, fastest, ran),
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
                 "measured_per_call_s": measured, "measured_rank": fastest, "ran": ran,
                 "after_per_call_s": after, "split": bool(label),
                 "best": best.name, "predicted_s": pred})


def _what(name: str, calls: int, per_rank: float, m: float, P: int, measured: float,
          fastest: int, ran: object) -> str:
    """A collective finding's "what": its calls, their size, the time measured."""
    return (f"{calls:,} calls ({per_rank:g} per rank) of {fmt_bytes(m)} "
            f"{_unit(name)} on "
            f"{P} ranks, {fmt_time(measured)} per call measured on rank {fastest} (the "
            f"fastest; the others' extra is late arrival, rule 5)"
            + (f", algorithm {ran} (adaptive engine)" if ran else ""))


def _unit(name: str) -> str:
    if name == "MPI_Alltoallv":
        return "per peer (mean)"
    return "blocks" if name in ("MPI_Alltoall", "MPI_Allgather") else "buffers"


def _title(name: str, label: str) -> str:
    return f"{name}{', ' + label if label else ''}: another algorithm"


def changes(name: str, algs: list[Algorithm], flavour: str, ran: str | None
            ) -> dict[str, dict[str, str]]:
    """The candidates measured for a function: the run as it ran (its label BASELINE, or
    the engine's algorithm that ran) first, then each algorithm a knob selects."""
    knobs = {a.name: knob(name, a, flavour) for a in algs}
    own = knobs[ran] if ran else None
    out: dict[str, dict[str, str]] = {ran or BASELINE: dict(own["env"]) if own else {}}
    for a in algs:
        ch = knobs[a.name]
        if a.name != ran and ch is not None:
            out[a.name] = {str(k): str(v) for k, v in ch["env"].items()}
    return out


def _measured(ctx: Context, name: str, f: dict[str, Any], m: float, P: int,
              assume: list[str], algs: list[Algorithm], pred: dict[str, float],
              ran: str | None, measured: float, fastest: int, far: str, label: str = ""
              ) -> Finding | str | None:
    """The model is far off: each candidate measured (measure.py) at this size and
    communicator size on the job's launcher line; the fastest is proposed when its
    interval lies below the interval of the run as it ran (outside the noise), and the
    gain scales the profile's time per call by their ratio.  None: measured, no claim
    (no candidate faster beyond the intervals); a string: why nothing was measured."""
    assert ctx.measure is not None
    knobs = {a.name: knob(name, a, ctx.flavour) for a in algs}
    base_label = ran or BASELINE
    candidates = changes(name, algs, ctx.flavour, ran)
    # the benchmark's Alltoallv moves size or size/2 per pair (bench/src/coll.c vcount),
    # about 3/4 size on the mean: asked at 4/3 m, its mean per peer is the job's m
    got = ctx.measure(name, m * BENCH_V if name == "MPI_Alltoallv" else m, P, candidates)
    calls = int(f["calls"])
    per_rank = calls / ctx.nranks
    if isinstance(got, str):
        return f"not measured: {got}"
    if base_label not in got:
        return None
    base = got[base_label]
    others = {k: v for k, v in got.items() if k != base_label}
    if not others or base.lo <= 0:
        return None
    best_name = min(others, key=lambda k: (others[k].median, k))
    best = others[best_name]
    if not best.hi < base.lo:  # not faster beyond the intervals: "cannot tell" beats a guess
        ctx.notes.append(
            f"rule 3, {_title(name, label).removesuffix(': another algorithm')}: {far}; the "
            f"candidates measured at {fmt_bytes(m)} on {P} ranks (median per call, 95 % "
            f"interval): "
            + ", ".join(f"{k} {fmt_time(v.median)} [{fmt_time(v.lo)} .. {fmt_time(v.hi)}]"
                        for k, v in sorted(got.items(), key=lambda kv: (kv[1].median, kv[0])))
            + f": none is faster than {base_label} beyond both intervals, no change proposed")
        return None
    ratio = best.median / base.median
    after = measured * ratio
    gain = per_rank * (measured - after)
    interval = [per_rank * measured * (1 - best.hi / base.lo),
                per_rank * measured * (1 - best.lo / base.hi)]
    ch = knobs[best_name]
    assert ch is not None
    alg = next(a for a in algs if a.name == best_name)
    # the benchmark's own call against the job's: far apart, the job's calls pay what
    # the benchmark's do not (late arrival, contention, waiting for a CPU)
    apart = max(base.median / measured, measured / base.median) if measured > 0 else math.inf
    conf, conf_note = "high", ""
    if apart > DISAGREE:
        conf = "medium"
        conf_note = (f"; but the benchmark's {base_label} ({fmt_time(base.median)}) is "
                     f"{apart:.3g} x apart from the job's {fmt_time(measured)} per call: the "
                     f"job's calls pay what the benchmark's do not, the gain assumes they "
                     f"scale alike")

    def show(k: str, s: Sample) -> str:
        return f"{k} {fmt_time(s.median)} [{fmt_time(s.lo)} .. {fmt_time(s.hi)}]"

    table = ", ".join(show(k, s) for k, s in sorted(got.items(), key=lambda kv: kv[1].median))
    return Finding(
        rule=RULE, key="collective-algorithm", title=_title(name, label),
        what=_what(name, calls, per_rank, m, P, measured, fastest, ran),
        why=(f"{far}: the model does not describe this run, so each candidate was measured "
             f"(mpilens-bench coll, {fmt_bytes(m)}, {P} ranks, the job's launcher line; "
             f"median per call and its 95 % interval): {table}; {best_name} ({alg.formula} "
             f"in the model) is faster than {base_label} beyond both intervals"),
        change=ch["line"], gain_s=gain, gain_pct=ctx.pct(gain),
        gain_note=(f"measured, not modelled: {per_rank:g} calls per rank x "
                   f"{fmt_time(measured)} per call x (1 - {best_name} / {base_label} = "
                   f"{fmt_time(best.median)} / {fmt_time(base.median)}); interval "
                   f"{fmt_time(interval[0])} .. {fmt_time(interval[1])} from the two "
                   f"medians' 95 % intervals"),
        confidence=conf,
        confidence_why=(f"measured: {best_name}'s 95 % interval ({fmt_time(best.lo)} .. "
                        f"{fmt_time(best.hi)}) lies below {base_label}'s ({fmt_time(base.lo)} "
                        f".. {fmt_time(base.hi)}) at this size, communicator size and "
                        f"launcher line" + conf_note),
        basis={"profile": [f"{name}: rank {fastest}'s time per call {measured:.6g} s",
                           f"{name}: calls {calls}, size per call {m:.6g} B, {P} ranks"],
               "model": [ctx.model.describe()]
                        + [f"{a.name}: {a.formula} = {pred[a.name]:.6g} s" for a in algs]
                        + [far],
               "assumptions": assume + [
                   "the calls are spread evenly over the ranks",
                   (f"the job's calls gain as the benchmark's did: the ratio {best_name} / "
                    f"{base_label} at {fmt_bytes(m)} (bench medians, interpolated between "
                    f"the powers of two around the size)")]},
        apply={"env": ch["env"], "launcher_args": []}, target=[name],
        gain_interval=interval,
        figures={"function": name, "size": m, "comm_size": P, "calls_per_rank": per_rank,
                 "measured_per_call_s": measured, "measured_rank": fastest, "ran": ran,
                 "after_per_call_s": after, "best": best_name, "predicted_s": pred,
                 "measured": {k: {"median_s": s.median, "ci95_s": [s.lo, s.hi]}
                              for k, s in got.items()},
                 "baseline": base_label, "ratio": ratio})
