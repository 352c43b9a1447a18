"""Plots (matplotlib, Agg) of mpilens-bench JSON documents: --plot out.png|svg|pdf."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from .. import outfile

Doc = dict[str, Any]


def _xy(rows: list[Doc], key: str, scale: float = 1.0) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for r in rows:
        v = r.get(key)
        if isinstance(v, dict):
            v = v.get("median")
        if v is not None and r["size"] > 0:
            xs.append(r["size"])
            ys.append(v * scale)
    return xs, ys


def _loglog(ax: Axes, xlabel: str, ylabel: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")


def p2p(doc: Doc) -> plt.Figure:
    if "rails" in doc:
        return _p2p_rails(doc)
    if "pairs" in doc:
        return _p2p_classes(doc)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    rows = doc["results"]
    for key, label in (("latency_s", "ping-pong latency"), ("pingping_s", "ping-ping")):
        a1.plot(*_xy(rows, key, 1e6), marker="o", label=label)
    osu = [{"size": r["size"], "v": r["osu_latency"]["latency_s"]} for r in rows
           if r.get("osu_latency")]
    if osu:
        a1.plot(*_xy(osu, "v", 1e6), ls="--", label="osu_latency loop")
    _loglog(a1, "message size (B)", "time (us)")
    for key, label in (("bw_Bps", "bandwidth"), ("bibw_Bps", "bi-directional")):
        a2.plot(*_xy(rows, key, 1e-6), marker="o", label=label)
    osu = [{"size": r["size"], "v": r["osu_bw"]["bw_Bps"]} for r in rows if r.get("osu_bw")]
    if osu:
        a2.plot(*_xy(osu, "v", 1e-6), ls="--", label="osu_bw loop")
    _loglog(a2, "message size (B)", "MB/s")
    return fig


def _p2p_rails(doc: Doc) -> plt.Figure:
    """--rails: bandwidth against size, one line per number of rails."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for run in doc["rails"]:
        ax.plot(*_xy(run["result"]["results"], "bw_Bps", 1e-6), marker="o",
                label=f"{run['rails']} rail(s): {','.join(run['interfaces'])}")
    _loglog(ax, "message size (B)", "bandwidth (MB/s)")
    return fig


def _p2p_classes(doc: Doc) -> plt.Figure:
    """--pairs: latency and bandwidth of each pair class, on the same axes."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for pair in doc["pairs"]:
        label = f"{pair['class']}-node (ranks {pair['ranks'][0]}, {pair['ranks'][1]})"
        a1.plot(*_xy(pair["results"], "latency_s", 1e6), marker="o", label=label)
        a2.plot(*_xy(pair["results"], "bw_Bps", 1e-6), marker="o", label=label)
    _loglog(a1, "message size (B)", "ping-pong latency (us)")
    _loglog(a2, "message size (B)", "bandwidth (MB/s)")
    return fig


def coll(doc: Doc) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 5))
    groups: dict[str, list[Doc]] = {}
    for r in doc["results"]:
        groups.setdefault(f"{r['op']} ({r['nranks']})", []).append(r)
    for label, rows in groups.items():
        xs, ys = _xy(rows, "time_s", 1e6)
        if len(xs) > 1:
            ax.plot(xs, ys, marker=".", label=label)
    _loglog(ax, "bytes per rank", "slowest rank, median (us)")
    return fig


def halo(doc: Doc) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 5))
    rows = doc["results"]
    for v in doc["options"]["variants"]:
        pts = [{"size": r["size"], "t": r[v]["time_s"]} for r in rows]
        ax.plot(*_xy(pts, "t", 1e6), marker="o", label=v)
    _loglog(ax, "halo size (B)", "time per exchange, slowest process (us)")
    return fig


def logp(doc: Doc) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 5))
    m = doc["model"]
    for key, label in (("os_s", "os(m)"), ("or_s", "or(m)"), ("g_s", "g(m)")):
        pts = [{"size": s, "v": v} for s, v in zip(m["sizes"], m[key])]
        ax.plot(*_xy(pts, "v", 1e6), marker="o", label=label)
    ax.axhline(m["L_s"] * 1e6, color="grey", ls=":", label="L")
    _loglog(ax, "message size (B)", "us")
    return fig


def io(doc: Doc) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    rows = doc["results"]
    names = [r["pattern"] for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["bw_write_Bps"] / 1e6 for r in rows], 0.4,
           label="to write return")
    ax.bar([i + 0.2 for i in x], [r["bw_sync_Bps"] / 1e6 for r in rows], 0.4,
           label="including sync")
    ax.set_xticks(list(x), names)
    ax.set_ylabel("MB/s")
    ax.legend()
    return fig


def memory(doc: Doc) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if "series" in doc:
        n = [d["results"]["nranks"] for d in doc["series"]]
        for key, label in (("mpi_total_kib_mean", "mean per rank"),
                           ("mpi_total_kib_max", "max per rank")):
            ax.plot(n, [d["results"]["summary"][key] / 1024 for d in doc["series"]],
                    marker="o", label=label)
        ax.set_xlabel("ranks")
    else:
        rows = doc["results"]["per_rank"]
        ranks = [r["rank"] for r in rows]
        init = [r["mpi_init_kib"] / 1024 for r in rows]
        ax.bar(ranks, init, label="MPI_Init")
        ax.bar(ranks, [r["mpi_contact_kib"] / 1024 for r in rows], bottom=init,
               label="first contact with every peer")
        ax.set_xlabel("rank")
    ax.set_ylabel("resident memory added by MPI (MiB)")
    ax.legend()
    return fig


def overhead(doc: Doc) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6, 4))
    r = doc["results"]
    keys = [k for k in ("comm_rank", "pingpong_8B") if r.get(k)]
    ax.bar(keys, [r[k]["added_ns_median"] for k in keys])
    ax.set_ylabel("ns added by the profiler")
    return fig


PLOTS: dict[str, Callable[[Doc], plt.Figure]] = {
    "p2p": p2p, "coll": coll, "halo": halo, "logp": logp, "io": io, "memory": memory,
    "overhead": overhead,
}


def save(doc: Doc, path: Path) -> None:
    fig = PLOTS[doc["family"]](doc)
    fig.suptitle(f"mpilens bench {doc['family']}")
    fig.tight_layout()
    outfile.write_with(path, lambda tmp: fig.savefig(tmp, format=path.suffix[1:].lower()))
    plt.close(fig)
