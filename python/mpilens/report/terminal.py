"""The one-page terminal report (rich tables and bars)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..units import fmt_bytes, fmt_pct, fmt_time, fmt_times
from . import (
    analysis,
    callsites,
    commpattern,
    comms,
    headercheck,
    layout,
    nodes,
    partial,
    ranks,
    regions,
    spread_text,
    timeline,
    waitsfor,
)
from .layout import Col, fit_table
from .profile import Profile

BAR_WIDTH = 40


def _stat3(d: dict[str, float], fmt: Any) -> str:
    return f"{fmt(d['min'])} / {fmt(d['mean'])} / {fmt(d['max'])}"


def summary_panel(s: dict[str, Any]) -> Panel:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    hosts = s["hosts"]
    host_txt = f"{len(hosts)} ({', '.join(hosts[:4])}{', ...' if len(hosts) > 4 else ''})"
    t.add_row("job", Text(f"{s['job_id']}  {s['command']}".strip()))
    t.add_row("ranks / hosts", Text(f"{s['nranks']} / {host_txt}"))
    t.add_row("MPI library", Text(s["mpi_library"]))
    t.add_row("wall time", _stat3(s["wall_s"], fmt_time) + "   (min / mean / max over ranks)")
    t.add_row("time in MPI", _stat3(s["mpi_pct"], fmt_pct)
              + " of wall time (without MPI_Init/Finalize)")
    nc = len(s["caution_functions"])
    if s["overhead_ns"] is None:
        t.add_row("profiler overhead", "not in a partial profile (measured at MPI_Init, "
                  "written at MPI_Finalize)")
    else:
        t.add_row("profiler overhead", f"{s['overhead_ns']:.1f} ns per call; "
                  f"{nc} function{'s' if nc != 1 else ''} marked caution"
                  + (f" ({', '.join(s['caution_functions'])})" if nc else ""))
    if s.get("profiler_finalize_s") is not None:
        t.add_row("profiler finalize", f"{fmt_time(s['profiler_finalize_s'])} in its own "
                  "work at MPI_Finalize (rank 0; before the write)")
    return Panel(t, title="mpilens report", subtitle=escape(s["profile"]), expand=False)


# The function table's columns, by priority (layout.fit_table: 0 never left out).
FUNCTION_COLS = [
    Col("function", 0, "left"), Col("calls", 1), Col("total", 0), Col("mean", 3),
    Col("call min/max", 7), Col("% MPI", 0), Col("% wall", 2), Col("rank min/mean/max", 6),
    Col("slowest", 5), Col("bytes", 4), Col("", 1, "left"),
]


def functions_table(rows: list[dict[str, Any]], top: int, width: int | None = None) -> Table:
    cells = []
    for r in rows[:top]:
        caution = Text("caution", style="bold yellow") if r["caution"] else Text("")
        cells.append([
            r["function"], f"{r['calls']:,}", fmt_time(r["time_s"]), fmt_time(r["mean_s"]),
            fmt_times([r["time_min_s"], r["time_max_s"]]),
            fmt_pct(r["mpi_pct"]), fmt_pct(r["wall_pct"]),
            fmt_times([r["rank_time_min_s"], r["rank_time_mean_s"], r["rank_time_max_s"]]),
            "" if r["slowest_rank"] is None else f"rank {r['slowest_rank']}",
            fmt_bytes(r["bytes_sent"] + r["bytes_recv"]), caution])
    return fit_table(f"Top {min(top, len(rows))} of {len(rows)} MPI functions by total time",
                     FUNCTION_COLS, cells, width)


def histogram_table(hist: dict[str, Any], width: int | None = None) -> list[Any]:
    """Bars per size class (non-empty classes only), dominant classes highlighted; the
    bars are as long as width leaves room for (BAR_WIDTH at most)."""
    bar_width = BAR_WIDTH if width is None else max(10, min(BAR_WIDTH, width - 48))
    out: list[Any] = []
    fn, labels = hist["function"], hist["labels"]
    if not hist["directions"]:
        out.append(Text(f"{fn}: no messages with a size recorded"))
    for direction, d in hist["directions"].items():
        dom = set(d["dominant"]["bins"])
        peak = max(d["bins"])
        t = Table(title=f"{fn} message sizes ({direction}): {d['messages']:,} messages, "
                        f"{fmt_bytes(d['bytes'])}", title_justify="left")
        t.add_column("size class (bytes)", justify="right")
        t.add_column("messages", justify="right")
        t.add_column("%", justify="right")
        t.add_column("", no_wrap=True, overflow="crop")
        for i, c in enumerate(d["bins"]):
            if c == 0:
                continue
            n = max(1, round(bar_width * c / peak))
            style = "bold green" if i in dom else "blue"
            t.add_row(Text(labels[i]), f"{c:,}", fmt_pct(100.0 * c / d["messages"]),
                      Text("#" * n, style=style))
        out.append(t)
        out.append(Text(">> " + analysis.dominant_sentence(fn, direction, d["dominant"],
                                                           d["messages"]),
                        style="bold"))
    return out


def pattern_block(cp: dict[str, Any]) -> list[Any]:
    out: list[Any] = [Text.assemble(("Point-to-point pattern: ", "bold"),
                                    (cp["pattern"], "bold cyan"), f"  ({cp['reason']})")]
    if cp["topologies"]:
        more = cp["topologies_dropped"]
        out.append(Text("Topologies the application created: "
                        + "; ".join(commpattern.topology_line(t) for t in cp["topologies"])
                        + (f"; {more} more not recorded" if more else "")))
    if cp["heaviest_pairs"]:
        t = Table(title="Heaviest peer pairs (point-to-point, both ways)",
                  title_justify="left", min_width=50)
        t.add_column("ranks")
        t.add_column("bytes", justify="right")
        for p in cp["heaviest_pairs"]:
            t.add_row(f"{p['a']} <-> {p['b']}", fmt_bytes(p["bytes"]))
        out.append(t)
    st = cp.get("self_traffic", {})
    if st.get("bytes"):
        out.append(Text(commpattern.self_traffic_sentence(st)))
    cb = cp["collective_bytes"]
    out.append(Text(f"Collective bytes sent: all-to-all kind {fmt_bytes(cb['all-to-all'])}, "
                    f"rooted (Bcast, Reduce, Gather, Scatter) {fmt_bytes(cb['rooted'])}"))
    return out


# Priorities of analysis.ALLTOALL_HEAD's columns (layout.fit_table: 0 never left out).
ALLTOALL_PRIORITY = {"ranks": 0, "per node": 4, "block": 0, "algorithm": 0, "source": 2,
                     "comms": 5, "calls": 1, "learning calls": 5, "learning": 3,
                     "grouping": 4, "time/call": 1, "runner-up": 2}


def alltoall_block(rows: list[dict[str, Any]], width: int | None = None) -> list[Any]:
    cols = [Col(c, ALLTOALL_PRIORITY.get(c, 3), "left" if i in (3, 4, 11) else "right",
                wrap=c == "runner-up")
            for i, c in enumerate(analysis.ALLTOALL_HEAD)]
    t = fit_table("Adaptive MPI_Alltoall: algorithm per communicator and block size "
                  "(runner-up: next best candidate, its time / the chosen one's)", cols,
                  [[Text(c) for c in cells] for cells in analysis.alltoall_table(rows)], width)
    return [t, Text(">> " + analysis.alltoall_sentence(rows), style="bold")]


# Priorities of analysis.COLL_HEAD's columns (layout.fit_table: 0 never left out).
COLL_PRIORITY = {"ranks": 0, "size": 0, "choice": 0, "source": 1, "comms": 5, "calls": 3,
                 "vs": 2, "ratio": 1, "range": 1, "lost": 4}


def coll_block(rows: list[dict[str, Any]], width: int | None = None) -> list[Any]:
    """One table per collective of analysis.coll_rows."""
    cols = [Col(c, COLL_PRIORITY.get(c, 3),
                "left" if c in ("choice", "source", "vs") else "right", wrap=c == "source")
            for c in analysis.COLL_HEAD]
    out = []
    for coll in sorted({r["collective"] for r in rows}):
        mine = [r for r in rows if r["collective"] == coll]
        out.append(fit_table(
            f"MPI_{coll.capitalize()} (node-aware collectives): choice per communicator size "
            "and size class (ratio: the time of vs / mpi's, median and range of the race's "
            "rounds)", cols, [[Text(c) for c in cells] for cells in analysis.coll_table(mine)],
            width))
    return out


def ranks_table(rows: list[dict[str, Any]] | None, width: int | None = None) -> Table | Text:
    """The per-rank table (report --ranks)."""
    if rows is None:
        return Text("Per rank: the profile has no rank lines (written with MPILENS_DETAIL=off)")
    cols = [Col("rank", 0), Col("host", 4, "left", wrap=True), Col("node", 6), Col("wall", 2),
            Col("in MPI", 0), Col("% wall", 0), Col("calls", 1), Col("bytes sent", 3),
            Col("bytes recv", 3), Col("p2p intra", 6), Col("p2p inter", 6),
            Col("top function (% of the rank's MPI time)", 5, "left", wrap=True)]
    cells = []
    for r in rows:
        top = ("-" if r["top_function"] is None else
               f"{r['top_function']} {fmt_time(r['top_function_s'])} "
               f"({fmt_pct(r['top_function_pct'])})")
        cells.append([str(r["rank"]), Text(r["host"]),
                      "-" if r["node"] is None else str(r["node"]), fmt_time(r["wall_s"]),
                      fmt_time(r["mpi_s"]), fmt_pct(r["mpi_pct"]), f"{r['calls']:,}",
                      fmt_bytes(r["bytes_sent"]), fmt_bytes(r["bytes_recv"]),
                      fmt_bytes(r["p2p_intra_bytes"]), fmt_bytes(r["p2p_inter_bytes"]), top])
    return fit_table("Per rank (time in MPI and calls without MPI_Init/Finalize)", cols, cells,
                     width)


def nodes_block(view: dict[str, Any] | None) -> list[Any]:
    """Point-to-point traffic within and across nodes, heaviest node pairs, collectives' span."""
    if view is None:
        return []
    out: list[Any] = [Text.assemble(("Nodes: ", "bold"), nodes.cross_sentence(view))]
    if view["count"] > 1 and view["functions"]:
        t = Table(title="Point-to-point sent, within and across nodes", title_justify="left")
        t.add_column("function")
        for col in ("msgs intra", "bytes intra", "msgs inter", "bytes inter"):
            t.add_column(col, justify="right", no_wrap=True)
        for f in view["functions"]:
            t.add_row(f["function"], f"{f['intra_msgs']:,}", fmt_bytes(f["intra_bytes"]),
                      f"{f['inter_msgs']:,}", fmt_bytes(f["inter_bytes"]))
        out.append(t)
    if view["heaviest_pairs"]:
        t = Table(title="Heaviest node pairs (point-to-point, both ways)", title_justify="left",
                  min_width=50)
        t.add_column("nodes")
        t.add_column("messages", justify="right")
        t.add_column("bytes", justify="right")
        for p in view["heaviest_pairs"]:
            t.add_row(Text(f"{p['a']} <-> {p['b']}"), f"{p['msgs']:,}", fmt_bytes(p["bytes"]))
        out.append(t)
    if view["count"] > 1:
        out.append(Text(nodes.collectives_sentence(view)))
    return out


