"""Self-contained HTML report: matplotlib figures embedded as base64 PNG, inline CSS.

No script, font, style sheet or image is fetched from anywhere: the file opens
from a laptop's disk.  Figures: MPI time by function per rank, per-rank
imbalance, peer heatmap, and one message-size histogram per function that
moved data (up to MAX_HISTOGRAMS, most bytes first).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from ..units import fmt_bytes, fmt_pct, fmt_time, fmt_times
from . import (
    analysis,
    callsites,
    commpattern,
    headercheck,
    nodes,
    partial,
    ranks,
    regions,
    spread,
    timeline,
    waitsfor,
)
from .profile import Profile
from .schema import CAUTION_FACTOR

MAX_HISTOGRAMS = 6
MAX_STACKED = 7  # functions drawn separately in the per-rank chart; the rest is "other"


def _png(fig: Figure, alt: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _rank_ticks(n: int) -> list[int]:
    return list(range(0, n, max(1, n // 16)))


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


# Above this many ranks the per-rank figures draw groups of consecutive ranks (their mean,
# at most BINS bars) and the heat maps at most BINS x BINS cells: the page stays small.
BAR_RANKS = 256
BINS = 256
SPREAD_RANKS = 32  # the spread over ranks from this many ranks (as the terminal report)


def _groups(n: int) -> int:
    """Ranks per bar of a per-rank figure."""
    return 1 if n <= BAR_RANKS else -(-n // BINS)


def _group_mean(v: np.ndarray, per: int) -> np.ndarray:
    if per == 1:
        return v
    pad = (-len(v)) % per
    full = np.concatenate([v, np.full(pad, np.nan)]) if pad else v
    return np.nanmean(full.reshape(-1, per), axis=1)


def _stacked_bars(ax: Any, left: np.ndarray, width: float, bottom: np.ndarray,
                  height: np.ndarray, color: str, label: str) -> None:
    """One layer of a stacked bar chart as one collection of rectangles: what ax.bar draws,
    without a Rectangle artist per bar (2,048 of them cost seconds to lay out and draw)."""
    x0, y0 = left, bottom
    x1, y1 = left + width, bottom + height
    verts = np.stack([np.column_stack(c) for c in ((x0, y0), (x0, y1), (x1, y1), (x1, y0))],
                     axis=1)
    bars = PolyCollection(verts, facecolors=color, edgecolors="none", label=label)
    bars.sticky_edges.y.append(0.0)  # the y axis starts at the bars' foot, as with ax.bar
    ax.add_collection(bars)


def time_per_rank_figure(prof: Profile, rows: list[dict[str, Any]]) -> Figure:
    """MPI time by function per rank, stacked (groups of ranks above BAR_RANKS)."""
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [r["function"] for r in rows if r["function"] not in analysis.OUTSIDE][:MAX_STACKED]
    if prof.ranks:
        t = prof.columns()
        per = _groups(prof.nranks)
        series = [(n, t.time_of(n)) for n in names]
        comm = t.mpi_s
        other = comm - sum((v for _, v in series), np.zeros(t.n))
        if (other > 1e-12).any():
            series.append(("other", np.maximum(0.0, other)))
        xs = np.arange(-(-t.n // per)) * per
        left = xs if per > 1 else xs - 0.4
        bottom = np.zeros(len(xs))
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for k, (name, vals) in enumerate(series):
            g = _group_mean(vals, per)
            _stacked_bars(ax, left, 0.8 * per, bottom, g, colors[k % len(colors)], name)
            bottom = bottom + g
        ax.autoscale_view()
        ax.set_xlabel("rank" if per == 1 else f"rank (each bar: the mean of {per} ranks)")
        if per == 1:
            ax.set_xticks(_rank_ticks(prof.nranks))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        ax.bar(names, [r["rank_time_mean_s"] for r in rows if r["function"] in names])
        ax.set_xlabel("function (mean over ranks; the profile has no rank lines)")
        ax.tick_params(axis="x", rotation=30)
    ax.set_ylabel("time in MPI (s), without MPI_Init/Finalize")
    ax.set_title("MPI time by function per rank")
    return fig


def fig_time_per_rank(prof: Profile, rows: list[dict[str, Any]]) -> str:
    return _png(time_per_rank_figure(prof, rows), "MPI time by function per rank")


@dataclass
class Imbalance:
    """What the imbalance figure draws, per rank: time in MPI (bars from 0, so that the
    dashed line of their mean is on their scale) and the rest of the wall time above them."""

    in_mpi: list[float]
    outside: list[float]
    mean_in_mpi: float


def imbalance_data(prof: Profile) -> Imbalance | None:
    mpi = analysis.comm_time_per_rank(prof)
    if mpi is None or not len(mpi):
        return None
    t = prof.columns()
    in_mpi = mpi.tolist()
    outside = np.maximum(0.0, t.wall_s - mpi).tolist()
    return Imbalance(in_mpi=in_mpi, outside=outside, mean_in_mpi=sum(in_mpi) / len(in_mpi))


def imbalance_figure(prof: Profile) -> Figure:
    fig, ax = plt.subplots(figsize=(8, 3.5))
    d = imbalance_data(prof)
    if d is not None and prof.nranks <= BAR_RANKS:
        ranks = list(range(prof.nranks))
        ax.bar(ranks, d.in_mpi, label="in MPI", color="#de2d26")
        ax.bar(ranks, d.outside, bottom=d.in_mpi, label="outside MPI", color="#9ecae1")
        mean = d.mean_in_mpi
        ax.axhline(mean, color="black", lw=1, ls="--", label=f"mean in MPI {fmt_time(mean)}")
        ax.set_xlabel("rank")
        ax.set_xticks(_rank_ticks(prof.nranks))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    elif d is not None:  # many ranks: the spread per group of ranks, not one bar per rank
        per = _groups(prof.nranks)
        mpi = np.asarray(d.in_mpi)
        wall = mpi + np.asarray(d.outside)
        k = -(-len(mpi) // per)
        pad = k * per - len(mpi)

        def grid(v: np.ndarray) -> np.ndarray:
            return np.concatenate([v, np.full(pad, np.nan)]).reshape(k, per) if pad \
                else v.reshape(k, per)

        xs = np.arange(k) * per
        g = grid(mpi)
        ax.fill_between(xs, np.nanmin(g, axis=1), np.nanmax(g, axis=1), step="post",
                        color="#fcae91", label="in MPI, min to max")
        ax.step(xs, np.nanmean(g, axis=1), where="post", color="#de2d26", lw=1,
                label="in MPI, mean")
        ax.step(xs, np.nanmean(grid(wall), axis=1), where="post", color="#3182bd", lw=1,
                label="wall time, mean")
        mean = d.mean_in_mpi
        ax.axhline(mean, color="black", lw=1, ls="--", label=f"mean in MPI {fmt_time(mean)}")
        ax.set_xlabel(f"rank (groups of {per} consecutive ranks)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        _no_data(ax, "no rank lines in this profile (MPILENS_DETAIL=off)")
    ax.set_ylabel("wall time (s)")
    ax.set_title("Per-rank wall time: in MPI (from 0) and outside MPI")
    return fig


def fig_imbalance(prof: Profile) -> str:
    return _png(imbalance_figure(prof), "per-rank imbalance")


def fig_heatmap(prof: Profile) -> str:
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    m = commpattern.matrix(prof)
    if m is None or not m.any():
        _no_data(ax, "no point-to-point traffic recorded")
    else:
        # floats: a count up to 2^64-1 does not fit the C long matplotlib would make of it
        cells, per = m.binned(BINS)
        k = cells.shape[0]
        im = ax.imshow(cells, cmap="viridis", origin="upper", interpolation="nearest",
                       extent=(-0.5 * per, (k - 0.5) * per, (k - 0.5) * per, -0.5 * per))
        fig.colorbar(im, ax=ax, label="bytes sent" if per == 1
                     else f"bytes sent ({per} x {per} ranks per cell)")
        ax.set_xlabel("destination rank")
        ax.set_ylabel("source rank")
        if per == 1:
            ax.set_xticks(_rank_ticks(prof.nranks))
            ax.set_yticks(_rank_ticks(prof.nranks))
    ax.set_title("Point-to-point bytes between ranks")
    return _png(fig, "peer heatmap")


def histogram_functions(prof: Profile) -> list[str]:
    """Functions whose message-size histogram is drawn: most bytes first."""
    moved = [(n, int(f.get("bytes_sent", 0)) + int(f.get("bytes_recv", 0)))
             for n, f in prof.functions.items()
             if sum(f.get("hist_send", [])) + sum(f.get("hist_recv", [])) > 0]
    moved.sort(key=lambda x: (-x[1], x[0]))
    return [n for n, _ in moved[:MAX_HISTOGRAMS]]


def fig_histogram(prof: Profile, name: str) -> tuple[str, list[str]]:
    h = analysis.histogram(prof, name)
    labels = h["labels"]
    used = [i for d in h["directions"].values() for i, c in enumerate(d["bins"]) if c]
    lo, hi = max(0, min(used) - 1), min(len(labels) - 1, max(used) + 1)
    fig, ax = plt.subplots(figsize=(6, 3))
    width = 0.4 if len(h["directions"]) == 2 else 0.8
    sentences = []
    for k, (direction, d) in enumerate(h["directions"].items()):
        xs = [i - lo + (k - (len(h["directions"]) - 1) / 2) * width for i in range(lo, hi + 1)]
        ax.bar(xs, [float(c) for c in d["bins"][lo:hi + 1]], width=width, label=direction)
        sentences.append(analysis.dominant_sentence(name, direction, d["dominant"],
                                                    d["messages"]))
    ax.set_xticks(range(hi - lo + 1))
    ax.set_xticklabels(labels[lo:hi + 1], rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("message size class (bytes)")
    ax.set_ylabel("messages")
    ax.set_title(f"{name}: message sizes")
    ax.legend(fontsize=8)
    return _png(fig, f"{name} message-size histogram"), sentences


CSS = """
body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1100px}
.banner{background:#1f4e79;color:#fff;padding:1em 1.5em;border-radius:6px}
.banner h1{margin:0 0 .4em 0;font-size:1.5em}
.banner table td{padding:.1em 1.2em .1em 0}
table.data{border-collapse:collapse;margin:.5em 0 1.5em 0;font-size:.9em}
table.data th,table.data td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
table.data th:first-child,table.data td:first-child{text-align:left}
.caution{color:#a15c00;font-weight:bold}
img.plot{display:block;margin:.5em 0 1.5em 0;max-width:100%}
.callout{font-weight:bold;margin:0 0 .3em 0}
"""


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="data"><tr>{th}</tr>{body}</table>'


def ranks_html(prof: Profile) -> str:
    """The per-rank table (as `mpilens report --ranks`)."""
    if prof.nranks > BAR_RANKS and prof.ranks:
        return (f"<p>Per rank: {prof.nranks:,} ranks, too many for one row each; "
                "see the spread above and <code>mpilens report --ranks all</code>.</p>")
    rows = ranks.rank_rows(prof)
    if rows is None:
        return ""
    e = html.escape
    return ("<p>Per rank (time in MPI and calls without MPI_Init/Finalize):</p>" + _table(
        ["rank", "host", "wall", "in MPI", "% wall", "calls", "bytes sent", "bytes recv",
         "top function"],
        [[str(r["rank"]), e(r["host"]), fmt_time(r["wall_s"]), fmt_time(r["mpi_s"]),
          fmt_pct(r["mpi_pct"]), f"{r['calls']:,}", fmt_bytes(r["bytes_sent"]),
          fmt_bytes(r["bytes_recv"]),
          "-" if r["top_function"] is None else
          e(f"{r['top_function']} {fmt_time(r['top_function_s'])} "
            f"({fmt_pct(r['top_function_pct'])})")] for r in rows]))


def pattern_html(cp: dict[str, Any]) -> str:
    """The traffic pattern, the application's topologies and the self-traffic, as text."""
    e = html.escape
    out = [f"<p><b>Point-to-point pattern: {e(cp['pattern'])}</b> ({e(cp['reason'])})</p>"]
    if cp["topologies"]:
        out.append("<p>Topologies the application created: "
                   + e("; ".join(commpattern.topology_line(t) for t in cp["topologies"])) + "</p>")
    if cp["self_traffic"]["bytes"]:
        out.append(f"<p>{e(commpattern.self_traffic_sentence(cp['self_traffic']))}</p>")
    return "".join(out)


def nodes_html(prof: Profile) -> str:
    """Traffic within and across nodes, heaviest node pairs, collectives' node span."""
    view = nodes.node_view(prof)
    if view is None:
        return "<p>This profile has no node-level fields.</p>"
    e = html.escape
    out = [f'<p class="callout">{e(nodes.cross_sentence(view))}</p>']
    if view["count"] > 1 and view["functions"]:
        out.append("<p>Point-to-point sent, within and across nodes:</p>" + _table(
            ["function", "msgs intra", "bytes intra", "msgs inter", "bytes inter"],
            [[e(f["function"]), f"{f['intra_msgs']:,}", fmt_bytes(f["intra_bytes"]),
              f"{f['inter_msgs']:,}", fmt_bytes(f["inter_bytes"])] for f in view["functions"]]))
    if view["heaviest_pairs"]:
        out.append("<p>Heaviest node pairs (point-to-point, both ways):</p>" + _table(
            ["nodes", "messages", "bytes"],
            [[e(f"{p['a']} <-> {p['b']}"), f"{p['msgs']:,}", fmt_bytes(p["bytes"])]
             for p in view["heaviest_pairs"]]))
    if view["count"] > 1:
        out.append(f"<p>{e(nodes.collectives_sentence(view))}</p>")
    return "".join(out)


def partial_html(prof: Profile) -> str:
    """A partial profile's section: who waits for whom and the verdict."""
    if prof.partial is None:
        return ""
    e = html.escape
    w = waitsfor.analyse(prof)
    rows = [[str(r["rank"]), e(partial.dump_label(r["reason"], r["dump"])),
             e({"no_dump": "no dump", "not_in_mpi": "not in MPI", "stopped": "stopped"}.get(
                 r["state"], r["call"] or "")),
             "" if r["since_s"] is None else fmt_time(r["since_s"]),
             e(waitsfor.ranges(r["waits_for"]))] for r in w["ranks"]]
    findings = "".join(f'<p class="callout">{"Verdict" if i == 0 else "Also"}: {e(f["text"])}</p>'
                       for i, f in enumerate(w["findings"]))
    return ('<h2 id="partial">Partial profile: who waits for whom</h2>'
            "<p>The job did not reach MPI_Finalize: these are the ranks' last dumps "
            "(docs/flight-recorder.md); the tables below count the calls each rank had "
            "completed at its dump.</p>" + findings
            + _table(["rank", "dump", "inside", "for", "waits for"], rows))


MAX_CALLSITES = 30


def timeline_html(prof: Profile) -> str:
    """Heat map ranks x time (fraction of each bin in MPI) and the stacked MPI time per class."""
    tl = timeline.timeline(prof)
    if tl is None:
        return ""
    w, n = tl["bin_s"], tl["nbins"]
    frac, per = timeline.binned_fraction(np.asarray(tl["mpi_fraction"]), BINS)
    fig, ax = plt.subplots(figsize=(8, max(2.0, min(8.0, 0.25 * prof.nranks + 1.5))))
    im = ax.imshow(frac, aspect="auto", cmap="magma", vmin=0.0, vmax=1.0,
                   origin="upper", interpolation="nearest",
                   extent=(0.0, w * n, frac.shape[0] * per - 0.5, -0.5))
    fig.colorbar(im, ax=ax, label="fraction of the bin in MPI" if per == 1
                 else f"fraction of the bin in MPI (mean of {per} ranks per row)")
    ax.set_xlabel("time since MPI_Init (s)")
    ax.set_ylabel("rank")
    if per == 1:
        ax.set_yticks(_rank_ticks(prof.nranks))
    ax.set_title("Time in MPI per rank over the run")
    heat = _png(fig, "time line heat map")
    fig, ax = plt.subplots(figsize=(8, 3.5))
    xs = [w * (i + 0.5) for i in range(n)]
    used = [c for c in tl["classes"] if sum(c["calls"])]
    if used:
        ax.stackplot(xs, *[c["time_s"] for c in used], labels=[c["class"] for c in used])
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        _no_data(ax, "no calls in the time line")
    ax.set_xlabel("time since MPI_Init (s)")
    ax.set_ylabel(f"MPI time per bin of {fmt_time(w)} (s)")
    ax.set_title("MPI time per function class, summed over ranks")
    stacked = _png(fig, "time line per class")
    return (f'<h2 id="timeline">Time line</h2><p>{n} bins of {fmt_time(w)} from MPI_Init.</p>'
            + heat + stacked)


def callsites_html(prof: Profile) -> str:
    """The top call sites (as `mpilens report`), with every frame of each."""
    rows = callsites.callsite_rows(prof)
    if not rows:
        return ""
    e = html.escape
    drop = callsites.dropped(prof)
    note = (f"<p>{drop['calls']:,} calls came from sites beyond MPILENS_CALLSITE_SLOTS "
            f"({fmt_time(drop['time_s'])}): not in the table.</p>" if drop["calls"] else "")
    return ('<h2 id="callsites">Call sites by total time</h2>'
            "<p>Innermost frame first; file:line from the programs' debug information.</p>"
            + _table(["#", "function", "call site", "calls", "total", "% sites", "ranks", "bytes"],
                     [[str(r["id"]), e(r["function"]),
                       "<br>".join(e(callsites.location(f)) for f in r["frames"]),
                       f"{r['calls']:,}", fmt_time(r["time_s"]), fmt_pct(r["sites_pct"]),
                       str(r["nranks"]), fmt_bytes(r["bytes_sent"] + r["bytes_recv"])]
                      for r in rows[:MAX_CALLSITES]]) + note)


def regions_html(prof: Profile) -> str:
    rows = regions.region_rows(prof)
    if not rows:
        return ""
    e = html.escape
    return ('<h2 id="regions">Regions</h2><p>MPI_Pcontrol labels and mpilens_region_begin/end: '
            "a call counts in its innermost region; wall time includes nested regions.</p>"
            + _table(["region", "inside", "entries", "wall/rank", "MPI calls", "MPI time",
                      "bytes", "functions"],
                     [[e(r["name"]), e(r["parent"] or "-"), f"{r['entries']:,}",
                       fmt_time(r["wall_mean_s"]), f"{r['calls']:,}", fmt_time(r["time_s"]),
                       fmt_bytes(r["bytes_sent"] + r["bytes_recv"]),
                       e(", ".join(f"{k} {v['calls']:,}" for k, v in sorted(
                           r["functions"].items(), key=lambda kv: -kv[1]["time_s"])))]
                      for r in rows]))


def spread_html(prof: Profile) -> str:
    """Many ranks: the time in MPI per rank as a distribution (report/spread.py), and
    per node."""
    if prof.nranks < SPREAD_RANKS or not prof.ranks:
        return ""
    s = spread.rank_spread(prof)
    if s is None:
        return ""
    e = html.escape
    q = s["quantiles_s"]
    fig, ax = plt.subplots(figsize=(8, 3))
    h = s["histogram"]
    edges = h["edges_s"]
    ax.bar(edges[:-1], h["counts"], width=[b - a for a, b in itertools.pairwise(edges)],
           align="edge", color="#de2d26")
    ax.set_xlabel("time in MPI per rank (s), without MPI_Init/Finalize")
    ax.set_ylabel("ranks")
    ax.set_title(f"Ranks by time in MPI ({s['ranks']:,} ranks)")
    out = [(f"<p>Time in MPI per rank: min {fmt_time(q['min'])}, 1 % {fmt_time(q['p1'])}, "
           f"25 % {fmt_time(q['p25'])}, median {fmt_time(q['p50'])}, 75 % {fmt_time(q['p75'])}, "
           f"99 % {fmt_time(q['p99'])}, max {fmt_time(q['max'])}; mean {fmt_time(s['mean_s'])}"
           f" (max/mean {s['imbalance']:.2f}).</p>"), _png(fig, "ranks by time in MPI")]
    out.append("<p>Most and least time in MPI:</p>" + _table(
        ["most: rank", "host", "in MPI", "least: rank", "host", "in MPI"],
        [[str(a["rank"]), e(a["host"]), fmt_time(a["mpi_s"]), str(b["rank"]), e(b["host"]),
          fmt_time(b["mpi_s"])] for a, b in zip(s["top"], s["bottom"])]))
    if s["outliers_count"]:
        out.append(f"<p>Outliers: {s['outliers_count']:,} ranks score over "
                   f"{s['outlier_score']} on |t - median| / (1.4826 MAD): "
                   + e(", ".join(f"rank {o['rank']} {fmt_time(o['mpi_s'])}"
                                 for o in s["outliers"])) + "</p>")
    else:
        out.append("<p>Outliers: none " + e(f"({s['outliers_note']})" if s["outliers_note"]
                                           else f"(robust score <= {s['outlier_score']})")
                   + ".</p>")
    ns = spread.node_spread(prof)
    if ns and ns["nodes"] > 1:
        out.append(f"<p>Per node: mean time in MPI per rank, node imbalance (max/mean) "
                   f"{ns['imbalance']:.2f} over {ns['nodes']:,} nodes.</p>" + _table(
                       ["node", "host", "ranks", "MPI/rank", "bytes sent", "inter-node sent"],
                       [[str(r["node"]), e(r["host"]), f"{r['ranks']:,}",
                         fmt_time(r["mpi_mean_s"]), fmt_bytes(r["bytes_sent"]),
                         fmt_bytes(r["p2p_inter_bytes"])]
                        for r in ns["top"] + [x for x in ns["bottom"] if x not in ns["top"]][::-1]]))
    return "<h2 id=\"spread\">Spread over ranks and nodes</h2>" + "".join(out)


def check_html(prof: Profile) -> str:
    """The header checked against the rank lines: a line only when they differ."""
    hc = headercheck.check(prof)
    if hc is None or hc["ok"]:
        return ""
    return f'<p class="callout caution">{html.escape(headercheck.sentence(hc))}</p>'


def render(prof: Profile) -> str:
    """The complete HTML document for a profile."""
    e = html.escape
    s = analysis.summary(prof)
    rows = analysis.function_rows(prof)
    cp = commpattern.summary(prof)
    banner_rows = [
        ("Job", f"{e(s['job_id'])} &nbsp; <code>{e(s['command'])}</code>"),
        ("Ranks / hosts", f"{s['nranks']} / {len(s['hosts'])} ({e(', '.join(s['hosts'][:8]))})"),
        ("MPI library", e(s["mpi_library"])),
        ("Wall time", fmt_times([s["wall_s"][k] for k in ("min", "mean", "max")])
         + " (min/mean/max)"),
        ("Time in MPI", " / ".join(fmt_pct(s["mpi_pct"][k]) for k in ("min", "mean", "max"))
         + " of wall time (min/mean/max)"),
        ("Profiler overhead", ("not in a partial profile (measured at MPI_Init, written at "
                               "MPI_Finalize)" if s["overhead_ns"] is None else
                               f"{s['overhead_ns']:.1f} ns per call; "
                               f"{len(s['caution_functions'])} function"
                               f"{'' if len(s['caution_functions']) == 1 else 's'} marked caution")),
        ("Traffic pattern", f"{e(cp['pattern'])} ({e(cp['reason'])})"),
    ]
    if s.get("profiler_finalize_s") is not None:
        banner_rows.insert(-1, ("Profiler finalize", (f"{fmt_time(s['profiler_finalize_s'])} in "
                                "its own work at MPI_Finalize (rank 0; before the write)")))
    banner = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in banner_rows)
    ftable = _table(
        ["function", "calls", "total", "mean", "call min/max", "% MPI", "% wall",
         "rank min/mean/max", "slowest rank", "bytes", "caution"],
        [[e(r["function"]), f"{r['calls']:,}", fmt_time(r["time_s"]), fmt_time(r["mean_s"]),
          fmt_times([r["time_min_s"], r["time_max_s"]]),
          fmt_pct(r["mpi_pct"]), fmt_pct(r["wall_pct"]),
          fmt_times([r["rank_time_min_s"], r["rank_time_mean_s"], r["rank_time_max_s"]]),
          "" if r["slowest_rank"] is None else str(r["slowest_rank"]),
          fmt_bytes(r["bytes_sent"] + r["bytes_recv"]),
          '<span class="caution">caution</span>' if r["caution"] else ""] for r in rows])
    caution_rows = [r for r in rows if r["caution"]]
    if caution_rows:
        caution = ("<p>Mean time per call within "
                   f"{prof.header.get('caution_factor', CAUTION_FACTOR)}&times; "
                   "the measured overhead "
                   f"({s['overhead_ns']:.1f} ns): these numbers are mostly the tool.</p>"
                   + _table(["function", "calls", "mean", "total"],
                            [[e(r["function"]), f"{r['calls']:,}", fmt_time(r["mean_s"]),
                              fmt_time(r["time_s"])] for r in caution_rows]))
    else:
        caution = "<p>No function is marked caution.</p>"
    a2a_rows = analysis.alltoall_rows(prof)
    a2a = ("<h2 id=\"alltoall\">Adaptive MPI_Alltoall</h2>"
           f'<p class="callout">{e(analysis.alltoall_sentence(a2a_rows))}</p>'
           "<p>Algorithm per communicator and block size; runner-up: the next best "
           "candidate and its learned time over the chosen one's.</p>"
           + _table(analysis.ALLTOALL_HEAD,
                    [[e(c) for c in row] for row in analysis.alltoall_table(a2a_rows)])
           if a2a_rows else "")
    hists = []
    for name in histogram_functions(prof):
        img, sentences = fig_histogram(prof, name)
        hists.append("".join(f'<p class="callout">{e(x)}</p>' for x in sentences) + img)
    title = f"mpilens report: {s['job_id']}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>{CSS}</style></head><body>
<div class="banner" id="summary"><h1>{e(title)}</h1><table>{banner}</table></div>
{partial_html(prof)}{check_html(prof)}
<h2>MPI functions by total time</h2>{ftable}
{a2a}{regions_html(prof)}{callsites_html(prof)}{timeline_html(prof)}
<h2>MPI time by function per rank</h2>{fig_time_per_rank(prof, rows)}
<h2>Per-rank imbalance</h2>{fig_imbalance(prof)}{spread_html(prof)}{ranks_html(prof)}
<h2>Communication matrix</h2>{pattern_html(cp)}{fig_heatmap(prof)}
<h2 id="nodes">Nodes</h2>{nodes_html(prof)}
<h2>Message-size histograms</h2>{''.join(hists) or '<p>No messages recorded.</p>'}
<h2 id="caution">Caution list</h2>{caution}
<p><small>profile {e(str(prof.path))}, created {e(s['created'])}</small></p>
</body></html>
"""
