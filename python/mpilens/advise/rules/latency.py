"""Rule 2, latency-bound small messages.

Point-to-point messages (the send histograms of functions that are not collectives)
below the model's crossovers cost mostly the fixed per-message part L + g(0).  When
they are at least half of the messages sent, aggregating k of them into one saves
(1 - 1/k)(L + g(0)) per message (P-LogP's linear regime: g(km) = k g(m) - (k-1) g(0)).
"""

from __future__ import annotations

import math
from typing import Any

from ...report.analysis import dominant_classes
from ...report.commpattern import collective_base
from ...report.schema import NBINS
from ...units import fmt_bytes, fmt_time
from ..finding import Context, Finding, fit_confidence
from ..measure import BASELINE, DISAGREE, OPS

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


def is_p2p(name: str, f: dict) -> bool:
    """A function that sends point-to-point (or RMA) messages: the profile records its
    node split; older profiles: not a collective in any form (I..., neighbour, _init, _c)."""
    if "p2p_intra_node" in f or "p2p_inter_node" in f:
        return True
    if "node_span" in f:
        return False
    base = name.lower().removeprefix("mpi_").removesuffix("_c").removesuffix("_init")
    return collective_base("MPI_" + base) is None and "neighbor" not in base


def p2p_senders(ctx: Context) -> dict[str, dict]:
    return {n: f for n, f in ctx.functions().items()
            if is_p2p(n, f) and sum(f.get("hist_send", [])) > 0}


def p2p_functions(ctx: Context) -> list[str]:
    """The point-to-point functions the job called (senders, receives, waits, tests,
    probes): what a change of the network or the placement acts on."""
    called = {n for n, f in ctx.functions().items()
              if int(f.get("calls", 0)) > 0 and n in RECEIVES}
    return sorted(called | set(p2p_senders(ctx)))


def representative(f: dict, b: int) -> float:
    """The size taken for the messages of class b of function f.  The profile has the
    function's bytes and its messages per class, not the bytes per class: every class's
    messages are put at the same relative place t in their class, lo + t (hi - lo), t
    such that the bytes add up (exact when the function sends one class only; HPCC's
    b_eff, 8 B and 2,000,000 B messages: the large ones at about 2,000,000 B, where the
    function's mean clamped into the class took 1 MiB).  The open top class (8 MiB and
    above) weighs as if it ended at twice its start and takes what the others cannot."""
    hist = f["hist_send"]
    lo, hi = bin_range(b)
    total = float(int(f.get("hist_send_bytes", f.get("bytes_sent", 0))))
    rest = total - sum(c * bin_range(k)[0] for k, c in enumerate(hist) if c)
    if rest <= 0:
        return lo
    width = {k: min(bin_range(k)[1], 2 * bin_range(k)[0]) - bin_range(k)[0]
             for k, c in enumerate(hist) if c}
    room = sum(hist[k] * w for k, w in width.items())
    if room <= 0:
        return lo
    t = rest / room
    if t <= 1 or math.isfinite(hi):
        return lo + min(t, 1.0) * width.get(b, 0.0)
    # the top class: what the finite classes cannot hold (each full at most)
    held = sum(hist[k] * w for k, w in width.items() if k != b)
    return lo + (rest - held) / hist[b]


def threshold(ctx: Context) -> tuple[float, int | None, int | None]:
    """Messages below min(eager, latency crossover) are latency-bound; a crossover the
    model does not show counts as its largest size."""
    eager, lat = ctx.model.eager_crossover(), ctx.model.latency_crossover()
    top = ctx.model.sizes[-1]
    return float(min(eager if eager is not None else top, lat if lat is not None else top)), \
        eager, lat


def find(ctx: Context) -> list[Finding]:
    return find_p2p(ctx) + find_collectives(ctx, threshold(ctx)[0])


