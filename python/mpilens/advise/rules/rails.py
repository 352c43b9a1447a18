"""Rule 1, rails / bandwidth (seed 004's question, per application): how much of the
time goes to moving bytes between nodes, and what more network bandwidth (rails)
would give.

Counted: the inter-node point-to-point flows (rank lines: node and peers.sent), a
flow's messages taken to have its mean size s, and the collectives that ran on
communicators spanning nodes (`node_span.multi_node`), each call's send buffer of its
size class counted as one message between nodes.  Those whose size reaches the
bandwidth crossover (the model's latency crossover: g(s) - g(0) >= L + g(0)) are
bandwidth-bound.  A flow whose mean size is below the crossover may still carry large
messages among small ones (HPCC's b_eff: 8 B and 2 MB messages to the same peer): when
the senders' size histograms have classes on both sides of the crossover, the flow's
large messages are estimated from its bytes (`split_sizes`, `large_part`).  Their
bandwidth part is B(s) = g(s) - g(0); k times the bandwidth divides it by k, so the
gain is sum messages x B(s) x (1 - 1/k), per rank.  With
--rail-interfaces the change names those devices, k is their number, and `--check`
can apply it.
"""

from __future__ import annotations

from ...units import fmt_bytes, fmt_time
from ..finding import Context, Finding
from ..machine import rails_in_use
from ..nodes import flows, node_count, p2p_split, spanning_collectives
from .latency import p2p_functions, p2p_senders, representative

RULE = 1
FACTORS = (2, 4)
# the variables that choose the devices a job stripes over (`mpilens bench p2p --rails`
# sets the same): Open MPI's TCP BTL, and UCX (Open MPI's pml ucx, MPICH's ch4:ucx)
RAIL_VARIABLES = ("OMPI_MCA_btl_tcp_if_include", "UCX_NET_DEVICES")


def change_text(ctx: Context, k: int) -> tuple[str, dict | None]:
    """The change for the profile's MPI, and what --check applies (None: not applicable
    without naming the site's devices, or not by a variable)."""
    devs = ",".join(ctx.rails) if ctx.rails else "<dev0>,<dev1>"
    tail = ", or fewer ranks per node sharing the link"
    if ctx.flavour == "intelmpi":
        return (f"more network bandwidth per rank: {k} rails striped by Intel MPI "
                f"(I_MPI_MULTIRAIL=1 with a provider that stripes: FI_PROVIDER=psm3 or mlx; "
                f"the tcp provider uses one interface){tail}"), None
    if ctx.flavour == "mpich":
        text = (f"more network bandwidth per rank: {k} rails striped by UCX (MPICH ch4:ucx): "
                f"UCX_NET_DEVICES={devs} UCX_MAX_RNDV_RAILS={k}")
    else:
        text = (f"more network bandwidth per rank: {k} rails striped by the MPI: Open MPI's "
                f"TCP BTL OMPI_MCA_btl_tcp_if_include={devs} (mpirun --mca "
                f"btl_tcp_if_include {devs}); with pml ucx UCX_NET_DEVICES={devs} "
                f"UCX_MAX_RNDV_RAILS={k}")
    if not ctx.rails:
        return text + tail + " (name the devices with --rail-interfaces to --check it)", None
    return text + tail, {"env": {**dict.fromkeys(RAIL_VARIABLES, devs),
                                 "UCX_MAX_RNDV_RAILS": str(k)},
                         "launcher_args": [], "rails": list(ctx.rails)}


def split_sizes(ctx: Context, crossover: float) -> tuple[float, float] | None:
    """(small, large) message sizes of the point-to-point senders, over the job: large,
    the mean of the classes at or above the crossover (each class's messages at the
    size rule 2 takes for them: `representative`); small, the
    rest of the bytes over the rest of the messages.  None when the histograms do not
    have messages on both sides of the crossover."""
    n_big = n_all = 0.0
    b_big = b_all = 0.0
    for f in p2p_senders(ctx).values():
        hist = f["hist_send"]
        n_all += sum(hist)
        b_all += int(f.get("hist_send_bytes", f.get("bytes_sent", 0)))
        for b, count in enumerate(hist):
            s = representative(f, b) if count else 0.0
            if count and s >= crossover:
                n_big += count
                b_big += count * s
    if n_big == 0 or n_big >= n_all:
        return None
    large, small = b_big / n_big, max(b_all - b_big, 0.0) / (n_all - n_big)
    return (small, large) if small < large else None


def large_part(msgs: float, nbytes: float, sizes: tuple[float, float]) -> float:
    """The number k of a flow's messages that are large: its bytes as k large and
    msgs - k small messages (sizes), k within [0, msgs]."""
    small, large = sizes
    return min(max((nbytes - msgs * small) / (large - small), 0.0), msgs)


