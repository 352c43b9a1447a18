"""The numbers of a report: job summary, function table, message-size histograms.

Everything here is plain data (dicts of numbers and strings) so that the
terminal report, the JSON/CSV output and the HTML report show the same values.
Counts and byte totals are copied from the profile unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UserError
from ..units import fmt_bytes, fmt_pct, fmt_time
from .profile import Profile

DOMINANT_SHARE = 0.90  # call out the fewest size classes that hold this share of messages
# Start-up and shut-down: outside the wall-time window (MPI_Init -> MPI_Finalize) and not
# communication.  Listed in the function table, left out of "time in MPI" and % columns.
OUTSIDE = frozenset({"MPI_Init", "MPI_Init_thread", "MPI_Finalize"})


def _stat(d: dict[str, Any]) -> dict[str, float]:
    return {k: float(d.get(k, 0.0)) for k in ("min", "mean", "max")}


def comm_time_per_rank(prof: Profile) -> np.ndarray | None:
    """Time inside MPI per rank, without MPI_Init/MPI_Finalize (None without rank lines).
    The profile's mpi_s already leaves them out (docs/profile-format.md)."""
    if not prof.ranks:
        return None
    return prof.columns().mpi_s


def mpi_percent_per_rank(prof: Profile) -> np.ndarray | None:
    """% of wall time inside MPI (without MPI_Init/Finalize) for every rank."""
    if not prof.ranks:
        return None
    t = prof.columns()
    out = np.zeros(t.n)
    ok = t.wall_s > 0
    out[ok] = 100.0 * t.mpi_s[ok] / t.wall_s[ok]
    return out


def _profiler_finalize(h: dict[str, Any]) -> float | None:
    fin = h.get("profiler_finalize_s")
    if not isinstance(fin, dict):
        return None
    for key in ("total", "reduce"):
        v = fin.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def summary(prof: Profile) -> dict[str, Any]:
    """Job summary: ranks, hosts, MPI library, wall time, % of wall time in MPI."""
    h = prof.header
    wall, mpi = _stat(h["wall_s"]), _stat(h["mpi_s"])
    pct = mpi_percent_per_rank(prof)
    if pct is not None:
        vals = pct.tolist()
        if prof.partial is not None:  # a rank without a dump has no figures (not 0 %)
            vals = [vals[r] for r in prof.partial["ranks_dumped"]]
        mpi_pct = {"min": min(vals), "mean": sum(vals) / len(vals), "max": max(vals)}
    else:  # no rank lines: estimate from the cross-rank aggregates
        mpi_pct = {k: 100.0 * mpi[k] / wall[k] if wall[k] > 0 else 0.0 for k in mpi}
    caution = sorted(n for n, f in prof.functions.items() if f.get("caution"))
    return {
        "profile": str(prof.path),
        # (a partial profile's dumps may hold null for these: docs/flight-recorder.md)
        "job_id": h.get("job_id") or "",
        "command": h.get("command") or "",
        "created": h.get("created") or "",
        "nranks": prof.nranks,
        "hosts": [x if isinstance(x, str) else "?" for x in h.get("hosts") or []],
        "ranks_per_host": list(h.get("ranks_per_host", [])),
        "mpi_library": h.get("mpi_library") or "unknown",
        "mpi_flavour": h.get("mpi_flavour") or "unknown",
        "wall_s": wall,
        "mpi_s": mpi,
        "mpi_pct": mpi_pct,
        # None: not measured (a partial profile: the dumps do not hold it)
        "overhead_ns": None if h.get("overhead_ns") is None else float(h["overhead_ns"]),
        # the profiler's own work at MPI_Finalize (rank 0) before the write, when the
        # profile has it: "total" (from MPI_Finalize's barrier to the header), else
        # "reduce" (its end-of-run collectives; profiles of before "total")
        "profiler_finalize_s": _profiler_finalize(h),
        "clock": h.get("clock", {}),
        "functions_called": len(prof.functions),
        "caution_functions": caution,
    }


def function_rows(prof: Profile) -> list[dict[str, Any]]:
    """One row per function called, heaviest total time first."""
    total_mpi = sum(float(f.get("time_s", 0.0)) for n, f in prof.functions.items()
                    if n not in OUTSIDE)
    total_wall = float(prof.header["wall_s"]["mean"]) * prof.nranks
    rows = []
    for name, f in prof.functions.items():
        calls = int(f.get("calls", 0))
        t = float(f.get("time_s", 0.0))
        rt = f.get("rank_time_s", {})
        rows.append({
            "function": name,
            "calls": calls,
            "time_s": t,
            "mean_s": t / calls if calls else 0.0,
            "time_min_s": float(f.get("time_min_s", 0.0)),
            "time_max_s": float(f.get("time_max_s", 0.0)),
            "mpi_pct": (None if name in OUTSIDE else
                        100.0 * t / total_mpi if total_mpi > 0 else 0.0),
            "wall_pct": (None if name in OUTSIDE else
                         100.0 * t / total_wall if total_wall > 0 else 0.0),
            "rank_time_min_s": float(rt.get("min", 0.0)),
            "rank_time_mean_s": float(rt.get("mean", t / prof.nranks)),
            "rank_time_max_s": float(rt.get("max", 0.0)),
            "slowest_rank": rt.get("max_rank"),
            "imbalance": (float(rt.get("max", 0.0)) / float(rt["mean"])
                          if rt.get("mean") else 1.0),
            "bytes_sent": int(f.get("bytes_sent", 0)),
            "bytes_recv": int(f.get("bytes_recv", 0)),
            "repro_calls": int(f.get("repro_calls", 0)),
            "caution": bool(f.get("caution", False)),
        })
    rows.sort(key=lambda r: (r["function"] in OUTSIDE, -r["time_s"], r["function"]))
    return rows


