#!/usr/bin/env python3
"""What other rank-line encodings would weigh, compressed (issue 29, bytes per rank).

Each rank line of each profile given is re-encoded as a candidate format would write
it, compressed alone as the runtime does with MPILENS_COMPRESS_GROUP=1 (zlib level 9,
one gzip member per line; the default's blocks of 16: groups.py --blocks), and
the mean compressed bytes per rank printed next to the line as written. Nothing here
is a format mpilens reads: it sizes the candidates before anyone changes the format.

Lossless (the same information, rearranged):
  timeline_by_class  the time line as one column per class, all-zero classes left out
  timeline_delta     the same, its calls and bytes as differences from bin to bin
  omit_zero          a function's / call site's zero counts, bytes, histograms and
                     repro_calls left out, timed_calls left out when equal to calls
  sparse_hist        histograms as [bin, count] pairs of their non-zero bins
  one_site_dedupe    a call site that is its function's only one drops the counts,
                     time and histogram its function already has
  lossless_all       the four above together
  short_keys         every key renamed k0, k1, ... (what the key names cost)
Lossy (less information), for comparison:
  timeline_3_digits  time-line times with 3 significant digits instead of 4
  timeline_32_bins   the time line's bins merged in pairs (MPILENS_TIMELINE_BINS=32)

  bench/profsize/what_if.py PROFILE... [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from groups import dump, gz_len, lines_of

Line = dict[str, Any]
HIST_KEYS = ("hist_send", "hist_recv", "hist")
ZERO_KEYS = ("bytes_sent", "bytes_recv", "hist_send", "hist_recv", "hist", "repro_calls",
             "hist_send_bytes", "p2p_intra_node", "p2p_inter_node")


def _zero(v: Any) -> bool:
    if isinstance(v, list):
        return all(_zero(x) for x in v)
    return isinstance(v, (int, float)) and v == 0


def timeline_by_class(r: Line) -> Line:
    tl = r.get("timeline")
    if tl:
        for key in ("calls", "time_s", "bytes"):
            cols = {c: [row[j] for row in tl[key]] for j, c in enumerate(tl["classes"])}
            tl[key] = {c: col for c, col in cols.items() if not _zero(col)}
    return r


def timeline_delta(r: Line) -> Line:
    """timeline_by_class, each integer column (calls, bytes) as its first value then
    the differences from bin to bin."""
    r = timeline_by_class(r)
    tl = r.get("timeline")
    if tl:
        for key in ("calls", "bytes"):
            tl[key] = {c: col[:1] + [b - a for a, b in pairwise(col)]
                       for c, col in tl[key].items()}
    return r


def _records(r: Line) -> list[dict[str, Any]]:
    return [*r.get("functions", {}).values(), *r.get("callsites", [])]


def omit_zero(r: Line) -> Line:
    for rec in _records(r):
        for k in ZERO_KEYS:
            if k in rec and _zero(rec[k]):
                del rec[k]
        if rec.get("timed_calls") == rec.get("calls"):
            rec.pop("timed_calls", None)
    return r


def sparse_hist(r: Line) -> Line:
    for rec in _records(r):
        for k in HIST_KEYS:
            if isinstance(rec.get(k), list):
                rec[k] = [[i, v] for i, v in enumerate(rec[k]) if v]
    return r


def one_site_dedupe(r: Line) -> Line:
    sites = r.get("callsites", [])
    per: dict[str, int] = {}
    for cs in sites:
        per[cs["function"]] = per.get(cs["function"], 0) + 1
    for cs in sites:
        if per[cs["function"]] == 1:
            for k in ("calls", "timed_calls", "time_s", "bytes_sent", "bytes_recv", "hist"):
                cs.pop(k, None)
    return r


def lossless_all(r: Line) -> Line:
    return one_site_dedupe(sparse_hist(omit_zero(timeline_by_class(r))))


def short_keys(r: Line) -> Line:
    names: dict[str, str] = {}

    def walk(o: Any) -> Any:
        if isinstance(o, dict):
            return {names.setdefault(k, f"k{len(names)}"): walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v) for v in o]
        return o
    out: Line = walk(r)
    return out


def timeline_3_digits(r: Line) -> Line:
    tl = r.get("timeline")
    if tl:
        tl["time_s"] = [[float(f"{v:.3g}") for v in row] for row in tl["time_s"]]
    return r


def timeline_32_bins(r: Line) -> Line:
    tl = r.get("timeline")
    if tl:
        for key in ("calls", "time_s", "bytes"):
            rows = tl[key] + ([[0] * len(tl["classes"])] if len(tl[key]) % 2 else [])
            pairs = [[a + b for a, b in zip(rows[i], rows[i + 1])] for i in range(0, len(rows), 2)]
            tl[key] = [[float(f"{v:.4g}") for v in row] for row in pairs] if key == "time_s" \
                else pairs
        tl["bin_s"] *= 2
    return r


VARIANTS: dict[str, Callable[[Line], Line]] = {
    "timeline_by_class": timeline_by_class, "timeline_delta": timeline_delta,
    "omit_zero": omit_zero,
    "sparse_hist": sparse_hist, "one_site_dedupe": one_site_dedupe,
    "lossless_all": lossless_all, "short_keys": short_keys,
    "timeline_3_digits": timeline_3_digits, "timeline_32_bins": timeline_32_bins,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args()
    report: dict[str, dict[str, float]] = {}
    for p in args.profiles:
        lines = [ln for ln in lines_of(p)[1:] if ln.strip()]
        row = {"as_written": sum(gz_len(ln) for ln in lines) / len(lines)}
        for name, fn in VARIANTS.items():
            row[name] = sum(gz_len(dump(fn(json.loads(ln)))) for ln in lines) / len(lines)
        report[str(p)] = row
        base = row["as_written"]
        print(f"{p}: {len(lines)} ranks, {base:.0f} B per rank compressed")
        for name in VARIANTS:
            print(f"  {name:20s} {row[name]:7.0f} B ({row[name] - base:+5.0f}, "
                  f"{100 * (row[name] - base) / base:+5.1f} %)")
    if args.json:
        args.json.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}"
                                                 for k, v in report.items()) + "\n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