def find_p2p(ctx: Context) -> list[Finding]:
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
    # the fixed part: L + g(0), never above the cheapest small message's T(s) (a measured
    # g is not monotone at small sizes)
    fixed = min([model.L + model.gap(0)] + [model.msg(representative(f, b))
                                            for f in senders.values()
                                            for b, c in enumerate(f["hist_send"])
                                            if c and representative(f, b) < limit])
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
                               ("a function's messages of every size class at the same place "
                                "within their class, its bytes adding up"),
                               "the saving is on every rank's critical path"]},
        figures={"messages": total, "small_messages": small, "limit_bytes": limit,
                 "eager_bytes": eager, "latency_crossover_bytes": lat,
                 "fixed_s": fixed, "model_small_s": now_small / ctx.nranks,
                 "model_all_s": now_all / ctx.nranks, "measured_s": measured,
                 "aggregate": AGGREGATE, "bound_s": bound})]


# ---------------------------------------------------------------- small collectives

BLOCKING = ("MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Allgather", "MPI_Alltoall",
            "MPI_Gather", "MPI_Scatter", "MPI_Scan", "MPI_Exscan")
MIN_CALLS = 100    # calls per rank before aggregating them is worth a code change


def call_size(name: str, f: dict) -> float:
    """Bytes per call: the send buffer (Bcast: the buffer at the root and elsewhere)."""
    calls = int(f["calls"])
    if name == "MPI_Bcast":
        return (int(f.get("bytes_sent", 0)) + int(f.get("bytes_recv", 0))) / calls
    return int(f.get("hist_send_bytes", f.get("bytes_sent", 0))) / calls


