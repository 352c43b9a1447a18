"""Per-rank figures as distributions, and per node (views at scale, docs/scale.md).

A 100,000-rank job has no readable per-rank table: here the time in MPI per rank
(the rank lines' mpi_s, without MPI_Init/Finalize) is summarised by

- quantiles (min, 1 %, 25 %, median, 75 %, 99 %, max) and the mean;
- a histogram of HIST_BINS equal-width bins from the minimum to the maximum;
- the TOP_K ranks with the most and with the least time in MPI;
- outliers by a robust score: |t - median| / (1.4826 x MAD), MAD the median absolute
  deviation; a rank scoring above OUTLIER_SCORE is an outlier (the modified z-score of
  Iglewicz and Hoaglin).  With MAD = 0 (at least half the ranks equal) no rank is
  called an outlier: the score is undefined, and saying nothing beats a guess;

and per node (ranks with the same `node`, else the same host): ranks, the sum and
mean of their time in MPI, their bytes sent and received, and the node imbalance
(the largest mean time in MPI per rank of a node over the mean of the nodes' means).

Plain data, as analysis.py: terminal, JSON and HTML show the same values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .profile import Profile
from .rankdata import RankTable

QUANTILES = (0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0)
HIST_BINS = 20
TOP_K = 5
OUTLIER_SCORE = 3.5
MAD_SCALE = 1.4826


def _quantiles(v: np.ndarray) -> dict[str, float]:
    q = np.quantile(v, QUANTILES)  # linear interpolation between order statistics
    return {("min" if p == 0 else "max" if p == 1 else f"p{round(p * 100)}"): float(x)
            for p, x in zip(QUANTILES, q)}


def _ranked(t: RankTable, idx: np.ndarray, v: np.ndarray) -> list[dict[str, Any]]:
    return [{"rank": int(i), "host": t.hosts[int(t.host[i])], "mpi_s": float(v[i]),
             "wall_s": float(t.wall_s[i])} for i in idx]


def rank_spread(prof: Profile, k: int = TOP_K) -> dict[str, Any] | None:
    """The distribution of the time in MPI over ranks (None without rank lines)."""
    if not prof.ranks:
        return None
    t = prof.columns()
    v = t.mpi_s
    n = len(v)
    bottom = np.argsort(v, kind="stable")[:k]  # least first, ties: the lower rank first
    top = np.argsort(-v, kind="stable")[:k]     # most first, ties: the lower rank first
    lo, hi = float(v.min()), float(v.max())
    counts, edges = np.histogram(v, bins=HIST_BINS, range=(lo, hi if hi > lo else lo + 1e-9))
    med = float(np.median(v))
    mad = float(np.median(np.abs(v - med)))
    if mad > 0:
        score = np.abs(v - med) / (MAD_SCALE * mad)
        out_idx = np.nonzero(score > OUTLIER_SCORE)[0]
        out_idx = out_idx[np.argsort(-score[out_idx], kind="stable")]
        outliers = [{**r, "score": float(score[r["rank"]])}
                    for r in _ranked(t, out_idx[:k], v)]
        n_out = len(out_idx)
        n_high = int(np.count_nonzero(v[out_idx] > med))
    else:
        outliers, n_out, n_high = [], 0, 0
    mean = float(v.mean())
    return {
        "ranks": n,
        "mean_s": mean,
        "quantiles_s": _quantiles(v),
        "imbalance": hi / mean if mean > 0 else 1.0,
        "histogram": {"edges_s": [float(x) for x in edges], "counts": counts.tolist()},
        "top": _ranked(t, top, v),
        "bottom": _ranked(t, bottom, v),
        "median_s": med,
        "mad_s": mad,
        "outlier_score": OUTLIER_SCORE,
        "outliers": outliers,
        "outliers_count": n_out,
        "outliers_high": n_high,
        "outliers_note": (None if mad > 0 else
                          "at least half the ranks have the same time in MPI (MAD = 0): "
                          "no robust score, no outlier called"),
    }


def node_of_rank(t: RankTable) -> tuple[np.ndarray, list[str]]:
    """Each rank's node index and the nodes' names: the rank lines' `node` when every
    line has one, else the host (in order of first rank)."""
    if len(t.node) and (t.node >= 0).all():
        uniq = np.unique(t.node)
        idx = np.searchsorted(uniq, t.node)
        host_of = {}
        for n, h in zip(t.node.tolist(), t.host.tolist()):
            host_of.setdefault(n, t.hosts[h])
        return idx, [host_of[int(u)] for u in uniq]
    return t.host.astype(np.int64), list(t.hosts)


def node_spread(prof: Profile, k: int = TOP_K) -> dict[str, Any] | None:
    """MPI time and bytes per node, and the node imbalance (None without rank lines)."""
    if not prof.ranks:
        return None
    t = prof.columns()
    node, names = node_of_rank(t)
    m = len(names)
    ranks = np.bincount(node, minlength=m)
    mpi = np.bincount(node, weights=t.mpi_s, minlength=m)
    mean = mpi / np.maximum(ranks, 1)
    sent = np.zeros(m, dtype=np.uint64)
    recv = np.zeros(m, dtype=np.uint64)
    np.add.at(sent, node, t.bytes_sent)
    np.add.at(recv, node, t.bytes_recv)
    inter = np.zeros(m, dtype=np.uint64)
    np.add.at(inter, node, t.p2p[:, 3])
    avg = float(mean.mean()) if m else 0.0
    rows = [{"node": i, "host": names[i], "ranks": int(ranks[i]), "mpi_s": float(mpi[i]),
             "mpi_mean_s": float(mean[i]), "bytes_sent": int(sent[i]),
             "bytes_recv": int(recv[i]), "p2p_inter_bytes": int(inter[i])} for i in range(m)]
    order = sorted(range(m), key=lambda i: (-rows[i]["mpi_mean_s"], i))
    return {
        "nodes": m,
        "imbalance": float(mean.max()) / avg if m and avg > 0 else 1.0,
        "mpi_mean_s": _quantiles(mean) if m else {},
        "top": [rows[i] for i in order[:k]],
        "bottom": [rows[i] for i in order[::-1][:k]],
        "rows": rows,
    }


def node_pairs(prof: Profile) -> list[dict[str, Any]] | None:
    """The node x node matrix of point-to-point traffic summed from the rank lines' sparse
    `peers.sent` triples (rows the senders' nodes), as its non-zero cells: one row per
    ordered node pair with traffic (from, to, messages, bytes), most bytes first.  For any
    number of nodes (the header holds the matrix only up to 256 nodes); None without
    rank lines."""
    if not prof.ranks:
        return None
    t = prof.columns()
    node, names = node_of_rank(t)
    m = len(names)
    src, dst = t.peer_src, t.peer_dst
    ok = (src >= 0) & (src < t.n) & (dst >= 0) & (dst < t.n)
    key = node[src[ok]].astype(np.int64) * m + node[dst[ok]]
    cells, inv = np.unique(key, return_inverse=True)
    msgs = np.zeros(len(cells), dtype=np.uint64)
    nbytes = np.zeros(len(cells), dtype=np.uint64)
    np.add.at(msgs, inv, t.peer_msgs[ok])
    np.add.at(nbytes, inv, t.peer_bytes[ok])
    rows = [{"from": int(c // m), "to": int(c % m), "from_host": names[int(c // m)],
             "to_host": names[int(c % m)], "messages": int(k), "bytes": int(b)}
            for c, k, b in zip(cells.tolist(), msgs.tolist(), nbytes.tolist())]
    rows.sort(key=lambda r: (-r["bytes"], r["from"], r["to"]))
    return rows
