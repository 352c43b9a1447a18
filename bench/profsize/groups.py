#!/usr/bin/env python3
"""What the bytes of a compressed rank line are spent on (issue 29, bytes per rank).

For each rank line of each profile given (plain or gzip-compressed), the line is
compressed alone as the runtime does with MPILENS_COMPRESS_GROUP=1 (zlib level 9,
one gzip member per rank line: runtime/core/profile_gzip.c; the default groups 16
ranks' lines in one member: --blocks, --block-keys), then again without each key group; a group's cost is
the difference (its marginal compressed bytes, so the groups need not add up to the
whole). Groups: every top-level key, and inside `functions` the histograms
(hist_send/hist_recv), node_span, p2p_intra/inter_node; inside `timeline` each of
calls/time_s/bytes.

  bench/profsize/groups.py PROFILE... [--json OUT] [--blocks 1,2,4,8,16,32,64]
      [--block-keys G] [--no-keys] [--peers N] [--own-line BYTES]

Prints per profile the mean over rank lines: plain bytes, compressed bytes, and each
group's plain and marginal compressed bytes. --blocks: the rank lines compressed in
blocks of G consecutive ranks as the runtime does with MPILENS_COMPRESS_GROUP=G (one
gzip member per block, level 9, the lines streamed in rank order; zlib's output does
not depend on how the input is cut, so this is byte for byte the runtime's member),
for each G: bytes per rank, and what the block's first rank spends: CPU seconds of
its largest block (best of 3) and the bytes it holds (its largest line plus the
largest member; --own-line changes the runtime's 64 KB). --block-keys G: each key
group's marginal bytes per rank when the lines are compressed in blocks of G (what
is left to shrink under MPILENS_COMPRESS_GROUP=G). --peers N first gives every rank line N synthetic peers sent to and
N received from (ranks r+1.. and r-1.. of 100,000, 10-15 messages and 800 B-800 KB
each, seeded): a rank with many peers, whose line is about N x 36 B. Reads nothing
but the files given.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def gz_len(text: str) -> int:
    """Bytes of text (plus its newline) as one gzip member at level 9."""
    c = zlib.compressobj(9, zlib.DEFLATED, 15 + 16, 8)
    return len(c.compress((text + "\n").encode()) + c.flush())


def dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"))


def lines_of(path: Path) -> list[str]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode().splitlines()


def member_sizes(path: Path) -> list[int]:
    """The compressed size of each gzip member of a compressed profile (header first),
    as written; [] for a plain profile."""
    data = path.read_bytes()
    sizes: list[int] = []
    while data[:2] == b"\x1f\x8b":
        d = zlib.decompressobj(31)
        d.decompress(data)
        rest = d.unused_data
        sizes.append(len(data) - len(rest))
        data = rest
    return sizes


def _drop_fn_keys(keys: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    def f(r: dict[str, Any]) -> None:
        for v in r.get("functions", {}).values():
            for k in keys:
                v.pop(k, None)
    return f


def _drop_tl(key: str) -> Callable[[dict[str, Any]], None]:
    def f(r: dict[str, Any]) -> None:
        r.get("timeline", {}).pop(key, None)
    return f


SUBGROUPS: dict[str, Callable[[dict[str, Any]], None]] = {
    "functions: hist_send+hist_recv": _drop_fn_keys(("hist_send", "hist_recv")),
    "functions: node_span": _drop_fn_keys(("node_span",)),
    "functions: p2p_intra/inter_node": _drop_fn_keys(("p2p_intra_node", "p2p_inter_node")),
    "functions: time_min_s+time_max_s": _drop_fn_keys(("time_min_s", "time_max_s")),
    "timeline: calls": _drop_tl("calls"),
    "timeline: time_s": _drop_tl("time_s"),
    "timeline: bytes": _drop_tl("bytes"),
}


def widen(line: str, n: int) -> str:
    """line with n synthetic peers each way (--peers)."""
    r = json.loads(line)
    rng = random.Random(r.get("rank", 0))
    rank = int(r.get("rank", 0))

    def peers(sign: int) -> list[list[int]]:
        return [[(rank + sign * k) % 100000, 10 + rng.randint(0, 5), 8 * rng.randint(100, 100000)]
                for k in range(1, n + 1)]
    r["peers"] = {"sent": peers(1), "recv": peers(-1)}
    return dump(r)


OWN_LINE = 64 * 1024  # runtime/core/profile_gzip.c ML_GZ_OWN_LINE


def block_members(block: list[bytes], own_line: int = OWN_LINE) -> tuple[list[bytes], list[bytes]]:
    """A block's lines as the runtime cuts them into members: a line over OWN_LINE a
    member of its own (compressed by its rank), runs of the others one member each
    (compressed by the block's first rank).  (members of the leader, members of their
    own ranks), each member's text."""
    lead: list[bytes] = []
    own: list[bytes] = []
    run: list[bytes] = []
    for ln in block:
        if len(ln) > own_line:
            if run:
                lead.append(b"".join(run))
                run = []
            own.append(ln)
        else:
            run.append(ln)
    if run:
        lead.append(b"".join(run))
    return lead, own


def block_sizes(lines: list[bytes], g: int, own_line: int = OWN_LINE) -> dict[str, float]:
    """The rank lines (each with its newline) in blocks of g consecutive lines as
    runtime/core/profile_gzip.c's ml_gzip_block cuts them (block_members), each member
    at level 9: bytes per rank, the leader's CPU seconds for its most expensive block
    (best of 3; the lines over OWN_LINE are their own ranks' work) and its bytes held
    (its largest plain line plus the block's output)."""
    total, cpu, held = 0, 0.0, 0
    for k in range(0, len(lines), g):
        block = lines[k:k + g]
        lead, own = block_members(block, own_line)
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            outs = [gz_bytes(m) for m in lead]
            best = min(best, time.process_time() - t0)
        out = sum(len(o) for o in outs) + sum(len(gz_bytes(m)) for m in own)
        total += out
        cpu = max(cpu, best)
        held = max(held, max((len(ln) for ln in block if len(ln) <= own_line), default=0) + out)
    return {"bytes_per_rank": total / len(lines), "leader_cpu_s": cpu, "leader_bytes": held}


