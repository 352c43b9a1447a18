"""Traffic by node, from the profile's node-level view (docs/profile-format.md, Nodes):
each rank line's `node` (older profiles: ranks with the same `host` are one node), the
flows of its peers.sent ([peer, messages, bytes]), the per-function split of
point-to-point traffic (`p2p_intra_node` / `p2p_inter_node`) and the collectives'
`node_span`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .finding import Context


def hosts_of(ctx: Context) -> list[str]:
    if not ctx.prof.ranks:
        return []
    t = ctx.prof.columns()
    return [t.hosts[h] for h in t.host.tolist()]


def nodes_of(ctx: Context) -> list[str]:
    """Each rank's node: its `node` index when the profile has one (issue 18's view),
    else its host name; two ranks are on one node when these are equal."""
    if not ctx.prof.ranks:
        return []
    t = ctx.prof.columns()
    return [f"node{n}" if n >= 0 else t.hosts[h]
            for n, h in zip(t.node.tolist(), t.host.tolist())]


def node_count(ctx: Context) -> int:
    return int(ctx.prof.header.get("nodes", {}).get("count", 0)) or len(set(nodes_of(ctx)))


def sent(ctx: Context) -> Iterator[tuple[int, int, int, int]]:
    """(rank, peer, messages, bytes) of every point-to-point flow between two ranks."""
    if not ctx.prof.ranks:
        return
    t = ctx.prof.columns()  # the peers.sent triples, in rank order
    keep = (t.peer_src != t.peer_dst) & (t.peer_msgs > 0)
    yield from zip(t.peer_src[keep].tolist(), t.peer_dst[keep].tolist(),
                   t.peer_msgs[keep].tolist(), t.peer_bytes[keep].tolist())


def flows(ctx: Context, inter: bool) -> list[tuple[int, int, int, int]]:
    """The flows between ranks on different nodes (inter) or on the same node."""
    node = nodes_of(ctx)
    return [f for f in sent(ctx) if (node[f[0]] != node[f[1]]) == inter]


def p2p_split(ctx: Context) -> tuple[int, int] | None:
    """(bytes sent on the node, bytes sent between nodes) summed over the functions'
    p2p_intra_node / p2p_inter_node; None for a profile without them."""
    fns = [f for f in ctx.functions().values() if "p2p_inter_node" in f]
    if not fns:
        return None
    return (sum(int(f["p2p_intra_node"][1]) for f in fns),
            sum(int(f["p2p_inter_node"][1]) for f in fns))


def spanning_collectives(ctx: Context) -> list[tuple[str, dict[str, Any], float]]:
    """(name, function, share of its calls on communicators spanning nodes) of the
    collectives with data that ran on such communicators (`node_span.multi_node`)."""
    out = []
    for name, f in ctx.functions().items():
        span = f.get("node_span")
        if not span or not span.get("multi_node"):
            continue
        calls = int(span.get("one_node", 0)) + int(span["multi_node"])
        out.append((name, f, int(span["multi_node"]) / calls))
    return out
