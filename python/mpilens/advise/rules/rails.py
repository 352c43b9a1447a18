"""Rule 1, rails / bandwidth (seed 004's question, per application): how much of the
time goes to moving bytes between nodes, and what 2x and 4x the network bandwidth
(more rails) would give.

Inter-node point-to-point flows (rank lines: host and peers.sent) whose mean message
size s reaches the bandwidth crossover (the model's latency crossover: g(s) - g(0) >=
L + g(0)) are bandwidth-bound.  Their bandwidth part is B(s) = g(s) - g(0); k times the
bandwidth divides it by k, so the gain is sum messages x B(s) x (1 - 1/k), per rank.
"""

from __future__ import annotations

from ...units import fmt_bytes, fmt_time
from ..finding import Context, Finding
from ..nodes import flows, hosts_of

RULE = 1
FACTORS = (2, 4)


def find(ctx: Context) -> list[Finding]:
    if len(set(hosts_of(ctx))) < 2:
        return []
    model = ctx.model
    cross = model.latency_crossover()
    crossover = float(cross if cross is not None else model.sizes[-1])
    inter = flows(ctx, inter=True)
    msgs_all = sum(f[2] for f in inter)
    big = [(msgs, nbytes) for _, _, msgs, nbytes in inter if nbytes / msgs >= crossover]
    if not big:
        return []
    msgs_big = sum(m for m, _ in big)
    bytes_big = sum(b for _, b in big)
    big_sizes = [(m, b / m) for m, b in big]
    g0 = model.gap(0)
    band = sum(m * (model.gap(s) - g0) for m, s in big_sizes) / ctx.nranks
    total = sum(m * model.msg(s) for m, s in big_sizes) / ctx.nranks
    gains = {k: band * (1 - 1 / k) for k in FACTORS}
    share = 100 * total / ctx.mpi_s if ctx.mpi_s > 0 else 0.0
    one_host_model = len(set(model.hosts)) == 1
    return [Finding(
        rule=RULE, key="rails", title="Rails: inter-node bandwidth",
        what=(f"{msgs_big:,} of {msgs_all:,} inter-node point-to-point messages "
              f"({fmt_bytes(bytes_big)}) are at or above the bandwidth crossover "
              f"{fmt_bytes(crossover)}"),
        why=(f"the model gives them {fmt_time(total)} per rank ({share:.1f} % of the time in "
             f"MPI), {fmt_time(band)} of it moving bytes (g(s) - g(0)); 2x bandwidth saves "
             f"{fmt_time(gains[2])}, 4x {fmt_time(gains[4])}"),
        change=("more network bandwidth per rank: a second rail striped by the MPI (Open MPI "
                "TCP: --mca btl_tcp_if_include <if0>,<if1>; UCX: UCX_NET_DEVICES=<dev0>,<dev1>"
                " UCX_MAX_RNDV_RAILS=2), or fewer ranks per node sharing the link"),
        gain_s=gains[2], gain_pct=ctx.pct(gains[2]),
        gain_note=(f"2x bandwidth: messages x (g(s) - g(0)) x 1/2 = {fmt_time(gains[2])}; "
                   f"4x: x 3/4 = {fmt_time(gains[4])} ({ctx.pct(gains[4]):.1f} %); per rank"),
        confidence="low" if one_host_model else "medium",
        confidence_why=("the model was measured within one node, not across the network"
                        if one_host_model else
                        "inter-node messages and sizes from the peers; the time from the "
                        "model of the network (point-to-point only)"),
        basis={"profile": ["rank lines: host and peers.sent (inter-node flows, mean sizes)",
                           f"mpi_s.mean {ctx.mpi_s:.6g} s"],
               "model": [model.describe(), f"bandwidth crossover {crossover:g} B",
                         "B(s) = g(s) - g(0) divided by k with k x bandwidth"],
               "assumptions": ["a flow's messages have its mean size",
                               "latency L and g(0) do not change with more rails",
                               "collectives' inter-node traffic is not counted"]},
        figures={"crossover_bytes": crossover, "messages": msgs_big,
                 "inter_messages": msgs_all, "bytes": bytes_big, "model_s": total,
                 "bandwidth_s": band, "gain_2x_s": gains[2], "gain_4x_s": gains[4],
                 "share_of_mpi_pct": share})]
