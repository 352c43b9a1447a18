"""Rule 4, placement: a rank-to-node mapping that cuts the point-to-point bytes between
nodes, from the peer matrix (rank lines' peers.sent) and each rank's host.

Each host keeps its number of ranks.  Starting from the job's own mapping, the swap of
two ranks on different hosts that lowers the inter-node bytes most is made, until no
swap lowers them (Kernighan-Lin's pair swaps, exact integer bytes; ties: lowest ranks).
The change is an Open MPI rankfile or an MPICH/Intel MPI machine file (one host per rank
in rank order), and a --map-by / -ppn line when the mapping is in blocks.
"""

from __future__ import annotations

import itertools

from ...report.commpattern import matrix, pairs_of
from ...units import fmt_bytes, fmt_time
from ..finding import Context, Finding
from ..nodes import hosts_of, sent
from .latency import p2p_functions

RULE = 4
# the swap search stops after this many pair evaluations (a work bound, not a time:
# the same profile gets the same advice however loaded the machine is); a few seconds
SEARCH_PAIRS = 5_000_000
SHOWN_LINES = 16  # rankfile lines shown in the text (all in the JSON)


def inter_bytes(pairs: dict[tuple[int, int], int], node: list[str]) -> int:
    return sum(w for (a, b), w in pairs.items() if node[a] != node[b])


def improve(pairs: dict[tuple[int, int], int], node: list[str],
            work: int = SEARCH_PAIRS) -> tuple[list[str], bool]:
    """Pair swaps between hosts while one lowers the inter-node bytes: the mapping, and
    whether the search was cut short after `work` pair evaluations.  Ranks without
    traffic are interchangeable: the lowest of each host stands for its host's.

    Swapping i and j changes the inter-node bytes by
    delta = own(i) - to(i, host j) + own(j) - to(j, host i) + 2 w(i, j), where to(i, h)
    is i's bytes with ranks on host h and own(i) = to(i, host i) >= 0: only a pair where
    one has traffic with the other's host can lower them.  Those pairs are the ones
    evaluated (each once), and the best is the one a sweep over every pair finds: the
    lowest delta, ties to the lowest (i, j)."""
    n = len(node)
    adj: list[dict[int, int]] = [{} for _ in range(n)]
    for (a, b), w in pairs.items():
        adj[a][b] = adj[b][a] = w
    node = list(node)
    busy = sorted(i for i in range(n) if adj[i])
    tot = [sum(a.values()) for a in adj]  # own(i) of a rank whose traffic stays on its host
    left = work

    def conn(i: int) -> dict[str, int]:
        """i's bytes per host (to(i, h))."""
        out: dict[str, int] = {}
        for k, w in adj[i].items():
            out[node[k]] = out.get(node[k], 0) + w
        return out

    while True:
        idle: dict[str, int] = {}
        for i in range(n):
            if not adj[i]:
                idle.setdefault(node[i], i)
        cand = sorted(busy + list(idle.values()))
        on: dict[str, list[int]] = {}  # the candidates per host, in rank order
        for i in cand:
            on.setdefault(node[i], []).append(i)
        # to(i, h) of the ranks with traffic to another host (the others: tot, on theirs)
        left -= len(busy)
        to = {i: c for i in busy if len(c := conn(i)) > 1 or node[i] not in c}
        best: tuple[int, int, int] | None = None
        for i, ti in to.items():
            hi = node[i]
            own_i = ti.get(hi, 0)
            for h in ti:
                if h == hi:
                    continue
                for j in on[h]:
                    tj = to.get(j)
                    if tj is not None and tj.get(hi, 0) and j < i:
                        continue  # evaluated from j's side (j also has bytes on i's host)
                    left -= 1
                    if left < 0:
                        return node, True
                    own_j, j_hi = (tj.get(h, 0), tj.get(hi, 0)) if tj is not None else (tot[j], 0)
                    delta = own_i - ti[h] + own_j - j_hi + 2 * adj[i].get(j, 0)
                    a, b = (i, j) if i < j else (j, i)
                    if delta < 0 and (best is None or (delta, a, b) < best):
                        best = (delta, a, b)
        if best is None:
            return node, False
        _, i, j = best
        node[i], node[j] = node[j], node[i]


def rankfile(node: list[str], flavour: str) -> tuple[str, str]:
    """(file name, content): Open MPI rankfile, or a hydra machine file in rank order."""
    if flavour == "openmpi":
        slot: dict[str, int] = {}
        lines = []
        for r, h in enumerate(node):
            lines.append(f"rank {r}={h} slot={slot.get(h, 0)}")
            slot[h] = slot.get(h, 0) + 1
        return "rankfile", "\n".join(lines) + "\n"
    return "machinefile", "".join(f"{h}:1\n" for h in node)


def blocks(node: list[str]) -> int | None:
    """k when ranks 0..k-1 share a host, k..2k-1 the next, ...; else None."""
    runs = [1]
    for a, b in itertools.pairwise(node):
        if a == b:
            runs[-1] += 1
        else:
            runs.append(1)
    hosts_in_order = [node[0]] + [b for a, b in itertools.pairwise(node) if a != b]
    if len(set(hosts_in_order)) != len(hosts_in_order) or len(set(runs[:-1])) > 1 \
            or runs[-1] > runs[0]:
        return None
    return runs[0]


