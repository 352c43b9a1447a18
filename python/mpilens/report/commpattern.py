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

from typing import Any

from ..units import fmt_bytes
from . import stencil
from .profile import Profile

ROOTED = ("bcast", "reduce", "gather", "gatherv", "scatter", "scatterv")
ALL_TO_ALL = ("alltoall", "alltoallv", "alltoallw", "allgather", "allgatherv", "allreduce",
              "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "barrier")
GRAPH_SHARE = 0.90
SPARSE_PEERS = 6


def matrix(prof: Profile) -> list[list[int]] | None:
    """bytes[src][dst] of point-to-point traffic, or None without rank lines."""
    if not prof.ranks:
        return None
    n = prof.nranks
    m = [[0] * n for _ in range(n)]
    for r in prof.ranks:
        for peer, _msgs, nbytes in r.get("peers", {}).get("sent", []):
            if 0 <= peer < n:
                m[r["rank"]][peer] += int(nbytes)
    return m


def pairs_of(m: list[list[int]]) -> dict[tuple[int, int], int]:
    """Bytes between two different ranks, both ways, keyed (a, b) with a < b."""
    n = len(m)
    out: dict[tuple[int, int], int] = {}
    for i in range(n):
        for j in range(i + 1, n):
            if m[i][j] or m[j][i]:
                out[(i, j)] = m[i][j] + m[j][i]
    return out


def self_traffic(m: list[list[int]]) -> dict[str, Any]:
    """Bytes each rank sent to itself: not a peer pair, reported apart."""
    ranks = [i for i in range(len(m)) if m[i][i]]
    return {"bytes": sum(m[i][i] for i in ranks), "ranks": ranks}


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


def classify(m: list[list[int]], topologies: list[dict[str, Any]] | None = None
             ) -> tuple[str, str, stencil.Stencil | None]:
    """(pattern, one-line reason, stencil or None) for a bytes matrix."""
    n = len(m)
    pairs = pairs_of(m)
    total = sum(pairs.values())
    if total == 0:
        what = "no point-to-point traffic between ranks"
        return "none", what + (" (only self-traffic)" if any(m[i][i] for i in range(n)) else ""), None
    found = _declared(topologies or [], pairs)
    if found:
        return found
    root = _root_centred(n, pairs, total)
    if root:
        return root[0], root[1], None
    s = stencil.infer(n, pairs)
    if s is not None:
        return "stencil", s.sentence(), s
    ordered = sum(1 for i in range(n) for j in range(n) if i != j and m[i][j])
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


def heaviest_pairs(m: list[list[int]], top: int = 5) -> list[dict[str, int]]:
    """The heaviest pairs of two different ranks: bytes both ways."""
    pairs = [{"a": a, "b": b, "bytes": v} for (a, b), v in pairs_of(m).items()]
    pairs.sort(key=lambda p: (-p["bytes"], p["a"], p["b"]))
    return pairs[:top]


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
    out.update(pattern=pattern, reason=reason, stencil=st.as_dict() if st else None,
               heaviest_pairs=heaviest_pairs(m, top), total_bytes=sum(pairs_of(m).values()),
               self_traffic=self_traffic(m))
    return out