def resolve_function(prof: Profile, name: str) -> str:
    """The profile's name for `name` (MPI_Bcast, mpi_bcast, Bcast, BCAST all work)."""
    want = name.strip().lower()
    if not want.startswith("mpi_"):
        want = "mpi_" + want
    for fn in prof.functions:
        if fn.lower() == want:
            return fn
    called = ", ".join(sorted(prof.functions)) or "none"
    raise UserError(f"function '{name}' was not called in this profile "
                    f"(called: {called})")


def histogram(prof: Profile, name: str) -> dict[str, Any]:
    """Message-size histogram of one function, with its dominant size classes."""
    fn = resolve_function(prof, name)
    f = prof.functions[fn]
    labels = prof.hist_labels()
    out: dict[str, Any] = {"function": fn, "labels": labels,
                           "bounds": size_class_bounds(len(labels)), "directions": {}}
    for direction in ("send", "recv"):
        bins = [int(x) for x in f.get(f"hist_{direction}", [0] * len(labels))]
        total = sum(bins)
        if total == 0:
            continue
        out["directions"][direction] = {
            "bins": bins,
            "messages": total,
            "bytes": int(f.get(f"bytes_{'sent' if direction == 'send' else 'recv'}", 0)),
            "dominant": dominant_classes(bins, labels),
        }
    return out


def size_class_bounds(nbins: int) -> list[list[int | None]]:
    """[min, max] bytes of each message-size class (schema/profile.json): class 0 holds
    0 B, class k >= 1 holds [2^(k-1), 2^k - 1]; the last is open (max None)."""
    out: list[list[int | None]] = [[0, 0]]
    out += [[1 << (k - 1), (1 << k) - 1] for k in range(1, nbins)]
    if nbins > 1:
        out[-1][1] = None
    return out


def dominant_classes(bins: list[int], labels: list[str]) -> dict[str, Any]:
    """The fewest size classes (largest first) holding >= 90 % of the messages."""
    total = sum(bins)
    order = sorted(range(len(bins)), key=lambda i: (-bins[i], i))
    chosen: list[int] = []
    acc = 0
    for i in order:
        if bins[i] == 0:
            break
        chosen.append(i)
        acc += bins[i]
        if acc >= DOMINANT_SHARE * total:
            break
    chosen.sort()
    share = 100.0 * acc / total if total else 0.0
    return {"bins": chosen, "labels": [labels[i] for i in chosen], "messages": acc,
            "share_pct": share}


def dominant_sentence(fn: str, direction: str, d: dict[str, Any], total: int) -> str:
    """'92.3 % of MPI_Bcast messages sent (151823 of 164000) are 8-15 B.'"""
    what = " or ".join(f"{lab} B" for lab in d["labels"])
    verb = "sent" if direction == "send" else "received"
    return (f"{d['share_pct']:.1f} % of {fn} messages {verb} ({d['messages']} of {total}) "
            f"are {what}")


def alltoall_rows(prof: Profile) -> list[dict[str, Any]]:
    """The adaptive Alltoall's decisions (profile header `alltoall`, docs/alltoall.md):
    one row per (communicator size, ranks per node, block size, algorithm, source),
    with the share of calls spent learning and the runner-up among the candidates
    (its learned time over the chosen one's: how much the choice mattered)."""
    rows = []
    for rec in prof.header.get("alltoall", []):
        means = {k: float(v) for k, v in rec.get("learned_mean_s", {}).items() if v > 0}
        alg = rec.get("algorithm")
        runner, ratio = None, None
        if alg in means and len(means) > 1:
            runner = min((v, k) for k, v in means.items() if k != alg)[1]
            ratio = means[runner] / means[alg]
        calls = int(rec["calls"])
        rows.append({
            "comm_size": int(rec["comm_size"]),
            "ranks_per_node": int(rec["ranks_per_node"]),
            "bytes": int(rec["bytes"]),
            "algorithm": alg,
            "source": rec["source"],
            "communicators": int(rec["communicators"]),
            "calls": calls,
            "learning_calls": int(rec["learning_calls"]),
            "learning_pct": 100.0 * int(rec["learning_calls"]) / calls if calls else 0.0,
            "carried_calls": int(rec.get("carried_calls", 0)),
            "learning_s": float(rec["learning_s"]),
            "grouping_s": float(rec["grouping_s"]),
            "relearns": int(rec["relearns"]),
            "time_per_call_s": float(rec["time_per_call_s"]) or None,
            "candidates": list(rec.get("candidates", [])),
            "runner_up": runner,
            "runner_up_ratio": ratio,
            # what learning cost beyond running the choice: the learning calls' time
            # minus what the chosen algorithm's learned mean gives for as many calls,
            # plus Grouping (None without a learned mean of the choice)
            "learning_extra_s": (float(rec["learning_s"]) + float(rec["grouping_s"])
                                 - int(rec["learning_calls"]) * means[alg]
                                 if alg in means else None),
        })
    rows.sort(key=lambda r: (r["comm_size"], r["ranks_per_node"], r["bytes"], r["source"],
                             r["algorithm"] or ""))
    return rows


