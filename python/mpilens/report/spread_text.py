"""The spread over ranks and nodes on the terminal (report/spread.py's views).

`mpilens report` prints it for profiles of SPREAD_RANKS ranks or more, in place of
the per-rank table, which only `--ranks` (`--ranks all`) prints.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from ..units import fmt_bytes, fmt_time
from . import spread
from .profile import Profile

SPREAD_RANKS = 32
BAR = "▏▎▍▌▋▊▉█"
BAR_WIDTH = 30


def _bar(count: int, peak: int) -> str:
    if count <= 0 or peak <= 0:
        return ""
    eighths = max(1, round(count / peak * BAR_WIDTH * 8))
    return "█" * (eighths // 8) + (BAR[eighths % 8 - 1] if eighths % 8 else "")


def rank_block(s: dict[str, Any]) -> list[Any]:
    """Quantiles, histogram, most / least time, outliers."""
    q = s["quantiles_s"]
    out: list[Any] = [Text.assemble(
        ("Spread over ranks: ", "bold"),
        f"time in MPI per rank (without MPI_Init/Finalize), {s['ranks']:,} ranks: "
        f"min {fmt_time(q['min'])}, 1 % {fmt_time(q['p1'])}, 25 % {fmt_time(q['p25'])}, "
        f"median {fmt_time(q['p50'])}, 75 % {fmt_time(q['p75'])}, 99 % {fmt_time(q['p99'])}, "
        f"max {fmt_time(q['max'])}; mean {fmt_time(s['mean_s'])}, max/mean "
        f"{s['imbalance']:.2f}")]
    h = s["histogram"]
    peak = max(h["counts"]) if h["counts"] else 0
    t = Table(title="Ranks by time in MPI (histogram)", title_justify="left")
    t.add_column("time in MPI", justify="right", no_wrap=True)
    t.add_column("ranks", justify="right")
    t.add_column("", no_wrap=True)
    edges = h["edges_s"]
    for i, c in enumerate(h["counts"]):
        t.add_row(f"{fmt_time(edges[i])} - {fmt_time(edges[i + 1])}", f"{c:,}", _bar(c, peak))
    out.append(t)
    t = Table(title=f"Most and least time in MPI ({len(s['top'])} ranks each)",
              title_justify="left")
    for col in ("most: rank", "host", "in MPI", "least: rank", "host", "in MPI"):
        t.add_column(col, justify="left" if col == "host" else "right", no_wrap=True)
    for a, b in zip(s["top"], s["bottom"]):
        t.add_row(str(a["rank"]), Text(a["host"]), fmt_time(a["mpi_s"]),
                  str(b["rank"]), Text(b["host"]), fmt_time(b["mpi_s"]))
    out.append(t)
    if s["outliers_note"]:
        out.append(Text(f"Outliers: none called ({s['outliers_note']})."))
    elif not s["outliers_count"]:
        out.append(Text(f"Outliers: none (no rank's robust score |t - median| / (1.4826 MAD) "
                        f"exceeds {s['outlier_score']}; median {fmt_time(s['median_s'])}, "
                        f"MAD {fmt_time(s['mad_s'])})."))
    else:
        shown = ", ".join(f"rank {o['rank']} {fmt_time(o['mpi_s'])} (score {o['score']:.1f})"
                          for o in s["outliers"])
        out.append(Text(f"Outliers: {s['outliers_count']:,} ranks ({s['outliers_high']:,} above "
                        f"the median) score over {s['outlier_score']} on "
                        f"|t - median| / (1.4826 MAD) (median {fmt_time(s['median_s'])}, MAD "
                        f"{fmt_time(s['mad_s'])}); the strongest: {shown}."))
    return out


def node_block(s: dict[str, Any]) -> list[Any]:
    """Per node: the nodes with the most and least mean time in MPI per rank."""
    if s["nodes"] < 2:
        return []
    q = s["mpi_mean_s"]
    out: list[Any] = [Text.assemble(
        ("Spread over nodes: ", "bold"),
        f"mean time in MPI per rank of each of {s['nodes']:,} nodes: min {fmt_time(q['min'])}, "
        f"median {fmt_time(q['p50'])}, max {fmt_time(q['max'])}; node imbalance (max/mean) "
        f"{s['imbalance']:.2f}")]
    t = Table(title="Nodes with the most and least time in MPI per rank", title_justify="left")
    for col in ("node", "host", "ranks", "MPI/rank", "MPI total", "bytes sent", "inter-node sent"):
        t.add_column(col, justify="left" if col == "host" else "right", no_wrap=True)
    shown = s["top"] + [r for r in s["bottom"] if r not in s["top"]][::-1]
    for r in shown:
        t.add_row(str(r["node"]), Text(r["host"]), f"{r['ranks']:,}", fmt_time(r["mpi_mean_s"]),
                  fmt_time(r["mpi_s"]), fmt_bytes(r["bytes_sent"]),
                  fmt_bytes(r["p2p_inter_bytes"]))
    out.append(t)
    return out


def blocks(prof: Profile) -> list[Any]:
    """What report prints for the spread (nothing below SPREAD_RANKS ranks)."""
    if prof.nranks < SPREAD_RANKS or not prof.ranks:
        return []
    out = rank_block(spread.rank_spread(prof) or {})
    ns = spread.node_spread(prof)
    if ns:
        out += node_block(ns)
    out.append(Text("One row per rank: mpilens report PROFILE --ranks"))
    return out


def node_matrix_lines(prof: Profile) -> list[str]:
    """The header's node x node matrix (point-to-point bytes and messages sent, rows the
    senders' nodes; docs/profile-format.md, Nodes) as text: `report --node-matrix`."""
    nodes = prof.header.get("nodes")
    if not isinstance(nodes, dict) or "matrix_bytes" not in nodes:
        pairs = spread.node_pairs(prof) if prof.ranks else None
        if pairs is None:
            why = ("the profile has no node fields" if not isinstance(nodes, dict) else
                   "the job had more than 256 nodes: the profile holds no node matrix "
                   "and has no rank lines to sum it from")
            return [f"Node matrix: none ({why})."]
        out = [(f"Node matrix from the rank lines ({len(pairs):,} node pairs with traffic, "
               "the other cells 0), point-to-point sent, most bytes first:"),
               f"{'from':>6} {'to':>6} {'messages':>14} {'bytes':>12}  hosts"]
        out += [f"{p['from']:>6} {p['to']:>6} {p['messages']:>14,} {fmt_bytes(p['bytes']):>12}"
                f"  {p['from_host']} -> {p['to_host']}" for p in pairs]
        return out
    hosts = [str(h) for h in prof.header.get("hosts", [])]
    out = []
    for key, what in (("matrix_bytes", "bytes"), ("matrix_msgs", "messages")):
        m = nodes.get(key) or []
        out.append(f"Node matrix, point-to-point {what} sent (row: from node, column: to node):")
        cells = [[fmt_bytes(v) if what == "bytes" else f"{v:,}" for v in row] for row in m]
        width = max([len(c) for row in cells for c in row] + [len(str(len(m) - 1)), 4])
        out.append(" " * 6 + " ".join(f"{j:>{width}}" for j in range(len(m))))
        for i, row in enumerate(cells):
            out.append(f"{i:>4}  " + " ".join(f"{c:>{width}}" for c in row)
                       + (f"  {hosts[i]}" if i < len(hosts) else ""))
    return out