def partial_block(prof: Profile, w: dict[str, Any]) -> list[Any]:
    """A partial profile: what the dumps are, who waits for whom, the verdict."""
    part = prof.partial or {}
    missing = part.get("missing", [])
    out: list[Any] = [Text.assemble(
        ("PARTIAL PROFILE", "bold red"),
        f": the job did not reach MPI_Finalize; dumps of {len(part.get('ranks_dumped', []))} "
        f"of {prof.nranks} ranks" + (f" (none from {waitsfor.ranges(missing)})" if missing else "")
        + ". The tables count the calls each rank had completed at its dump.")]
    t = Table(title="Who waits for whom (each rank's last dump)", title_justify="left")
    for col in ("rank", "dump", "inside", "for", "waits for"):
        t.add_column(col, no_wrap=col != "inside")
    for r in w["ranks"]:
        state = {"no_dump": Text("no dump", style="yellow"),
                 "stopped": Text("stopped (resumed to end)" if r["reason"] else "stopped",
                                 style="yellow"),
                 "not_in_mpi": Text("not in MPI", style="yellow")}.get(r["state"])
        t.add_row(str(r["rank"]), Text(partial.dump_label(r["reason"], r["dump"])),
                  state or Text((r["call"] or "-") + (f" (+{r['threads_in_mpi'] - 1} thread(s))"
                                             if r["threads_in_mpi"] > 1 else "")),
                  "" if r["since_s"] is None else fmt_time(r["since_s"]),
                  waitsfor.ranges(r["waits_for"]) + (" ..." if r.get("waits_for_more") else ""))
    out.append(t)
    for line in part.get("skipped", []):
        out.append(Text(f"Left out: {line}", style="yellow"))
    for i, f in enumerate(w["findings"]):
        out.append(Text(("Verdict: " if i == 0 else "Also: ") + f["text"],
                        style="bold" if i == 0 else ""))
    return out