def gz_bytes(text: bytes) -> bytes:
    """text as one gzip member at level 9 (the same bytes however the input is cut)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 15 + 16, 8)
    return c.compress(text) + c.flush()


def block_keys(lines: list[str], g: int) -> dict[str, float]:
    """group -> marginal compressed bytes per rank with the lines in blocks of g;
    "line" the whole."""
    rows = [json.loads(ln) for ln in lines]

    def size(rs: list[dict[str, Any]]) -> float:
        raw = [(dump(r) + "\n").encode() for r in rs]
        return block_sizes(raw, g)["bytes_per_rank"]

    whole = size(rows)
    out = {"line": whole}
    for k in dict.fromkeys(k for r in rows for k in r):
        out[k] = whole - size([{kk: vv for kk, vv in r.items() if kk != k} for r in rows])
    for name, drop in SUBGROUPS.items():
        rs = copy.deepcopy(rows)
        for r in rs:
            drop(r)
        out[name] = whole - size(rs)
    return out


def measure(line: str) -> dict[str, tuple[int, int]]:
    """group -> (plain bytes, marginal compressed bytes); "line" the whole."""
    r = json.loads(line)
    whole = gz_len(line)
    out = {"line": (len(line) + 1, whole)}
    for k in r:
        rest = {kk: vv for kk, vv in r.items() if kk != k}
        out[k] = (len(line) - len(dump(rest)), whole - gz_len(dump(rest)))
    for name, drop in SUBGROUPS.items():
        r2 = copy.deepcopy(r)
        drop(r2)
        s = dump(r2)
        if len(s) != len(line):
            out[name] = (len(line) - len(s), whole - gz_len(s))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument("--blocks", default="", help="comma-separated block sizes G (see above)")
    ap.add_argument("--no-keys", action="store_true", help="skip the key groups (--blocks only)")
    ap.add_argument("--block-keys", type=int, default=0, metavar="G",
                    help="key groups' marginal bytes per rank in blocks of G (see above)")
    ap.add_argument("--peers", type=int, default=0, help="N synthetic peers per line (see above)")
    ap.add_argument("--own-line", type=int, default=OWN_LINE,
                    help="--blocks: lines longer than this are compressed by their own rank "
                         "(the runtime's 65536; larger: what the leader would do without that rule)")
    args = ap.parse_args()
    blocks = [int(g) for g in args.blocks.split(",") if g.strip()]
    report: dict[str, Any] = {}
    for p in args.profiles:
        lines = lines_of(p)
        if args.peers:
            lines = lines[:1] + [widen(ln, args.peers) for ln in lines[1:] if ln.strip()]
        head = json.loads(lines[0])
        raw = [(ln + "\n").encode() for ln in lines[1:] if ln.strip()]
        ranks = [measure(ln) for ln in lines[1:] if ln.strip()] if not args.no_keys else \
            [{"line": (len(ln), gz_len(ln.decode()[:-1]))} for ln in raw]
        keys = list(dict.fromkeys(k for m in ranks for k in m))
        mean = {k: (sum(m.get(k, (0, 0))[0] for m in ranks) / len(ranks),
                    sum(m.get(k, (0, 0))[1] for m in ranks) / len(ranks)) for k in keys}
        whole = mean["line"][1]
        print(f"{p}: {len(ranks)} ranks, {head.get('command', '')[:60]}")
        members = member_sizes(p)
        if members:
            print(f"  as written: header {members[0]} B, rank lines {sum(members[1:])} B in "
                  f"{len(members) - 1} members, {sum(members[1:]) / max(1, len(ranks)):.0f} B per rank")
        print(f"  rank line: {mean['line'][0]:.0f} B plain, {whole:.0f} B compressed "
              f"(min {min(m['line'][1] for m in ranks)}, max {max(m['line'][1] for m in ranks)})")
        for k in sorted(keys[1:], key=lambda k: -mean[k][1]):
            print(f"  {k:36s} {mean[k][0]:8.0f} B plain {mean[k][1]:7.0f} B compressed "
                  f"({100 * mean[k][1] / whole:4.1f} %)")
        by_block = {g: block_sizes(raw, g, args.own_line) for g in blocks}
        for g, v in by_block.items():
            print(f"  blocks of {g:5d}: {v['bytes_per_rank']:7.0f} B per rank, leader "
                  f"{1e3 * v['leader_cpu_s']:8.3f} ms CPU, {v['leader_bytes']:9d} B held")
        bk = block_keys([ln for ln in lines[1:] if ln.strip()], args.block_keys) \
            if args.block_keys else {}
        if bk:
            print(f"  in blocks of {args.block_keys}: {bk['line']:.0f} B per rank; "
                  + ", ".join(f"{k} {v:.0f}" for k, v in sorted(bk.items(), key=lambda kv: -kv[1])
                              if k != "line" and v >= 20))
        report[str(p)] = {"nranks": len(ranks), "groups": mean, "block_keys": bk,
                          "header_gz": gz_len(lines[0]), "header_plain": len(lines[0]) + 1,
                          "members_as_written": members,
                          "blocks": {str(g): v for g, v in by_block.items()}}
    if args.json:
        args.json.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}"
                                                 for k, v in report.items()) + "\n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
