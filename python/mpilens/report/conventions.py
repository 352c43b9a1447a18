"""Byte counts in other tools' conventions, for side-by-side comparison (docs/runtime.md,
"Byte conventions: mpilens, mpiP and IPM").

mpiP (3.5, `make-wrappers.py`) records one figure per call in its "Message Sent"
statistics: the send-side count argument times the size of the send type, on every rank
that makes the call.  It does not size received bytes, nor the blocking v-variants it
wraps (Alltoallv, Scatterv, Reduce_scatter: 0), and has no "sent" figure for functions it
does not wrap or reports in other sections (MPI-IO, one-sided).  MPIP_RULES says how its
figure follows from the profile's fields; it holds for job totals and per rank except
for the scatters (mpiP counts the root's per-rank block on every rank, mpilens the P blocks
at the root).
"""

from __future__ import annotations

from typing import Any

# How mpiP's "sent bytes" of a function follow from the profile's fields (job totals)
MPIP_RULES: dict[str, str] = {
    **{f: "sent" for f in (
        # point-to-point sends and the send part of Sendrecv: count x size
        "MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend", "MPI_Isend", "MPI_Ibsend",
        "MPI_Issend", "MPI_Irsend", "MPI_Sendrecv", "MPI_Sendrecv_replace",
        # reductions: count x size on every rank, as mpilens counts the send side
        "MPI_Reduce", "MPI_Ireduce", "MPI_Allreduce", "MPI_Iallreduce", "MPI_Scan", "MPI_Iscan",
        "MPI_Iexscan",
        # gathers: sendcount x size on every rank (the root's too, unless MPI_IN_PLACE)
        "MPI_Gather", "MPI_Igather", "MPI_Gatherv", "MPI_Igatherv", "MPI_Allgather",
        "MPI_Iallgather", "MPI_Allgatherv", "MPI_Iallgatherv",
        # scatters: sendcount x size on every rank = the root's P blocks, per job
        "MPI_Scatter", "MPI_Iscatter",
        # the non-blocking v/w variants mpiP sizes: the sum of the send counts
        "MPI_Ialltoallv", "MPI_Ialltoallw", "MPI_Ireduce_scatter")},
    # the broadcast buffer on every rank: sent at the root, received elsewhere
    "MPI_Bcast": "sent+recv", "MPI_Ibcast": "sent+recv",
    # one block per call: the per-peer block mpilens's send histogram counts
    "MPI_Alltoall": "block", "MPI_Ialltoall": "block",
    # recvcount x size
    "MPI_Ireduce_scatter_block": "recv",
    # wrapped by mpiP but not sized
    **{f: "zero" for f in (
        "MPI_Recv", "MPI_Irecv", "MPI_Alltoallv", "MPI_Scatterv", "MPI_Reduce_scatter",
        "MPI_Send_init", "MPI_Bsend_init", "MPI_Ssend_init", "MPI_Rsend_init", "MPI_Recv_init",
        "MPI_Start", "MPI_Startall", "MPI_Isendrecv", "MPI_Isendrecv_replace")},
}


def mpip_sent_bytes(name: str, f: dict[str, Any]) -> int | None:
    """mpiP's "sent bytes" of function `name` from its profile entry `f` (job totals or one
    rank's); None when mpiP has no such figure for it (not wrapped, reported in its I/O or
    one-sided section, or not derivable: MPI_Iscatterv sizes every rank's send counts)."""
    has_bytes = any(k in f for k in ("bytes_sent", "bytes_recv", "hist_send"))
    rule = MPIP_RULES.get(name, None if has_bytes else "zero")
    sent, recv = int(f.get("bytes_sent", 0)), int(f.get("bytes_recv", 0))
    if rule == "sent":
        return sent
    if rule == "sent+recv":
        return sent + recv
    if rule == "recv":
        return recv
    if rule == "block":  # profiles before hist_send_bytes existed cannot say
        return int(f["hist_send_bytes"]) if "hist_send_bytes" in f or not sent else None
    if rule == "zero":
        return 0
    return None


def with_mpip_bytes(rows: list[dict[str, Any]], functions: dict[str, dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Function-table rows with bytes_sent/bytes_recv replaced by mpiP's sent bytes."""
    out = []
    for r in rows:
        row: dict[str, Any] = {}
        for k, v in r.items():
            if k == "bytes_sent":
                row["mpip_bytes_sent"] = mpip_sent_bytes(r["function"], functions[r["function"]])
            elif k != "bytes_recv":
                row[k] = v
        out.append(row)
    return out