def find_collectives(ctx: Context, limit: float) -> list[Finding]:
    """Frequent blocking collectives of buffers below the crossovers: each call costs
    mostly its fixed part, so k calls aggregated into one cost about one call.  The
    model gives the ratio, the profile the time (as rule 3 when the algorithm is known):
    after = measured x T(k m) / (k T(m)); the stages of a tree algorithm each cost T of
    the message, so the ratio is the point-to-point one (an assumption, stated)."""
    model = ctx.model
    rows = []
    measured_rows: dict[str, dict[str, Any]] = {}
    unmeasured: dict[str, str] = {}
    base: dict[str, str] = {}  # the row's name -> its function
    classes: dict[str, int] = {}  # a size class's row -> the class
    for name, label, f, m, got, cls in _candidates(ctx):
        if int(f["calls"]) < MIN_CALLS * ctx.nranks or m >= limit or got is None:
            continue
        row = f"{name}, {label}" if label else name
        base[row] = name
        if cls is not None:
            classes[row] = cls
        measured, fastest = got
        per_rank = int(f["calls"]) / ctx.nranks
        ratio = model.msg(AGGREGATE * m) / (AGGREGATE * model.msg(m))
        tree = max(1, (ctx.nranks - 1).bit_length()) * model.msg(m)
        if ctx.measure is not None and name in OPS and tree > 0 \
                and max(measured / tree, tree / measured) > DISAGREE:
            # the model is far off this call: the ratio measured instead (bench coll)
            done = _measured_ratio(ctx, name, f, m, row)
            if done is None:
                continue  # measured: no saving beyond the noise (a note says so)
            if isinstance(done, str):
                unmeasured[row] = done
            else:
                ratio = done["ratio"]
                measured_rows[row] = {**done, "calls_per_rank": per_rank,
                                      "measured_per_call_s": measured}
        if ratio >= 1:  # k m past a step of the model: one call of k buffers costs more
            continue
        rows.append((per_rank * measured * (1 - ratio), row, m, per_rank, measured, fastest,
                     ratio))
    if not rows:
        return []
    rows.sort(reverse=True)
    gain = sum(r[0] for r in rows)
    top = rows[0]
    lg = max(1, (ctx.nranks - 1).bit_length())
    tree = lg * model.msg(top[2])  # a binomial tree's ceil(log2 P) stages
    conf, conf_why = fit_confidence(tree, top[4], f"{top[1]} per call (binomial tree, "
                                                  f"ceil(log2 P) T(m))")
    listed = "; ".join(f"{n}: {pr:g} calls per rank of {fmt_bytes(m)}, {fmt_time(t)} per call "
                       f"(rank {fr})" for _, n, m, pr, t, fr, _ in rows)
    ratio_why = (f"the model gives {AGGREGATE} buffers in one call {top[6]:.3g} of "
                 f"{AGGREGATE} calls' time (T({AGGREGATE} m) / ({AGGREGATE} T(m)) for {top[1]})")
    gain_note = (f"per function: calls per rank x measured per call x (1 - T({AGGREGATE} m)"
                 f" / ({AGGREGATE} T(m)))")
    conf_why += "; the gain scales the measured time by the model's ratio"
    interval = None
    if unmeasured:
        conf = "low"
        conf_why += "; " + "; ".join(f"{n}: the model is more than {DISAGREE:g} x off and "
                                     f"the ratio was {why}" for n, why in unmeasured.items())
    if measured_rows:
        mine = {n: d for n, d in measured_rows.items() if any(r[1] == n for r in rows)}
        ratio_why = ("; ".join(
            f"{n}: the model is more than {DISAGREE:g} x off its time per call, so the "
            f"ratio was measured (mpilens-bench coll, median per call and 95 % interval): "
            f"{fmt_bytes(d['size'])} {fmt_time(d['one'][0])} [{fmt_time(d['one'][1])} .. "
            f"{fmt_time(d['one'][2])}], {fmt_bytes(AGGREGATE * d['size'])} "
            f"{fmt_time(d['k'][0])} [{fmt_time(d['k'][1])} .. {fmt_time(d['k'][2])}]: "
            f"{AGGREGATE} buffers in one call take {d['ratio']:.3g} "
            f"[{d['ratio_lo']:.3g} .. {d['ratio_hi']:.3g}] of {AGGREGATE} calls' time"
            for n, d in mine.items()))
        gain_note = ("measured, not modelled where said (" + ", ".join(mine) + "): "
                     + gain_note.removeprefix("per function: "))
        conf = "low" if unmeasured else "medium"
        conf_why = ("the ratio measured by the benchmark beyond its interval, the job's "
                    "calls assumed to gain alike" + ("; " + conf_why if unmeasured else ""))
        lo = hi = 0.0
        for g, n, _, pr, t, _, q in rows:
            d = mine.get(n)
            lo += pr * t * (1 - d["ratio_hi"]) if d else g
            hi += pr * t * (1 - d["ratio_lo"]) if d else g
        interval = [lo, hi]
    return [Finding(
        rule=RULE, key="latency-collectives", title="Latency-bound small collectives",
        what=(f"frequent collectives of buffers below {fmt_bytes(limit)} (the crossovers): "
              f"{listed}"),
        why=(f"below the crossovers a call costs mostly its fixed part: {ratio_why}; more "
             f"bandwidth (rails) would not shorten them"),
        change=(f"aggregate: one {base[top[1]]} of {AGGREGATE} buffers packed together "
                f"instead of {AGGREGATE} calls (a struct or MPI_Pack), or overlap the calls with "
                f"computation (MPI_I{base[top[1]].removeprefix('MPI_').lower()}) or make them "
                f"persistent ({base[top[1]]}_init, MPI-4): a code change"),
        gain_s=gain, gain_pct=ctx.pct(gain),
        gain_note=gain_note, gain_interval=interval,
        confidence=conf, confidence_why=conf_why,
        basis={"profile": [f"{n}: calls, bytes, time per call of the fastest rank ({t:.6g} s)"
                           for _, n, _, _, t, _, _ in rows],
               "model": [model.describe(), "T(m) = L + g(m)"],
               "assumptions": [f"k = {AGGREGATE} calls aggregated into one",
                               "the calls are spread evenly over the ranks",
                               "a collective's stages cost T of its buffer (tree algorithms)"]},
        figures={"functions": {n: {"size": m, "calls_per_rank": pr, "measured_per_call_s": t,
                                   "ratio": q, "gain_s": g,
                                   **({"function": base[n], "size_class": classes[n]}
                                      if n in classes else {})}
                               for g, n, m, pr, t, _, q in rows},
                 "limit_bytes": limit, "aggregate": AGGREGATE,
                 **({"measured": measured_rows} if measured_rows else {})})]