def coll_rows(prof: Profile) -> list[dict[str, Any]]:
    """The node-aware collectives' choices (profile header `coll`, docs/collectives.md):
    one row per (collective, communicator size, size class, choice, source, candidate
    compared), as the profile has them."""
    rows = []
    for coll, sec in sorted(prof.header.get("coll", {}).items()):
        if not isinstance(sec, dict):
            continue
        for rec in sec.get("choices", []):
            rows.append({
                "collective": coll,
                "comm_size": int(rec["comm_size"]),
                "bytes": int(rec["bytes"]),
                "choice": rec.get("choice"),
                "source": rec["source"],
                "communicators": int(rec["communicators"]),
                "calls": int(rec["calls"]),
                "learning_calls": int(rec["learning_calls"]),
                "lost_calls": int(rec["lost_calls"]),
                "lost_s": float(rec["lost_s"]),
                "against": rec.get("against"),
                "ratio": rec.get("ratio"),
                "ratio_lo": rec.get("ratio_lo"),
                "ratio_hi": rec.get("ratio_hi"),
            })
    return rows


COLL_HEAD = ["ranks", "size", "choice", "source", "comms", "calls", "vs", "ratio", "range",
             "lost"]


def coll_table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """coll_rows (of one collective) as text cells under COLL_HEAD: 'vs' is the candidate
    compared with the MPI's own call, 'ratio' its time over the MPI's own (median over the
    race's rounds) and 'range' the lowest and highest round; 'lost' the race calls of the
    candidates not chosen and their time."""
    out = []
    for r in rows:
        ratio = rng = "-"
        if r["against"] is not None and r["ratio"] is not None:
            ratio = f"{r['ratio']:.2f}"
            rng = f"{r['ratio_lo']:.2f}-{r['ratio_hi']:.2f}"
        lost = f"{r['lost_calls']:,} {fmt_time(r['lost_s'])}" if r["lost_calls"] else "-"
        out.append([str(r["comm_size"]), fmt_bytes(r["bytes"]), r["choice"] or "(racing)",
                    r["source"], f"{r['communicators']:,}", f"{r['calls']:,}",
                    r["against"] or "-", ratio, rng, lost])
    return out


ALLTOALL_HEAD = ["ranks", "per node", "block", "algorithm", "source", "comms", "calls",
                 "learning calls", "learning", "grouping", "time/call", "runner-up"]


def alltoall_table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """alltoall_rows as text cells under ALLTOALL_HEAD (terminal and HTML report)."""
    out = []
    for r in rows:
        runner = ("-" if r["runner_up"] is None
                  else f"{r['runner_up']} x{r['runner_up_ratio']:.2f}")
        out.append([str(r["comm_size"]), str(r["ranks_per_node"]), fmt_bytes(r["bytes"]),
                    r["algorithm"] or "(learning)", r["source"], f"{r['communicators']:,}",
                    f"{r['calls']:,}",
                    f"{r['learning_calls']:,} ({fmt_pct(r['learning_pct'])})"
                    + (f" +{r['carried_calls']:,} carried" if r["carried_calls"] else ""),
                    fmt_time(r["learning_s"]), fmt_time(r["grouping_s"]),
                    "-" if r["time_per_call_s"] is None else fmt_time(r["time_per_call_s"]),
                    runner])
    return out


def alltoall_sentence(rows: list[dict[str, Any]]) -> str:
    """What learning cost over the whole job, in one line."""
    calls = sum(r["calls"] for r in rows)
    lc = sum(r["learning_calls"] for r in rows)
    cost = sum(r["learning_s"] + r["grouping_s"] for r in rows)
    reused = sum(r["calls"] for r in rows if r["source"] in ("reused", "tuning-file"))
    pct = 100.0 * lc / calls if calls else 0.0
    extra = [r["learning_extra_s"] for r in rows if r.get("learning_extra_s") is not None]
    beyond = (f" ({fmt_time(sum(extra))} more than the chosen algorithms would have taken "
              f"for those calls)" if extra and lc else "")
    return (f"Adaptive MPI_Alltoall: {lc:,} of {calls:,} calls ({pct:.1f} %) were learning, "
            f"{fmt_time(cost)} per rank in Grouping and Learning{beyond}; {reused:,} calls ran "
            f"a choice reused from this run, an earlier one or the tuning file")
