"""Communication matrix (who sends how much to whom) and its traffic pattern.

The matrix comes from the rank lines' point-to-point `peers.sent` lists
(MPI_COMM_WORLD ranks).  Bytes a rank sends to itself are self-traffic: reported
apart, never a peer pair, and left out of the pattern.  The pattern is, in this order:

- stencil on the application's grid: a Cartesian topology it created
  (MPI_Cart_create, header `topologies`) carries >= 90 % of the bytes between grid
  neighbours (report/stencil.py);
- graph-neighbour: >= 90 % of the bytes follow the edges of a graph topology it
  created (MPI_Graph_create, MPI_Dist_graph_create(_adjacent));
- root-centred: one rank is the source or destination of >= 80 % of the bytes and
  talks to every other rank (needs >= 3 ranks);
- stencil on an inferred grid: the offsets between peers fit a 1-, 2- or 3-D grid of
  the ranks (periodic or not; report/stencil.py);
- all-to-all: >= 75 % of the ordered rank pairs exchange data;
- sparse: every rank exchanges with at most 6 peers, fewer than half of the others;
- irregular: anything else; none: no point-to-point traffic between ranks.

Collective traffic is summarised apart, by the kind of collective.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..units import fmt_bytes
from . import stencil
from .profile import Profile

ROOTED = ("bcast", "reduce", "gather", "gatherv", "scatter", "scatterv")
ALL_TO_ALL = ("alltoall", "alltoallv", "alltoallw", "allgather", "allgatherv", "allreduce",
              "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "barrier")
GRAPH_SHARE = 0.90
SPARSE_PEERS = 6


@dataclass
class Traffic:
    """Point-to-point bytes between ranks as sparse triples: one entry per ordered
    (source, destination) with bytes, summed over the rank lines' `peers.sent` (never a
    P x P matrix: a 100,000-rank job has a few hundred thousand entries)."""

    n: int
    src: np.ndarray     # int64
    dst: np.ndarray     # int64
    nbytes: np.ndarray  # uint64, > 0

    def any(self) -> bool:
        return bool(len(self.nbytes))

    def binned(self, cells: int = 256) -> tuple[np.ndarray, int]:
        """bytes[source bin][destination bin] with at most `cells` x `cells` bins of
        consecutive ranks (float64), and the ranks per bin."""
        per = max(1, -(-self.n // cells))
        k = -(-self.n // per)
        out = np.zeros((k, k), dtype=np.float64)
        np.add.at(out, (self.src // per, self.dst // per), self.nbytes.astype(np.float64))
        return out, per


def matrix(prof: Profile) -> Traffic | None:
    """Bytes of point-to-point traffic from source to destination (sparse), or None
    without rank lines."""
    if not prof.ranks:
        return None
    t = prof.columns()
    n = prof.nranks
    ok = (t.peer_dst >= 0) & (t.peer_dst < n)
    return traffic(n, t.peer_src[ok], t.peer_dst[ok], t.peer_bytes[ok])


def traffic(n: int, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> Traffic:
    """Sum the triples by ordered (source, destination); keep those with bytes."""
    if not len(src):
        e = np.zeros(0, dtype=np.int64)
        return Traffic(n, e, e, np.zeros(0, dtype=np.uint64))
    key = src.astype(np.int64) * n + dst.astype(np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    sums = np.zeros(len(uniq), dtype=np.uint64)
    np.add.at(sums, inv, nbytes.astype(np.uint64))
    keep = sums > 0
    uniq = uniq[keep]
    return Traffic(n, uniq // n, uniq % n, sums[keep])


def pairs_of(m: Traffic) -> dict[tuple[int, int], int]:
    """Bytes between two different ranks, both ways, keyed (a, b) with a < b."""
    other = m.src != m.dst
    a = np.minimum(m.src, m.dst)[other]
    b = np.maximum(m.src, m.dst)[other]
    v = m.nbytes[other]
    if not len(a):
        return {}
    key = a * m.n + b
    uniq, inv = np.unique(key, return_inverse=True)
    sums = [0] * len(uniq)
    for i, x in zip(inv.tolist(), v.tolist()):
        sums[i] += x
    return {(k // m.n, k % m.n): s for k, s in zip(uniq.tolist(), sums)}


def self_traffic(m: Traffic) -> dict[str, Any]:
    """Bytes each rank sent to itself: not a peer pair, reported apart."""
    own = m.src == m.dst
    return {"bytes": sum(m.nbytes[own].tolist()), "ranks": m.src[own].tolist()}


def _root_centred(n: int, pairs: dict[tuple[int, int], int], total: int) -> tuple[str, str] | None:
    if n < 3:
        return None
    involved = [0] * n
    peers: list[set[int]] = [set() for _ in range(n)]
    for (a, b), nbytes in pairs.items():
        involved[a] += nbytes
        involved[b] += nbytes
        peers[a].add(b)
        peers[b].add(a)
    for root in range(n):
        if involved[root] >= 0.8 * total and len(peers[root]) == n - 1:
            return "root-centred", (f"rank {root} takes part in "
                                    f"{100.0 * involved[root] / total:.0f} % of the bytes")
    return None


def _declared(topologies: list[dict[str, Any]],
              pairs: dict[tuple[int, int], int]) -> tuple[str, str, stencil.Stencil | None] | None:
    """The pattern of a topology the application created, if the traffic follows it."""
    for i, topo in enumerate(topologies):
        s = stencil.from_topology(topo, pairs)
        if s is not None:
            return "stencil", s.sentence(), s
        share = stencil.graph_share(topo, pairs)
        if share is not None and share >= GRAPH_SHARE:
            maker = ("MPI_Graph_create" if topo["kind"] == "graph"
                     else "MPI_Dist_graph_create")
            return "graph-neighbour", (f"{100.0 * share:.0f} % of the bytes follow the edges of "
                                       f"the application's {maker} topology "
                                       f"(topologies[{i}], {len(topo['ranks'])} ranks)"), None
    return None


def classify(m: Traffic, topologies: list[dict[str, Any]] | None = None
             ) -> tuple[str, str, stencil.Stencil | None]:
    """(pattern, one-line reason, stencil or None) for the traffic between ranks."""
    n = m.n
    pairs = pairs_of(m)
    total = sum(pairs.values())
    if total == 0:
        what = "no point-to-point traffic between ranks"
        return "none", what + (" (only self-traffic)" if m.any() else ""), None
    found = _declared(topologies or [], pairs)
    if found:
        return found
    root = _root_centred(n, pairs, total)
    if root:
        return root[0], root[1], None
    s = stencil.infer(n, pairs)
    if s is not None:
        return "stencil", s.sentence(), s
    ordered = int(np.count_nonzero(m.src != m.dst))
    what = f"{ordered} of {n * (n - 1)} rank pairs exchange data"
    if ordered >= 0.75 * n * (n - 1):
        return "all-to-all", what, None
    peers = [0] * n
    for a, b in pairs:
        peers[a] += 1
        peers[b] += 1
    if max(peers) <= SPARSE_PEERS and max(peers) < (n - 1) / 2:
        return "sparse", (f"at most {max(peers)} peers per rank, {what}; no grid of the ranks "
                          "explains the offsets"), None
    return "irregular", what, None


def heaviest_pairs(m: Traffic, top: int = 5,
                   pairs: dict[tuple[int, int], int] | None = None) -> list[dict[str, int]]:
    """The heaviest pairs of two different ranks: bytes both ways."""
    best = heapq.nsmallest(top, ((-v, a, b) for (a, b), v in
                                 (pairs if pairs is not None else pairs_of(m)).items()))
    return [{"a": a, "b": b, "bytes": -v} for v, a, b in best]


def collective_base(name: str) -> tuple[str, bool] | None:
    """('bcast', False) for MPI_Bcast, ('bcast', True) for MPI_Ibcast; None when the
    function is not a collective of ROOTED or ALL_TO_ALL."""
    known = ROOTED + ALL_TO_ALL
    base = name.lower().removeprefix("mpi_")
    if base in known:
        return base, False
    if base.startswith("i") and base[1:] in known:
        return base[1:], True  # non-blocking variant
    return None


def collective_kinds(prof: Profile) -> dict[str, int]:
    """Bytes sent by collectives, by kind: rooted (Bcast, Reduce, ...) / all-to-all."""
    out = {"rooted": 0, "all-to-all": 0}
    for name, f in prof.functions.items():
        base = (collective_base(name) or ("", False))[0]
        nbytes = int(f.get("bytes_sent", 0))
        if base in ROOTED:
            out["rooted"] += nbytes
        elif base in ALL_TO_ALL:
            out["all-to-all"] += nbytes
    return out


def topology_line(topo: dict[str, Any]) -> str:
    """'MPI_Cart_create 2 x 2 (periodic, non-periodic), 4 ranks' and the like."""
    n = len(topo["ranks"])
    if topo["kind"] == "cart":
        per = ", ".join("periodic" if p else "non-periodic" for p in topo["periods"])
        return f"MPI_Cart_create {' x '.join(map(str, topo['dims']))} ({per}), {n} ranks"
    maker = "MPI_Graph_create" if topo["kind"] == "graph" else "MPI_Dist_graph_create"
    edges = ("edges not recorded" if topo.get("edges") is None
             else f"{sum(len(e) for e in topo['edges'])} edges")
    return f"{maker}, {n} ranks, {edges}"


def self_traffic_sentence(st: dict[str, Any]) -> str:
    ranks = st["ranks"]
    shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
    return (f"Self-traffic (point-to-point messages a rank sent to itself; not a peer pair): "
            f"{fmt_bytes(st['bytes'])} on {len(ranks)} rank{'s' if len(ranks) != 1 else ''} "
            f"({shown})")


def summary(prof: Profile, top: int = 5) -> dict[str, Any]:
    """Matrix summary for the report: pattern, reason, heaviest pairs, self-traffic,
    the application's topologies, collectives."""
    m = matrix(prof)
    topologies = list(prof.header.get("topologies", []))
    out: dict[str, Any] = {"collective_bytes": collective_kinds(prof),
                           "topologies": topologies,
                           "topologies_dropped": int(prof.header.get("topologies_dropped", 0))}
    if m is None:
        out.update(pattern="unknown", reason="the profile has no rank lines (detail off)",
                   stencil=None, heaviest_pairs=[], total_bytes=0,
                   self_traffic={"bytes": 0, "ranks": []})
        return out
    pattern, reason, st = classify(m, topologies)
    pairs = pairs_of(m)
    out.update(pattern=pattern, reason=reason, stencil=st.as_dict() if st else None,
               heaviest_pairs=heaviest_pairs(m, top, pairs), total_bytes=sum(pairs.values()),
               self_traffic=self_traffic(m))
    return out
