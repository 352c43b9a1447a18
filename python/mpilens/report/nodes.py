"""The node-level view of a profile: point-to-point traffic within and across
nodes, the node x node matrix's heaviest pairs, and which collectives span nodes
(docs/profile-format.md, "Nodes").

Plain data, as analysis.py: the terminal report, the JSON output and the HTML
report show the same values.  Counts and bytes come from the profile unchanged
(the sent side: every message is counted once, by its sender).
"""

from __future__ import annotations

from typing import Any

from ..units import fmt_bytes
from . import spread
from .jsonout import Records
from .profile import Profile

HEAVIEST_PAIRS = 5


def _split(fn: dict[str, Any]) -> tuple[list[int], list[int]]:
    return (list(fn.get("p2p_intra_node", [0, 0, 0, 0])),
            list(fn.get("p2p_inter_node", [0, 0, 0, 0])))


def node_view(prof: Profile) -> dict[str, Any] | None:
    """None for a profile without node fields (written before they existed)."""
    nodes = prof.header.get("nodes")
    if not isinstance(nodes, dict):
        return None
    hosts = [str(h) for h in prof.header.get("hosts", [])]
    functions = []
    for name, fn in sorted(prof.functions.items()):
        if "p2p_intra_node" not in fn and "p2p_inter_node" not in fn:
            continue
        intra, inter = _split(fn)
        functions.append({"function": name, "intra_msgs": intra[0], "intra_bytes": intra[1],
                          "inter_msgs": inter[0], "inter_bytes": inter[1]})
    intra_b = sum(f["intra_bytes"] for f in functions)
    inter_b = sum(f["inter_bytes"] for f in functions)
    total = intra_b + inter_b
    span0 = {"one_node": 0, "multi_node": 0, "max_nodes": 0, "max_ranks_per_node": 0}
    collectives = [{"function": name, **span0, **fn["node_span"]}
                   for name, fn in sorted(prof.functions.items()) if "node_span" in fn]
    per_rank = None
    if prof.ranks:  # one row per rank, kept as columns (jsonout.Records)
        t = prof.columns()
        node = [None if x < 0 else x for x in t.node.tolist()]
        per_rank = Records(("rank", "node", "intra_msgs", "intra_bytes", "inter_msgs",
                            "inter_bytes"), [range(t.n), node, *t.p2p[:, :4].T])
    return {
        "count": int(nodes.get("count", len(hosts))),
        "hosts": hosts,
        "ranks_per_host": list(prof.header.get("ranks_per_host", [])),
        "p2p_bytes": total, "p2p_inter_bytes": inter_b,
        "p2p_inter_pct": 100.0 * inter_b / total if total else 0.0,
        "functions": functions,
        "heaviest_pairs": heaviest_pairs(nodes, hosts),
        "collectives": collectives,
        "ranks": per_rank,
        "matrix_bytes": nodes.get("matrix_bytes"),
        "matrix_msgs": nodes.get("matrix_msgs"),
        # above 256 nodes the header holds no matrix: its non-zero cells from the rank lines
        "pairs": (spread.node_pairs(prof) if "matrix_bytes" not in nodes else None),
    }


def heaviest_pairs(nodes: dict[str, Any], hosts: list[str], top: int = HEAVIEST_PAIRS
                   ) -> list[dict[str, Any]]:
    """Node pairs (both directions together) by bytes, the heaviest first; ties by node."""
    mb, mm = nodes.get("matrix_bytes"), nodes.get("matrix_msgs")
    if not mb or not mm:
        return []
    n = len(mb)
    pairs = []
    for i in range(n):
        for j in range(i + 1, n):
            b = mb[i][j] + mb[j][i]
            if b or mm[i][j] + mm[j][i]:
                pairs.append({"a": hosts[i] if i < len(hosts) else str(i),
                              "b": hosts[j] if j < len(hosts) else str(j),
                              "bytes": b, "msgs": mm[i][j] + mm[j][i]})
    pairs.sort(key=lambda p: -p["bytes"])
    return pairs[:top]


def cross_sentence(view: dict[str, Any]) -> str:
    """'x % of point-to-point bytes cross nodes' with its figures."""
    if view["count"] <= 1:
        return (f"One node ({view['hosts'][0] if view['hosts'] else 'unknown'}): "
                f"all {fmt_bytes(view['p2p_bytes'])} of point-to-point bytes stay within it.")
    return (f"{view['p2p_inter_pct']:.1f} % of point-to-point bytes cross nodes "
            f"({fmt_bytes(view['p2p_inter_bytes'])} of {fmt_bytes(view['p2p_bytes'])}, "
            f"{view['count']} nodes).")


def collectives_sentence(view: dict[str, Any]) -> str:
    cross = [c["function"] for c in view["collectives"] if c["multi_node"]]
    if not view["collectives"]:
        return "No collective with data was recorded."
    if not cross:
        return "Every collective ran on communicators within one node."
    return "Collectives across nodes: " + ", ".join(cross) + "."