def find(ctx: Context) -> list[Finding]:
    if node_count(ctx) < 2 or rails_in_use(ctx.prof):
        return []  # one node; or the job already striped over two or more interfaces
    model = ctx.model
    cross = model.latency_crossover()
    crossover = float(cross if cross is not None else model.sizes[-1])
    inter = flows(ctx, inter=True)
    msgs_p2p = sum(f[2] for f in inter)
    big = [(float(msgs), nbytes / msgs) for _, _, msgs, nbytes in inter
           if nbytes / msgs >= crossover]
    sizes = split_sizes(ctx, crossover)
    mixed = [large_part(msgs, nbytes, sizes) for _, _, msgs, nbytes in inter
             if sizes and nbytes / msgs < crossover]
    mixed_text = ""
    if sizes and any(mixed):
        big.append((sum(mixed), sizes[1]))
        mixed_text = (f"; {sum(mixed):,.0f} of them estimated in flows whose mean size is "
                      f"below it (each flow's bytes as messages of {fmt_bytes(sizes[1])} and "
                      f"{fmt_bytes(sizes[0])}, the senders' sizes above and below it)")
    p2p_msgs_big = round(sum(m for m, _ in big))
    p2p_bytes_big = sum(m * s for m, s in big)
    colls: dict[str, float] = {}
    for name, f, share in spanning_collectives(ctx):
        for b, count in enumerate(f.get("hist_send", [])):
            s = representative(f, b) if count else 0.0
            if count and s >= crossover:
                big.append((count * share, s))
                colls[name] = colls.get(name, 0.0) + count * share
    if not big:
        return []
    g0 = model.gap(0)
    band = sum(m * (model.gap(s) - g0) for m, s in big) / ctx.nranks
    total = sum(m * model.msg(s) for m, s in big) / ctx.nranks
    k = len(ctx.rails) if ctx.rails else FACTORS[0]
    factors = sorted({*FACTORS, k})
    gains = {f: band * (1 - 1 / f) for f in factors}
    share = 100 * total / ctx.mpi_s if ctx.mpi_s > 0 else 0.0
    one_host_model = len(set(model.hosts)) == 1
    split = p2p_split(ctx)
    exact = (f" (the profile's split: {fmt_bytes(split[1])} of {fmt_bytes(sum(split))} "
             f"point-to-point bytes cross nodes)" if split else "")
    coll_text = ("; collectives on communicators spanning nodes, send buffers at or above it "
                 "(messages counted: the calls' hist_send): "
                 + ", ".join(f"{n} {c:,.0f}" for n, c in sorted(colls.items()))) if colls else ""
    change, apply = change_text(ctx, k)
    others = ", ".join(f"{f}x {fmt_time(g)} ({ctx.pct(g):.1f} %)" for f, g in gains.items()
                       if f != k)
    return [Finding(
        rule=RULE, key="rails", title="Rails: inter-node bandwidth",
        what=(f"{p2p_msgs_big:,} of {msgs_p2p:,} inter-node point-to-point messages "
              f"({fmt_bytes(p2p_bytes_big)}) are at or above the bandwidth crossover "
              f"{fmt_bytes(crossover)}{exact}{mixed_text}{coll_text}"),
        why=(f"the model gives them {fmt_time(total)} per rank ({share:.1f} % of the time in "
             f"MPI), {fmt_time(band)} of it moving bytes (g(s) - g(0)); "
             + "; ".join(f"{f}x bandwidth saves {fmt_time(g)}" for f, g in gains.items())),
        change=change,
        gain_s=gains[k], gain_pct=ctx.pct(gains[k]),
        gain_note=(f"{k}x bandwidth ({k} rails): messages x (g(s) - g(0)) x (1 - 1/{k}) = "
                   f"{fmt_time(gains[k])} per rank; {others}"),
        confidence="low" if one_host_model else "medium",
        confidence_why=("the model was measured within one node, not across the network"
                        if one_host_model else
                        "inter-node messages and sizes from the profile; the time from the "
                        "model of the network"),
        basis={"profile": ["rank lines: node and peers.sent (inter-node flows, mean sizes)",
                           *(["functions' p2p_intra_node / p2p_inter_node"] if split else []),
                           *(["collectives' node_span and hist_send"] if colls else []),
                           f"mpi_s.mean {ctx.mpi_s:.6g} s"],
               "model": [model.describe(), f"bandwidth crossover {crossover:g} B",
                         "B(s) = g(s) - g(0) divided by k with k x bandwidth"],
               "assumptions": [("a flow's messages have its mean size; a flow below the "
                                "crossover whose senders also sent messages above it: "
                                "its bytes as large and small messages of the senders' "
                                "sizes"),
                               ("the job and the model ran over one rail; k rails give k x "
                                "the bandwidth, L and g(0) unchanged"),
                               ("a collective call spanning nodes moves its send buffer "
                                "between nodes once per rank")]},
        apply=apply, target=sorted({*p2p_functions(ctx), *colls}),
        figures={"crossover_bytes": crossover, "messages": p2p_msgs_big,
                 "inter_messages": msgs_p2p, "bytes": p2p_bytes_big,
                 "split_messages": sum(mixed), "split_sizes": list(sizes) if sizes else None,
                 "collective_messages": colls, "model_s": total, "bandwidth_s": band,
                 "rails": k, "gain_2x_s": gains[2], "gain_4x_s": gains[4],
                 **({f"gain_{k}x_s": gains[k]} if k not in FACTORS else {}),
                 "p2p_split_bytes": list(split) if split else None,
                 "share_of_mpi_pct": share})]
