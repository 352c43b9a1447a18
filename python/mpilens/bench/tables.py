"""Terminal tables (rich) for mpilens-bench JSON documents, one function per family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from ..units import fmt_bytes, fmt_time, num

Doc = dict[str, Any]


def _t(v: float | None) -> str:
    return "-" if v is None else fmt_time(v)


def _bw(v: float | None) -> str:
    """A bandwidth in the largest unit it reaches, plain notation (units.num)."""
    if v is None:
        return "-"
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0)):
        if abs(v) >= scale or unit == "B/s":
            return f"{num(v / scale)} {unit}"
    return ""  # unreachable


def _med(stats: dict[str, Any] | None) -> float | None:
    return None if not stats else stats.get("median")


def _flag(stats: dict[str, Any] | None) -> str:
    return f" !{stats['outliers']}" if stats and stats.get("outliers") else ""


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.1f} %"


def p2p(doc: Doc) -> list[Table]:
    """One pair, or (--pairs intra,inter) each pair and where one class wins, or
    (--rails) the bandwidth over each number of rails and its gain."""
    if "rails" in doc:
        return [_p2p_rails(doc)]
    if "pairs" not in doc:
        return _p2p_pair(doc, doc["results"], doc.get("analysis", {}), doc["options"]["ranks"], "")
    tables = []
    for pair in doc["pairs"]:
        tables += _p2p_pair(doc, pair["results"], pair.get("analysis", {}), pair["ranks"],
                            f"{pair['class']}-node pair, ")
    cmp = doc.get("classes")
    if cmp:
        t = Table(title="inter-node / intra-node pair, by size (< 1: inter-node is faster "
                        "for latency; > 1: for bandwidth)", min_width=70)
        for c in ("size", "latency inter/intra", "bw inter/intra"):
            t.add_column(c, justify="right")
        for r in cmp["comparison"]:
            lr, br = r.get("latency_inter_over_intra"), r.get("bw_inter_over_intra")
            t.add_row(fmt_bytes(r["size"]), "-" if lr is None else f"{lr:.3g}",
                      "-" if br is None else f"{br:.3g}")
        tables.append(t)
        c = Table(title=f"crossover sizes: {len(cmp['crossover_sizes'])}", min_width=70)
        for col in ("size", "evidence", "faster before", "faster from here"):
            c.add_column(col, justify="right")
        for x in cmp["crossover_sizes"]:
            c.add_row(fmt_bytes(x["size"]), x["evidence"], x["from"], x["to"])
        tables.append(c)
    return tables


def _p2p_rails(doc: Doc) -> Table:
    counts = [str(r["rails"]) for r in doc["rails"]]
    t = Table(title="p2p bandwidth over rails (median; gain over "
                    f"{counts[0]} rail{'s' if counts[0] != '1' else ''})", min_width=70)
    t.add_column("size", justify="right")
    for k in counts:
        t.add_column(f"{k} rail{'s' if k != '1' else ''}", justify="right")
        if k != counts[0]:
            t.add_column("gain", justify="right")
    for row in doc["gain"]:
        cells = [fmt_bytes(row["size"])]
        for k in counts:
            cells.append(_bw(row["bw_Bps"].get(k)))
            if k != counts[0]:
                g = row["gain"].get(k)
                cells.append("-" if g is None else f"{g:.2f}x")
        t.add_row(*cells)
    return t


def _p2p_pair(doc: Doc, res: list[Doc], analysis: Doc, ranks: list[int], label: str) -> list[Table]:
    osu = doc["options"]["reference"] == "osu"
    a, b = ranks
    t = Table(title=f"p2p {label}ranks {a}<->{b}: medians (!n = n outlier samples)",
              min_width=70 if label else None)
    cols = ["size", "latency", "pingping", "bw", "bibw"]
    if osu:
        cols += ["OSU lat", "Δ", "OSU bw", "Δ"]
    for c in cols:
        t.add_column(c, justify="right")
    for r in res:
        row = [fmt_bytes(r["size"]), _t(_med(r.get("latency_s"))) + _flag(r.get("latency_s")),
               _t(_med(r.get("pingping_s"))), _bw(_med(r.get("bw_Bps"))) + _flag(r.get("bw_Bps")),
               _bw(_med(r.get("bibw_Bps")))]
        if osu:
            ol, ob = r.get("osu_latency") or {}, r.get("osu_bw") or {}
            row += [_t(ol.get("latency_s")), _pct(ol.get("ours_vs_osu_pct")),
                    _bw(ob.get("bw_Bps")), _pct(ob.get("ours_vs_osu_pct"))]
        t.add_row(*row)
    tables = [t]
    cross = analysis.get("crossovers", [])
    if cross:
        c = Table(title="protocol crossovers seen")
        for col in ("size", "evidence", "before", "after"):
            c.add_column(col, justify="right")
        for x in cross:
            f = _bw if x["evidence"] == "bandwidth_drop" else _t
            c.add_row(fmt_bytes(x["size"]), x["evidence"], f(x["before"]), f(x["after"]))
        tables.append(c)
    return tables


def coll(doc: Doc) -> list[Table]:
    t = Table(title="collectives: slowest rank per iteration after a synchronised start")
    for c in ("op", "ranks", "size", "median", "95 % range", "min", "max", "rank means", "late"):
        t.add_column(c, justify="right")
    for r in doc["results"]:
        s = r["time_s"]
        means = r["per_rank_mean_s"]
        t.add_row(r["op"], str(r["nranks"]), fmt_bytes(r["size"]), _t(s["median"]),
                  f"{_t(s['p2_5'])}..{_t(s['p97_5'])}", _t(s["min"]), _t(s["max"]),
                  f"{_t(min(means))}..{_t(max(means))}",
                  str(r["late_repeats"] + r["late_accepted"]))
    return [t]


def halo(doc: Doc) -> list[Table]:
    o = doc["options"]
    variants = o["variants"]
    t = Table(title=f"halo {o['dimension']}D, {o['npartner']} partners: slowest process "
                    f"per exchange (speed-up vs p2p)")
    t.add_column("size", justify="right")
    for v in variants:
        t.add_column(v, justify="right")
    for r in doc["results"]:
        row = [fmt_bytes(r["size"])]
        for v in variants:
            cell = _t(r[v]["time_s"]["median"])
            sp = r.get("speedup_vs_p2p", {}).get(v)
            row.append(f"{cell} ({sp:.2f}x)" if sp else cell)
        t.add_row(*row)
    return [t]


def logp(doc: Doc) -> list[Table]:
    """The model, or (--pairs intra,inter) the model of each link class."""
    classes = doc["model"].get("classes")
    if not classes:
        return [_logp_model(doc["model"], "")]
    return [_logp_model(m, f"{name}-node pair ") for name, m in classes.items()]


def _logp_model(m: Doc, label: str) -> Table:
    bounds = {e["size"] for e in m.get("not_measured", []) if e.get("param") == "g_s"}
    t = Table(title=f"P-LogP {label}L = {fmt_time(m['L_s'])}"
                    + (" (not measured: RTT(0)/2)" if m["L_clamped"] else "")
                    + ("; * g not measured (train below the clock resolution): os used"
                       if bounds else ""))
    for c in ("size", "RTT", "os", "or", "g"):
        t.add_column(c, justify="right")
    for i, s in enumerate(m["sizes"]):
        t.add_row(fmt_bytes(s), _t(m["rtt_s"][i]), _t(m["os_s"][i]), _t(m["or_s"][i]),
                  _t(m["g_s"][i]) + (" *" if s in bounds else ""))
    return t


def io(doc: Doc) -> list[Table]:
    t = Table(title=f"MPI-IO in {doc['options']['dir']} (slowest rank, medians)")
    for c in ("pattern", "bytes", "write", "write+sync", "bw", "bw with sync", "verified"):
        t.add_column(c, justify="right")
    for r in doc["results"]:
        t.add_row(r["pattern"], fmt_bytes(r["bytes_total"]), _t(r["write_s"]["median"]),
                  _t(r["write_sync_s"]["median"]), _bw(r["bw_write_Bps"]),
                  _bw(r["bw_sync_Bps"]), "yes" if r["verified"] else "NO")
    return [t]


def _memory_one(res: Doc) -> list[Table]:
    t = Table(title=f"memory added by MPI, {res['nranks']} ranks (KiB)")
    for c in ("rank", "host", "after MPI_Init", "after contact", "total", "VmHWM"):
        t.add_column(c, justify="right")
    for r in res["per_rank"]:
        t.add_row(str(r["rank"]), r["host"], str(r["mpi_init_kib"]), str(r["mpi_contact_kib"]),
                  str(r["mpi_total_kib"]), str(r["hwm_kib"]))
    n = Table(title="per node (KiB)")
    for c in ("host", "ranks", "after MPI_Init", "after contact", "total"):
        n.add_column(c, justify="right")
    for r in res["per_node"]:
        n.add_row(r["host"], str(r["ranks"]), str(r["mpi_init_kib"]), str(r["mpi_contact_kib"]),
                  str(r["mpi_total_kib"]))
    return [t, n]


def memory(doc: Doc) -> list[Table]:
    if "series" not in doc:
        return _memory_one(doc["results"])
    t = Table(title="memory added by MPI per rank vs job size (KiB)")
    for c in ("ranks", "init mean", "contact mean", "total mean", "total max"):
        t.add_column(c, justify="right")
    for d in doc["series"]:
        s = d["results"]["summary"]
        t.add_row(str(d["results"]["nranks"]), f"{s['mpi_init_kib_mean']:.0f}",
                  f"{s['mpi_contact_kib_mean']:.0f}", f"{s['mpi_total_kib_mean']:.0f}",
                  f"{s['mpi_total_kib_max']:.0f}")
    return [t]


def overhead(doc: Doc) -> list[Table]:
    r = doc["results"]
    prof = r["profiler"]
    t = Table(title="profiler overhead (interleaved blocks; "
                    + ("profiler loaded" if prof["loaded"] else "profiler NOT loaded") + ")")
    for c in ("loop", "PMPI ns", "MPI ns", "added ns (median of pairs)"):
        t.add_column(c, justify="right")
    for key, label in (("comm_rank", "Comm_rank per call"),
                       ("pingpong_8B", "8 B ping-pong per round trip")):
        x = r.get(key)
        if x:
            t.add_row(label, f"{x['pmpi_ns']['median']:.1f}", f"{x['mpi_ns']['median']:.1f}",
                      f"{x['added_ns_median']:.1f}")
    m = r["memory"]
    t.caption = (f"VmRSS {m['rss_kib_after_1e3']} KiB after 10^3 calls, "
                 f"{m['rss_kib_after_rss_calls']} KiB after {doc['options']['rss_calls']} calls"
                 + (f"; records {m['record_bytes_after_rss_calls']} B"
                    if "record_bytes_after_rss_calls" in m else ""))
    return [t]


TABLES: dict[str, Callable[[Doc], list[Table]]] = {
    "p2p": p2p, "coll": coll, "halo": halo, "logp": logp, "io": io, "memory": memory,
    "overhead": overhead,
}


def show(doc: Doc, console: Console | None = None) -> None:
    console = console or Console()
    for t in TABLES[doc["family"]](doc):
        console.print(t)
    if doc.get("errors"):
        console.print(f"[red]{doc['errors']} data validation error(s): results not trustworthy")