def callsites_table(rows: list[dict[str, Any]], top: int, drop: dict[str, Any],
                    width: int | None = None) -> list[Any]:
    """The top call sites (report --callsite N shows one in detail)."""
    cols = [Col("#", 0), Col("function", 0, "left"), Col("call site", 0, "left", wrap=True),
            Col("calls", 2), Col("total", 0), Col("% sites", 1), Col("ranks", 4),
            Col("bytes", 3)]
    cells = [[str(r["id"]), r["function"], Text(r["location"]), f"{r['calls']:,}",
              fmt_time(r["time_s"]), fmt_pct(r["sites_pct"]), str(r["nranks"]),
              fmt_bytes(r["bytes_sent"] + r["bytes_recv"])] for r in rows[:top]]
    t = fit_table(f"Top {min(top, len(rows))} of {len(rows)} call sites by total time "
                  "(innermost frame first)", cols, cells, width)
    out: list[Any] = [t]
    if drop["calls"]:
        out.append(Text(f"{drop['calls']:,} calls came from sites beyond MPILENS_CALLSITE_SLOTS "
                        f"({fmt_time(drop['time_s'])}, "
                        f"{fmt_bytes(drop['bytes_sent'] + drop['bytes_recv'])}): not in the table"))
    return out


def callsite_block(r: dict[str, Any], labels: list[str]) -> list[Any]:
    """One call site in detail (report --callsite N)."""
    out: list[Any] = [Text(f"Call site {r['id']}: {r['function']}, {r['calls']:,} calls, "
                           f"{fmt_time(r['time_s'])}, {fmt_bytes(r['bytes_sent'])} sent, "
                           f"{fmt_bytes(r['bytes_recv'])} received", style="bold")]
    for i, f in enumerate(r["frames"]):
        out.append(Text(f"  {'at' if i == 0 else 'from'} {callsites.location(f)}   "
                        f"[{f['module']} +{f['offset']:#x}]"))
    t = Table(title="per rank", title_justify="left")
    t.add_column("rank", justify="right")
    t.add_column("calls", justify="right")
    t.add_column("time", justify="right")
    for pr in r["per_rank"]:
        t.add_row(str(pr["rank"]), f"{pr['calls']:,}", fmt_time(pr["time_s"]))
    out.append(t)
    sizes = [f"{labels[i]}: {c:,}" for i, c in enumerate(r["hist"]) if c and i < len(labels)]
    if sizes:
        out.append(Text("calls by size class of their bytes (B): " + ", ".join(sizes)))
    return out


