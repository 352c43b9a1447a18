"""Communication matrix (who sends how much to whom) and its traffic pattern.

The matrix comes from the rank lines' point-to-point `peers.sent` lists
(MPI_COMM_WORLD ranks).  The pattern is classified, in this order:

- root-centred: one rank is the source or destination of >= 80 % of the bytes
  and talks to every other rank (needs >= 3 ranks);
- nearest-neighbour: each rank talks to at most 4 peers (2-D stencil halo) or
  >= 80 % of the bytes go between ring neighbours (rank +- 1, periodic);
- all-to-all: >= 75 % of the ordered rank pairs exchange data;
- irregular: anything else; none: no point-to-point traffic.

Collective traffic is summarised apart, by the kind of collective.
"""

from __future__ import annotations

from typing import Any

from .profile import Profile

ROOTED = ("bcast", "reduce", "gather", "gatherv", "scatter", "scatterv")
ALL_TO_ALL = ("alltoall", "alltoallv", "alltoallw", "allgather", "allgatherv", "allreduce",
              "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "barrier")


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


def classify(m: list[list[int]]) -> tuple[str, str]:
    """(pattern, one-line reason) for a bytes matrix."""
    n = len(m)
    total = sum(map(sum, m))
    if total == 0:
        return "none", "no point-to-point traffic"
    if n >= 3:
        for root in range(n):
            involved = sum(m[root]) + sum(m[i][root] for i in range(n)) - m[root][root]
            peers = {j for j in range(n) if j != root and (m[root][j] or m[j][root])}
            if involved >= 0.8 * total and len(peers) == n - 1:
                return "root-centred", (f"rank {root} takes part in "
                                        f"{100.0 * involved / total:.0f} % of the bytes")
    peers_per_rank = [sum(1 for j in range(n) if j != i and (m[i][j] or m[j][i]))
                      for i in range(n)]
    ring = sum(m[i][j] for i in range(n) for j in range(n)
               if n > 1 and (j - i) % n in (1, n - 1))
    if ring >= 0.8 * total or (n > 5 and max(peers_per_rank) <= 4):
        return "nearest-neighbour", (f"at most {max(peers_per_rank)} peers per rank, "
                                     f"{100.0 * ring / total:.0f} % of the bytes between "
                                     f"ring neighbours (rank +-1)")
    pairs = sum(1 for i in range(n) for j in range(n) if i != j and m[i][j])
    if n > 1 and pairs >= 0.75 * n * (n - 1):
        return "all-to-all", f"{pairs} of {n * (n - 1)} rank pairs exchange data"
    return "irregular", f"{pairs} of {n * (n - 1)} rank pairs exchange data"


def heaviest_pairs(m: list[list[int]], top: int = 5) -> list[dict[str, int]]:
    """The heaviest (unordered) rank pairs: bytes both ways."""
    n = len(m)
    pairs = [{"a": i, "b": j, "bytes": m[i][j] + m[j][i]}
             for i in range(n) for j in range(i, n)
             if (m[i][j] + (m[j][i] if i != j else 0))]
    for p in pairs:
        if p["a"] == p["b"]:
            p["bytes"] = m[p["a"]][p["a"]]
    pairs.sort(key=lambda p: (-p["bytes"], p["a"], p["b"]))
    return pairs[:top]


def collective_kinds(prof: Profile) -> dict[str, int]:
    """Bytes sent by collectives, by kind: rooted (Bcast, Reduce, ...) / all-to-all."""
    out = {"rooted": 0, "all-to-all": 0}
    known = ROOTED + ALL_TO_ALL
    for name, f in prof.functions.items():
        base = name.lower().removeprefix("mpi_")
        if base not in known and base.startswith("i") and base[1:] in known:
            base = base[1:]  # non-blocking variant
        nbytes = int(f.get("bytes_sent", 0))
        if base in ROOTED:
            out["rooted"] += nbytes
        elif base in ALL_TO_ALL:
            out["all-to-all"] += nbytes
    return out


def summary(prof: Profile, top: int = 5) -> dict[str, Any]:
    """Matrix summary for the report: pattern, reason, heaviest pairs, collectives."""
    m = matrix(prof)
    out: dict[str, Any] = {"collective_bytes": collective_kinds(prof)}
    if m is None:
        out.update(pattern="unknown", reason="the profile has no rank lines (detail off)",
                   heaviest_pairs=[], total_bytes=0)
        return out
    pattern, reason = classify(m)
    out.update(pattern=pattern, reason=reason, heaviest_pairs=heaviest_pairs(m, top),
               total_bytes=sum(map(sum, m)))
    return out
