"""Point-to-point traffic by node, from the rank lines: each rank's host and its
peers.sent ([peer, messages, bytes]).  Ranks with the same host name are one node."""

from __future__ import annotations

from collections.abc import Iterator

from .finding import Context


def hosts_of(ctx: Context) -> list[str]:
    return [str(r["host"]) for r in ctx.prof.ranks]


def sent(ctx: Context) -> Iterator[tuple[int, int, int, int]]:
    """(rank, peer, messages, bytes) of every point-to-point flow between two ranks."""
    for r in ctx.prof.ranks:
        for peer, msgs, nbytes in r.get("peers", {}).get("sent", []):
            if peer != r["rank"] and msgs:
                yield r["rank"], int(peer), int(msgs), int(nbytes)


def flows(ctx: Context, inter: bool) -> list[tuple[int, int, int, int]]:
    """The flows between ranks on different hosts (inter) or on the same host."""
    host = hosts_of(ctx)
    return [f for f in sent(ctx) if (host[f[0]] != host[f[1]]) == inter]
