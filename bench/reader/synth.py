#!/usr/bin/env python3
"""Synthesize an N-rank mpilens profile from a real one (docs/scale.md).

    python3 bench/reader/synth.py REAL.prof N OUT.prof [--per-node 32] [--seed 1] [--gzip]

Rank i of the output is a copy of rank r = i mod P0 of the real profile
(P0 ranks) with:

- `rank` i, `host` "n%05d" and `node` i // per-node (per-node ranks per node,
  default 32), `pid` 100000 + i;
- every peer p of rank r moved by the same offset: (i + p - r) mod N, so a
  ring / halo structure of the real job stays a ring / halo of N ranks;
- its times (wall_s, mpi_s, each function's time_s, time_min_s, time_max_s)
  scaled by a factor drawn once per rank from {0.8, 0.9, 1.0, 1.1, 1.25} and,
  for one rank in 1000 (never rank 0), 3.0: a spread of MPI time with a few
  outliers (seeded, reproducible).

Everything else of the rank line (call sites, regions, time line,
communicators) is copied as it is.  The header is the real one with `nranks`,
`hosts`, `ranks_per_host`, `wall_s`, `mpi_s` and the `functions` aggregates
recomputed from the lines written (sums, min / mean / max over ranks); its
`topologies` are dropped (they name P0 ranks) and so is the `nodes` matrix
above 256 nodes (the writer leaves it out there too).  The node split of the
point-to-point counters (`p2p_intra_node`, `p2p_inter_node`) is copied from
the real rank, not recomputed for the new placement.

Rank lines are built by joining pre-serialised pieces, so 100,000 ranks take
seconds, not minutes, and written as they are made (1,000,000 ranks in
little memory).  `--gzip` writes the layout of a compressed profile
(docs/profile-format.md): the header one gzip member, then one member per block
of `--group` consecutive rank lines (default 16, as MPILENS_COMPRESS_GROUP;
1: a member per line, the layout before blocks), zlib level 9 as the runtime.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import zlib
from typing import Any

FACTORS = (0.8, 0.9, 1.0, 1.1, 1.25)
OUTLIER = 3.0
OUTLIER_EVERY = 1000
TIME_KEYS = ("time_s", "time_min_s", "time_max_s")


def read(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with open(path, "rb") as raw:
        opener = gzip.open if raw.read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:  # type: ignore[operator]
        lines = [ln for ln in f.read().split("\n") if ln.strip()]
    header = json.loads(lines[0])
    ranks = [json.loads(ln) for ln in lines[1:]]
    if not ranks:
        sys.exit("synth: the real profile has no rank lines (MPILENS_DETAIL=off)")
    return header, ranks


def scaled_functions(funcs: dict[str, Any], k: float) -> dict[str, Any]:
    out = {}
    for name, f in funcs.items():
        g = dict(f)
        for key in TIME_KEYS:
            if key in g:
                g[key] = g[key] * k
        out[name] = g
    return out


class Agg:
    """Header aggregates of the lines written."""

    def __init__(self) -> None:
        self.funcs: dict[str, dict[str, Any]] = {}
        self.wall: list[float] = [float("inf"), 0.0, 0.0]  # min, sum, max
        self.mpi: list[float] = [float("inf"), 0.0, 0.0]

    def add(self, rank: int, line_funcs: dict[str, Any], wall: float, mpi: float) -> None:
        for acc, v in ((self.wall, wall), (self.mpi, mpi)):
            acc[0] = min(acc[0], v)
            acc[1] += v
            acc[2] = max(acc[2], v)
        for name, f in line_funcs.items():
            a = self.funcs.setdefault(name, {
                "calls": 0, "time_s": 0.0, "time_min_s": float("inf"), "time_max_s": 0.0,
                "rt": [float("inf"), 0.0, -1.0, 0], "cpr": [None, 0],
                "bytes_sent": 0, "bytes_recv": 0, "hist_send": [0] * 25,
                "hist_recv": [0] * 25, "hist_send_bytes": 0, "repro_calls": 0,
                "p2p_intra_node": [0, 0, 0, 0], "p2p_inter_node": [0, 0, 0, 0],
                "has": set()})
            c = int(f.get("calls", 0))
            t = float(f.get("time_s", 0.0))
            a["calls"] += c
            a["time_s"] += t
            if "time_min_s" in f:
                a["time_min_s"] = min(a["time_min_s"], f["time_min_s"])
            a["time_max_s"] = max(a["time_max_s"], f.get("time_max_s", 0.0))
            rt = a["rt"]
            rt[0] = min(rt[0], t)
            rt[1] += t
            if t > rt[2]:
                rt[2], rt[3] = t, rank
            cpr = a["cpr"]
            cpr[0] = c if cpr[0] is None else min(cpr[0], c)
            cpr[1] = max(cpr[1], c)
            for key in ("bytes_sent", "bytes_recv", "hist_send_bytes", "repro_calls"):
                a[key] += int(f.get(key, 0))
            for key in ("hist_send", "hist_recv", "p2p_intra_node", "p2p_inter_node"):
                if key in f:
                    a["has"].add(key)
                    a[key] = [x + int(y) for x, y in zip(a[key], f[key])]
            if "node_span" in f:
                a["node_span"] = f["node_span"]

    def header_functions(self, nranks: int, real: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for name, a in sorted(self.funcs.items()):
            rt = a["rt"]
            rec: dict[str, Any] = {
                "calls": a["calls"], "time_s": a["time_s"],
                "time_min_s": a["time_min_s"] if a["time_min_s"] != float("inf") else 0.0,
                "time_max_s": a["time_max_s"],
                # ranks that never called it count as 0 in the writer's min and mean
                "rank_time_s": {"min": rt[0], "mean": rt[1] / nranks, "max": rt[2],
                                "max_rank": rt[3]},
                "calls_per_rank": {"min": a["cpr"][0], "max": a["cpr"][1]},
                "bytes_sent": a["bytes_sent"], "bytes_recv": a["bytes_recv"],
                "hist_send_bytes": a["hist_send_bytes"], "repro_calls": a["repro_calls"],
            }
            for key in ("hist_send", "hist_recv", "p2p_intra_node", "p2p_inter_node"):
                if key in a["has"]:
                    rec[key] = a[key]
            if "node_span" in a:
                rec["node_span"] = a["node_span"]
            if "caution" in real.get(name, {}):
                rec["caution"] = real[name]["caution"]
            out[name] = rec
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real")
    ap.add_argument("nranks", type=int)
    ap.add_argument("out")
    ap.add_argument("--per-node", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gzip", action="store_true",
                    help="compressed: the header a member, then a member per --group lines")
    ap.add_argument("--group", type=int, default=16,
                    help="rank lines per gzip member with --gzip (default 16)")
    a = ap.parse_args(argv)
    if a.group < 1:
        ap.error("--group: one rank line or more")
    header, real = read(a.real)
    p0, n = len(real), a.nranks
    rng = random.Random(a.seed)
    # pre-serialised pieces: per (template rank, factor) the functions and the rest
    variants: dict[tuple[int, float], tuple[str, dict[str, Any], float, float]] = {}
    for r, line in enumerate(real):
        rest = {k: v for k, v in line.items()
                if k not in ("rank", "host", "node", "pid", "wall_s", "mpi_s", "threads",
                             "functions", "peers")}
        rest_js = json.dumps(rest, separators=(",", ":"))[1:-1]
        for k in FACTORS + (OUTLIER,):
            funcs = scaled_functions(line["functions"], k)
            js = (f',"wall_s":{line["wall_s"] * k!r},"mpi_s":{line["mpi_s"] * k!r},'
                  f'"threads":{line.get("threads", 1)},'
                  f'"functions":{json.dumps(funcs, separators=(",", ":"))}')
            variants[(r, k)] = (js + ("," + rest_js if rest_js else ""), funcs,
                                line["wall_s"] * k, line["mpi_s"] * k)
    # the factors first (the same draws as ever), so the header's aggregates are
    # known before the lines are written: the lines are streamed, not kept
    # (1,000,000 heat2d lines are 7 GB)
    picks = bytearray(n)  # index into KS of each rank's factor
    ks = FACTORS + (OUTLIER,)
    out_i = len(FACTORS)
    agg = Agg()
    for i in range(n):
        k = OUTLIER if i and rng.randrange(OUTLIER_EVERY) == 0 else rng.choice(FACTORS)
        picks[i] = out_i if k == OUTLIER else FACTORS.index(k)
        _, funcs, wall, mpi = variants[(i % p0, k)]
        agg.add(i, funcs, wall, mpi)

    def lines(lo: int, hi: int) -> bytes:
        chunk = []
        for i in range(lo, hi):
            r = i % p0
            js = variants[(r, ks[picks[i]])][0]
            node = i // a.per_node
            peers = real[r].get("peers", {})
            sent = [[(i + p - r) % n, m, b] for p, m, b in peers.get("sent", [])]
            recv = [[(i + p - r) % n, m, b] for p, m, b in peers.get("recv", [])]
            chunk.append(f'{{"rank":{i},"host":"n{node:05d}","node":{node},'
                         f'"pid":{100000 + i}{js},'
                         f'"peers":{{"sent":{json.dumps(sent, separators=(",", ":"))},'
                         f'"recv":{json.dumps(recv, separators=(",", ":"))}}}}}\n')
        return "".join(chunk).encode()

    nnodes = (n + a.per_node - 1) // a.per_node
    h = dict(header)
    h.pop("topologies", None)
    h["topologies_dropped"] = 0
    h["nranks"] = n
    h["hosts"] = [f"n{j:05d}" for j in range(nnodes)]
    h["ranks_per_host"] = [min(a.per_node, n - j * a.per_node) for j in range(nnodes)]
    h["wall_s"] = {"min": agg.wall[0], "mean": agg.wall[1] / n, "max": agg.wall[2]}
    h["mpi_s"] = {"min": agg.mpi[0], "mean": agg.mpi[1] / n, "max": agg.mpi[2]}
    h["functions"] = agg.header_functions(n, header.get("functions", {}))
    if "nodes" in h:
        h["nodes"] = {"count": nnodes}  # the matrix of the real job does not apply
    head = (json.dumps(h, separators=(",", ":")) + "\n").encode()
    with open(a.out, "wb") as out:
        if a.gzip:
            def member(b: bytes) -> bytes:
                c = zlib.compressobj(9, zlib.DEFLATED, 31)
                return c.compress(b) + c.flush()
            out.write(member(head))
            g = a.group
            for lo in range(0, n, g):
                out.write(member(lines(lo, min(n, lo + g))))
        else:
            out.write(head)
            step = 4096
            for lo in range(0, n, step):
                out.write(lines(lo, min(n, lo + step)))
    print(json.dumps({"ranks": n, "from_ranks": p0, "bytes": os.path.getsize(a.out),
                      "out": a.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
