"""Rule 9, pipelines: ranks that wait in a blocking receive for their upstream neighbour,
step after step (a wavefront, as NPB LU's sweeps).

From the rank lines: the blocking receives (MPI_Recv, MPI_Mrecv) of each rank, their
time, calls and bytes, and the peers it receives from (`peers.recv`).  The transfer of
a receive of s bytes is the model's T(s) = L + g(s) (in a pipeline every rank waits,
so no rank's time is pure transfer); a rank's waiting is its receive time minus its
receives x T(s).  The finding needs every receiving rank to receive from few peers
(neighbours: at most NEIGHBOURS), at least STEPS receives per rank, the waiting at
least SHARE of the wall time, and spread over the chain: at least SPREAD of the
receiving ranks wait at least SHARE / 2 of their own wall time (one slow rank makes
only its neighbours wait: rule 5's imbalance, not a pipeline).
"""

from __future__ import annotations

from ...units import fmt_time
from ..finding import Context, Finding

RULE = 9
RECEIVES = ("MPI_Recv", "MPI_Mrecv")
NEIGHBOURS = 4     # a pipeline's rank receives from its upstream neighbours only
STEPS = 10         # receives per rank: step after step
SHARE = 0.2        # waiting at or above this share of the wall time
SPREAD = 0.75      # share of the receiving ranks that must wait (a chain, not one slow rank)


def find(ctx: Context) -> list[Finding]:
    per = []
    for r in ctx.prof.ranks:
        fs = [r["functions"][n] for n in RECEIVES if n in r["functions"]]
        calls = sum(int(f.get("calls", 0)) for f in fs)
        if calls:
            peers = [p for p in r.get("peers", {}).get("recv", []) if int(p[1]) > 0]
            size = sum(int(f.get("bytes_recv", 0)) for f in fs) / calls
            per.append((r["rank"], sum(float(f.get("time_s", 0.0)) for f in fs), calls,
                        len(peers), ctx.model.msg(size), float(r["wall_s"])))
    if len(per) < 2 or not ctx.wall_s:
        return []
    if max(p[3] for p in per) > NEIGHBOURS or min(p[2] for p in per) < STEPS:
        return []
    waits = {p[0]: max(p[1] - p[2] * p[4], 0.0) for p in per}
    wait = sum(waits.values()) / ctx.nranks
    spread = sum(1 for p in per if waits[p[0]] >= SHARE / 2 * p[5]) / len(per)
    if wait < SHARE * ctx.wall_s or spread < SPREAD:
        return []
    transfer = sum(p[2] * p[4] for p in per) / sum(p[2] for p in per)
    steps = sum(p[2] for p in per) / len(per)
    worst = max(waits, key=lambda k: (waits[k], -k))
    return [Finding(
        rule=RULE, key="pipeline", title="Pipeline: ranks wait for their upstream neighbour",
        what=(f"{len(per)} ranks receive from at most {max(p[3] for p in per)} neighbours in "
              f"blocking receives, {steps:g} per rank; {fmt_time(wait)} per rank "
              f"({ctx.pct(wait):.1f} % of the wall time) is waiting beyond the transfer "
              f"(the model's {fmt_time(transfer)} per receive); {100 * spread:.0f} % of them "
              f"wait; rank {worst} waits most ({fmt_time(waits[worst])})"),
        why=("each step a rank cannot start before its upstream neighbour has finished its "
             "own: the pipeline fills and drains every sweep, and the wait is the "
             "upstream ranks' computation, not the network"),
        change=("pipeline in smaller pieces (split each step's work into blocks and send "
                "each block as soon as it is done, so the downstream rank starts earlier); "
                "post MPI_Irecv ahead and overlap; or reorder the sweep (hyperplane / "
                "red-black ordering) so ranks do not wait on one another (code change)"),
        gain_s=wait, gain_pct=ctx.pct(wait),
        gain_note="upper bound: no rank waits beyond the transfer (a perfect pipeline)",
        confidence="medium",
        confidence_why=("measured per-rank receive times; the transfer from the model "
                        "(small beside the waiting)"),
        basis={"profile": [f"{', '.join(RECEIVES)}: per-rank time_s, calls, bytes_recv",
                           "rank lines: peers.recv"],
               "model": [ctx.model.describe(), "T(s) = L + g(s) per receive"],
               "assumptions": ["a receive of a rank's mean size costs T(s) beyond waiting"]},
        network=False,
        figures={"wait_s": wait, "transfer_per_receive_s": transfer, "waits_s": waits,
                 "receives_per_rank": steps, "worst_rank": worst, "spread": spread})]