def regions_table(rows: list[dict[str, Any]], drop: dict[str, int],
                  width: int | None = None) -> list[Any]:
    cols = [Col("region", 0, "left", wrap=True), Col("inside", 3, "left", wrap=True),
            Col("entries", 4), Col("wall/rank", 2), Col("MPI calls", 1), Col("MPI time", 0),
            Col("% of region", 0), Col("bytes", 5)]
    cells = []
    for r in rows:
        wall = r["wall_s"]
        cells.append([Text(r["name"]), Text(r["parent"] or "-"), f"{r['entries']:,}",
                      fmt_time(r["wall_mean_s"]), f"{r['calls']:,}", fmt_time(r["time_s"]),
                      fmt_pct(100.0 * r["time_s"] / wall) if wall > 0 else "-",
                      fmt_bytes(r["bytes_sent"] + r["bytes_recv"])])
    t = fit_table("Regions (MPI_Pcontrol labels): a call counts in its innermost region; "
                  "wall time includes nested regions", cols, cells, width)
    out: list[Any] = [t]
    if drop["labels"] or drop["calls"] or drop["unmatched"]:
        out.append(Text(f"{drop['labels']:,} region openings beyond MPILENS_REGIONS (in \"(other)\"), "
                        f"{drop['calls']:,} calls not recorded per region, "
                        f"{drop['unmatched']:,} unmatched region ends"))
    return out


