#!/usr/bin/env python3
"""What the bytes of a compressed rank line are spent on (issue 29, bytes per rank).

For each rank line of each profile given (plain or gzip-compressed), the line is
compressed alone as the runtime does it (zlib level 9, one gzip member per rank line:
runtime/core/profile_gzip.c), then again without each key group; a group's cost is
the difference (its marginal compressed bytes, so the groups need not add up to the
whole). Groups: every top-level key, and inside `functions` the histograms
(hist_send/hist_recv), node_span, p2p_intra/inter_node; inside `timeline` each of
calls/time_s/bytes.

  bench/profsize/groups.py PROFILE... [--json OUT]

Prints per profile the mean over rank lines: plain bytes, compressed bytes, and each
group's plain and marginal compressed bytes. Reads nothing but the files given.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import sys
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
    args = ap.parse_args()
    report: dict[str, Any] = {}
    for p in args.profiles:
        lines = lines_of(p)
        head = json.loads(lines[0])
        ranks = [measure(ln) for ln in lines[1:] if ln.strip()]
        keys = list(dict.fromkeys(k for m in ranks for k in m))
        mean = {k: (sum(m.get(k, (0, 0))[0] for m in ranks) / len(ranks),
                    sum(m.get(k, (0, 0))[1] for m in ranks) / len(ranks)) for k in keys}
        whole = mean["line"][1]
        print(f"{p}: {len(ranks)} ranks, {head.get('command', '')[:60]}")
        members = member_sizes(p)
        if members:
            print(f"  as written: header {members[0]} B, rank lines {sum(members[1:])} B, "
                  f"{sum(members[1:]) / max(1, len(members) - 1):.0f} B per rank")
        print(f"  rank line: {mean['line'][0]:.0f} B plain, {whole:.0f} B compressed "
              f"(min {min(m['line'][1] for m in ranks)}, max {max(m['line'][1] for m in ranks)})")
        for k in sorted(keys[1:], key=lambda k: -mean[k][1]):
            print(f"  {k:36s} {mean[k][0]:8.0f} B plain {mean[k][1]:7.0f} B compressed "
                  f"({100 * mean[k][1] / whole:4.1f} %)")
        report[str(p)] = {"nranks": len(ranks), "groups": mean,
                          "header_gz": gz_len(lines[0]), "header_plain": len(lines[0]) + 1,
                          "members_as_written": members}
    if args.json:
        args.json.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}"
                                                 for k, v in report.items()) + "\n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