def _candidates(ctx: Context) -> list[tuple[str, str, dict[str, Any], float,
                                            tuple[float, int] | None, int | None]]:
    """(function, label, record, size per call, (fastest rank's time per call, that rank),
    size class) to judge: each blocking collective on its own, or, when its calls have
    sizes SPREAD apart (rule 3's size_modes: a mean of 8 B and 64 KiB calls is no call's
    size), each size class of its call sites on its own, as rule 3 does.  Such a function
    whose call sites mix the sizes (or a profile without call sites) is not judged:
    engine.warnings says so."""
    from .collective import size_modes, sizes, split_by_size, transfer_per_call

    out: list[tuple[str, str, dict[str, Any], float, tuple[float, int] | None,
                    int | None]] = []
    for name in BLOCKING:
        f = ctx.functions().get(name)
        if not f or int(f.get("calls", 0)) < MIN_CALLS * ctx.nranks:
            continue  # no class of it has more calls
        if not size_modes(f):
            out.append((name, "", f, call_size(name, f), transfer_per_call(ctx, name), None))
            continue
        for g in split_by_size(ctx, name, f, sizes(name, f, ctx.nranks)[1]) or []:
            out.append((name, g["label"], g["function"], g["size"], g["transfer"],
                        g["size_class"]))
    return out


def _measured_ratio(ctx: Context, name: str, f: dict[str, Any], m: float, row: str = ""
                    ) -> dict[str, Any] | str | None:
    """T(k m) / (k T(m)) of the run as it ran, measured by mpilens-bench coll at m (with
    the candidates rule 3 measures there, so one run serves both) and at k m: {ratio,
    ratio_lo, ratio_hi (from the medians' 95 % intervals), size, one, k (median, lo, hi)};
    None when the ratio's interval reaches 1 (no saving beyond the noise: a note); a
    string when nothing could be measured."""
    from ..collectives import FAMILIES, candidates
    from .collective import changes, engine_algorithm, sizes

    assert ctx.measure is not None
    P, cands = ctx.nranks, {BASELINE: {}}
    if name in FAMILIES:
        P = sizes(name, f, ctx.nranks)[1]
        algs = candidates(name, P, ctx.flavour)
        ran = engine_algorithm(ctx, m, P) if name == "MPI_Alltoall" else None
        ran = ran if ran in {a.name for a in algs} else None
        cands = changes(name, algs, ctx.flavour, ran) if algs else cands
    label = next(iter(cands))
    one = ctx.measure(name, m, P, cands)
    if isinstance(one, str):
        return f"not measured: {one}"
    k = ctx.measure(name, AGGREGATE * m, P, {label: cands[label]})
    if isinstance(k, str):
        return f"not measured: {k}"
    a, b = one.get(label), k.get(label)
    if a is None or b is None or a.lo <= 0 or a.median <= 0:
        return "not measured: the benchmark gave no time"
    ratio = b.median / (AGGREGATE * a.median)
    floor = 1 / AGGREGATE  # one call of k buffers cannot cost less than one of one buffer
    hi = b.hi / (AGGREGATE * a.lo)
    if hi < floor:  # below the floor beyond the noise: the measurement failed
        return (f"not measured: the benchmark gave {AGGREGATE} buffers in one call "
                f"{ratio:.3g} of {AGGREGATE} calls' time, below the floor 1/{AGGREGATE} "
                f"(one call of {AGGREGATE} buffers costs at least one of one): a failed "
                f"measurement")
    # below the floor within the noise: held at the floor, as the interval's low end
    ratio, lo = max(ratio, floor), max(b.lo / (AGGREGATE * a.hi), floor)
    if hi >= 1:
        ctx.notes.append(
            f"rule 2, {row or name}: the model is more than {DISAGREE:g} x off its time per call; "
            f"measured ({label}, median per call and 95 % interval) {fmt_bytes(m)} "
            f"{fmt_time(a.median)} [{fmt_time(a.lo)} .. {fmt_time(a.hi)}], "
            f"{fmt_bytes(AGGREGATE * m)} {fmt_time(b.median)} [{fmt_time(b.lo)} .. "
            f"{fmt_time(b.hi)}]: {AGGREGATE} buffers in one call take {ratio:.3g} [{lo:.3g} .. "
            f"{hi:.3g}] of {AGGREGATE} calls' time, not less beyond the noise: no aggregation "
            f"proposed")
        return None
    return {"ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "size": m, "label": label,
            "one": [a.median, a.lo, a.hi], "k": [b.median, b.lo, b.hi]}