def moved_time(ctx: Context, before: list[str], after: list[str]) -> tuple[float, int, int]:
    """Model time per rank saved by the new mapping: messages that become intra-node save
    T(s) - T_intra(s), those that become inter-node cost it (s: the pair's mean message
    size; T_intra from the model's intra-node class, else 0: shared memory taken as free).
    Also the messages moved each way."""
    saved, into, out = 0.0, 0, 0
    for a, peer, msgs, nbytes in sent(ctx):
        was, now = before[a] != before[peer], after[a] != after[peer]
        if was == now:
            continue
        s = nbytes / msgs
        t = msgs * (ctx.model.msg(s) - (ctx.model.intra.msg(s) if ctx.model.intra else 0.0))
        saved += t if was else -t
        into, out = (into + msgs, out) if was else (into, out + msgs)
    return saved / ctx.nranks, into, out


def find(ctx: Context) -> list[Finding]:
    node = hosts_of(ctx)
    if len(set(node)) < 2:
        return []
    m = matrix(ctx.prof)
    if m is None:
        return []
    pairs = pairs_of(m)
    before = inter_bytes(pairs, node)
    nm = ctx.prof.header.get("nodes", {}).get("matrix_bytes")
    # the node matrix of the profile (issue 18's view) holds the same bytes, summed by node
    recorded = sum(v for i, row in enumerate(nm) for j, v in enumerate(row) if i != j) \
        if nm else None
    after_map, cut = improve(pairs, node)
    after = inter_bytes(pairs, after_map)
    if after >= before:
        return []
    gain, into, out = moved_time(ctx, node, after_map)
    name, content = rankfile(after_map, ctx.flavour)
    k = blocks(after_map)
    order = list(dict.fromkeys(after_map))
    if ctx.flavour == "openmpi":
        args = ["--rankfile", "{rankfile}"]
        alt = (f"; or, with the hosts in the order {', '.join(order)}: mpirun --map-by "
               f"ppr:{k}:node ..." if k else "")
    else:
        args = ["-f", "{rankfile}"]
        alt = (f"; or, with the hosts in the order {', '.join(order)}: mpiexec -ppn {k} ..."
               if k else "")
    shown = content.splitlines()
    text = "; ".join(shown[:SHOWN_LINES]) + ("; ..." if len(shown) > SHOWN_LINES else "")
    moved = sum(1 for a, b in zip(node, after_map) if a != b)
    total = sum(pairs.values())
    return [Finding(
        rule=RULE, key="placement", title="Placement: heavy pairs split across nodes",
        what=(f"{fmt_bytes(before)} of {fmt_bytes(total)} point-to-point bytes "
              f"({100 * before / total:.1f} %) cross nodes with the job's mapping "
              f"({len(set(node))} hosts); another mapping of the same ranks per host, "
              f"moving {moved} ranks, leaves {fmt_bytes(after)} ({100 * after / total:.1f} %)"),
        why=(f"{into:,} messages become intra-node and {out:,} inter-node: the model's time for "
             f"them{'' if ctx.model.intra else ', shared memory taken as free,'} is "
             f"{fmt_time(gain)} per rank less"),
        change=(f"{'mpirun' if ctx.flavour == 'openmpi' else 'mpiexec'} "
                f"{' '.join(args).replace('{rankfile}', 'FILE')} ..., FILE holding: {text}{alt}"),
        gain_s=gain, gain_pct=ctx.pct(gain),
        gain_note=("per rank: messages that become intra-node x (T(s) - T_intra(s)) - those "
                   "that become inter-node x the same"
                   + ("" if ctx.model.intra else
                      "; T_intra = 0 (no intra-node class in the model): an upper bound")),
        confidence="medium" if ctx.model.intra else "low",
        confidence_why=("inter-node bytes before and after are exact (the profile's peers); "
                        + ("the time uses the model's intra- and inter-node classes"
                           if ctx.model.intra else
                           "the time assumes intra-node messages cost nothing")),
        basis={"profile": ["rank lines: host and peers.sent of every rank",
                           f"inter-node bytes {before} before, {after} after",
                           *([f"header nodes.matrix_bytes: {recorded} bytes between nodes"]
                             if recorded is not None else [])],
               "model": [ctx.model.describe(), "T(s) = L + g(s) per message moved"],
               "assumptions": [("point-to-point traffic only (collectives' node traffic is "
                               "not in the peer matrix)"),
                               *([] if ctx.model.intra else ["intra-node messages cost nothing"]),
                               "each host keeps its number of ranks",
                               *([(f"the swap search was cut short after {SEARCH_PAIRS:,} "
                                   "pair evaluations: a better mapping may exist")]
                                 if cut else [])]},
        apply={"env": {}, "launcher_args": args, "files": {"rankfile": content}},
        target=p2p_functions(ctx),
        figures={"inter_bytes_before": before, "inter_bytes_after": after,
                 "inter_bytes_node_matrix": recorded,
                 "total_bytes": total, "mapping_before": node, "mapping_after": after_map,
                 "ranks_moved": moved, "blocks": k, "file": name, "content": content,
                 "search_cut": cut})]