def timeline_block(tl: dict[str, Any], width: int | None = None) -> list[Any]:
    """One sparkline per class: MPI time per bin, summed over ranks (scaled per class)."""
    cols = [Col("class", 0, "left"), Col("", 0, "left"), Col("calls", 2),
            Col("time", 1), Col("bytes", 3)]
    cells = [[c["class"], Text(timeline.sparkline(c["time_s"]), style="cyan"),
              f"{sum(c['calls']):,}", fmt_time(sum(c["time_s"])), fmt_bytes(sum(c["bytes"]))]
             for c in tl["classes"] if sum(c["calls"])]
    return [fit_table(f"Time line: MPI time per class in {tl['nbins']} bins of "
                      f"{fmt_time(tl['bin_s'])} from MPI_Init (summed over ranks; each line "
                      "scaled to its own peak)", cols, cells, width)]


def comms_table(rows: list[dict[str, Any]], top: int, dropped: int,
                width: int | None = None) -> list[Any]:
    """The heaviest communicators (records of all ranks grouped by description)."""
    cols = [Col("communicator", 0, "left", wrap=True), Col("records", 3), Col("calls", 2),
            Col("time", 0), Col("bytes", 1)]
    cells = [[Text(r["communicator"]), str(r["records"]), f"{r['calls']:,}",
              fmt_time(r["time_s"]), fmt_bytes(r["bytes_sent"] + r["bytes_recv"])]
             for r in rows[:top]]
    t = fit_table(f"Heaviest {min(top, len(rows))} of {len(rows)} communicators by MPI time "
                  "(how each was made, its size, its name; records: one per rank in it)",
                  cols, cells, width)
    out: list[Any] = [t]
    if dropped:
        out.append(Text(f"{dropped:,} communicators beyond MPILENS_COMMS: their calls are in "
                        "\"other\""))
    return out


def render(prof: Profile, top: int, function: str | None,
           console: Console | None = None, per_rank: bool = False,
           region: str | None = None, callsite: dict[str, Any] | None = None,
           width: int | None = None) -> None:
    """The one-page report; width: --width (layout.console says which width is used)."""
    if console is None:
        console = layout.console(width)
    w = console.width
    console.print(summary_panel(analysis.summary(prof)))
    hc = headercheck.check(prof)
    if hc is not None and not hc["ok"]:
        console.print(Text(headercheck.sentence(hc), style="bold"))
    if prof.partial is not None:
        for item in partial_block(prof, waitsfor.analyse(prof)):
            console.print(item)
    view = prof
    if region is not None:
        from ..commands.report import region_view

        view = region_view(prof, region)
        console.print(Text(f"Region {region}: the function table and histograms below count "
                           "only the calls made inside it", style="bold"))
    console.print(functions_table(analysis.function_rows(view), top, w))
    rg = regions.region_rows(prof)
    if rg:
        for item in regions_table(rg, regions.dropped(prof), w):
            console.print(item)
    cm = comms.comm_rows(prof)
    if cm:
        for item in comms_table(cm, min(top, 10), comms.dropped(prof), w):
            console.print(item)
    tl = timeline.timeline(prof)
    if tl:
        for item in timeline_block(tl, w):
            console.print(item)
    cs = callsites.callsite_rows(prof)
    if cs:
        for item in callsites_table(cs, min(top, 10), callsites.dropped(prof), w):
            console.print(item)
    if callsite is not None:
        for item in callsite_block(callsite, prof.hist_labels()):
            console.print(item)
    if per_rank:
        console.print(ranks_table(ranks.rank_rows(prof), w))
    else:
        for item in spread_text.blocks(prof):  # many ranks: distributions (report/spread.py)
            console.print(item)
    a2a = analysis.alltoall_rows(prof)
    for item in alltoall_block(a2a, w) if a2a else []:
        console.print(item)
    coll = analysis.coll_rows(prof)
    for item in coll_block(coll, w) if coll else []:
        console.print(item)
    if function:
        for item in histogram_table(analysis.histogram(view, function), w):
            console.print(item)
    for item in pattern_block(commpattern.summary(prof)):
        console.print(item)
    for item in nodes_block(nodes.node_view(prof)):
        console.print(item)
