"""Rule 6, shared memory versus network (seed 001: flat MPI or fewer ranks per node).

When most point-to-point bytes stay on their node and the model gives those messages
a notable share of the time in MPI, the ranks of a node pay message costs for data
that shared memory would hand over: fewer ranks per node with threads (MPI + OpenMP),
or MPI-3 shared-memory windows for the on-node exchange.
"""

from __future__ import annotations

from ...units import fmt_bytes, fmt_time
from ..finding import Context, Finding
from ..nodes import flows, nodes_of, p2p_split

RULE = 6
DOMINANT = 0.5   # share of point-to-point bytes on the node that makes it "the" traffic
NOTABLE = 0.10   # share of the time in MPI the model gives the on-node messages


def find(ctx: Context) -> list[Finding]:
    host = nodes_of(ctx)
    intra = flows(ctx, inter=False)
    inter = flows(ctx, inter=True)
    split = p2p_split(ctx)  # the profile's own split (equal to the peers' sums)
    b_intra, b_all = (split[0], sum(split)) if split else \
        (sum(f[3] for f in intra), sum(f[3] for f in intra + inter))
    if not b_all or b_intra < DOMINANT * b_all:
        return []
    model = ctx.model.intra or ctx.model  # the intra-node class when the file has one
    t_intra = sum(m * model.msg(b / m) for _, _, m, b in intra) / ctx.nranks
    if ctx.mpi_s <= 0 or t_intra < NOTABLE * ctx.mpi_s:
        return []
    # 2 threads per rank: ranks 2k and 2k+1 of one node become one process
    merged = [(m, b) for a, p, m, b in intra if a // 2 == p // 2 and host[a] == host[p]]
    t_merge = sum(m * model.msg(b / m) for m, b in merged) / ctx.nranks
    across_nodes = ctx.model.intra is None and len(set(model.hosts)) > 1
    per_node = max(ctx.prof.header.get("ranks_per_host", [ctx.nranks]) or [ctx.nranks])
    return [Finding(
        rule=RULE, key="shared-memory", title="Shared memory instead of on-node messages",
        what=(f"{fmt_bytes(b_intra)} of {fmt_bytes(b_all)} point-to-point bytes "
              f"({100 * b_intra / b_all:.1f} %) stay on their node "
              f"({sum(f[2] for f in intra):,} messages; up to {per_node} ranks per node)"),
        why=(f"the model gives the on-node messages {fmt_time(t_intra)} per rank "
             f"({100 * t_intra / ctx.mpi_s:.1f} % of the time in MPI); with 2 threads per rank "
             f"(ranks 2k and 2k+1 merged) {fmt_time(t_merge)} of it would be memory "
             f"accesses"),
        change=(f"fewer ranks per node with threads: OMP_NUM_THREADS=2 and half the ranks "
                f"(Open MPI --map-by ppr:{max(per_node // 2, 1)}:node:pe=2, hydra -ppn "
                f"{max(per_node // 2, 1)}), the program threaded (MPI + OpenMP); or MPI-3 "
                f"shared-memory windows (MPI_Win_allocate_shared) for the on-node exchange, "
                f"up to {fmt_time(t_intra)} (`mpilens bench halo` measures the two): a code "
                f"change"),
        gain_s=t_merge, gain_pct=ctx.pct(t_merge),
        gain_note=(f"2 threads per rank: the messages between ranks 2k and 2k+1 x T(s), per "
                   f"rank; shared-memory windows for every on-node message: at most "
                   f"{fmt_time(t_intra)} ({ctx.pct(t_intra):.1f} %)"),
        confidence="low" if across_nodes else "medium",
        confidence_why=("the model was measured across nodes: on-node messages are usually "
                        "cheaper, so the gain is an upper bound" if across_nodes else
                        "on-node flows from the peers, their time from a model measured "
                        "within one node; threading's own costs are not modelled"),
        basis={"profile": ["rank lines: node and peers.sent (on-node flows, mean sizes)",
                           *(["functions' p2p_intra_node / p2p_inter_node (the bytes)"]
                             if split else []),
                           f"mpi_s.mean {ctx.mpi_s:.6g} s"],
               "model": [model.describe(), "T(s) = L + g(s) per on-node message"],
               "assumptions": ["a merged pair's messages cost nothing (memory accesses)",
                               "the computation is as fast with threads",
                               "collectives' on-node traffic is not counted"]},
        network=True,
        figures={"intra_bytes": b_intra, "p2p_bytes": b_all, "intra_model_s": t_intra,
                 "merged_messages": sum(m for m, _ in merged), "gain_threads_s": t_merge})]
