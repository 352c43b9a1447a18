"""Per-rank figures (mpiP's per-task table): one row per MPI_COMM_WORLD rank.

Plain data for every output (terminal `report --ranks`, JSON `ranks`, CSV
`--ranks`), copied or summed from the profile's rank lines: time in MPI (the
rank line's mpi_s: without MPI_Init and MPI_Finalize), wall time, MPI calls
and bytes (sums over the rank's functions, MPI_Init/Finalize left out of the
calls as they are of the time), its node and the point-to-point bytes it sent
within and across nodes (p2p_intra_node / p2p_inter_node), and the function
that took most of the rank's MPI time.  A node-level view groups these rows by host.
"""

from __future__ import annotations

from typing import Any

from .analysis import OUTSIDE
from .profile import Profile
from .rankdata import RankTable

RANK_COLUMNS = ["rank", "host", "node", "wall_s", "mpi_s", "mpi_pct", "calls", "bytes_sent",
                "bytes_recv", "p2p_intra_bytes", "p2p_inter_bytes", "top_function",
                "top_function_s", "top_function_pct"]


def rank_row(line: dict[str, Any]) -> dict[str, Any]:
    """The per-rank figures of one rank line."""
    funcs = line["functions"]
    comm = {n: f for n, f in funcs.items() if n not in OUTSIDE}
    wall, mpi = float(line["wall_s"]), float(line["mpi_s"])
    top, top_s = None, 0.0
    for name in sorted(comm):  # the longest total time; the first name on a tie
        t = float(comm[name].get("time_s", 0.0))
        if top is None or t > top_s:
            top, top_s = name, t
    p2p = [0, 0]
    for f in funcs.values():
        p2p[0] += int(f.get("p2p_intra_node", [0, 0])[1])
        p2p[1] += int(f.get("p2p_inter_node", [0, 0])[1])
    return {
        "rank": int(line["rank"]),
        "host": str(line.get("host", "")),
        "node": line.get("node"),
        "wall_s": wall,
        "mpi_s": mpi,
        "mpi_pct": 100.0 * mpi / wall if wall > 0 else 0.0,
        "calls": sum(int(f.get("calls", 0)) for f in comm.values()),
        "bytes_sent": sum(int(f.get("bytes_sent", 0)) for f in funcs.values()),
        "bytes_recv": sum(int(f.get("bytes_recv", 0)) for f in funcs.values()),
        "p2p_intra_bytes": p2p[0],
        "p2p_inter_bytes": p2p[1],
        "top_function": top,
        "top_function_s": top_s,
        "top_function_pct": 100.0 * top_s / mpi if mpi > 0 else 0.0,
    }


def rank_rows(prof: Profile) -> list[dict[str, Any]] | None:
    """One row per rank, in rank order (None: the profile has no rank lines)."""
    if not prof.ranks:
        return None
    t = prof.columns()
    return [row_of(t, i) for i in range(t.n)]


def row_of(t: RankTable, i: int) -> dict[str, Any]:
    """rank_row of rank i, from the profile's columns."""
    wall, mpi = float(t.wall_s[i]), float(t.mpi_s[i])
    top = int(t.top_function[i])
    top_s = float(t.top_function_s[i])
    node = int(t.node[i])
    return {
        "rank": i,
        "host": t.hosts[int(t.host[i])],
        "node": None if node < 0 else node,
        "wall_s": wall,
        "mpi_s": mpi,
        "mpi_pct": 100.0 * mpi / wall if wall > 0 else 0.0,
        "calls": int(t.calls[i]),
        "bytes_sent": int(t.bytes_sent[i]),
        "bytes_recv": int(t.bytes_recv[i]),
        "p2p_intra_bytes": int(t.p2p[i, 1]),
        "p2p_inter_bytes": int(t.p2p[i, 3]),
        "top_function": None if top < 0 else t.functions[top],
        "top_function_s": top_s,
        "top_function_pct": 100.0 * top_s / mpi if mpi > 0 else 0.0,
    }
