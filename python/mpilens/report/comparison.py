"""Two profiles side by side: per-function change and its share of the wall-time change.

Times are compared per rank (job total / ranks), so runs with different rank
counts compare fairly: a function's "explains" figure is its change in mean
per-rank time divided by the change in mean wall time.  Calls and bytes are
job totals.  Rows are sorted by the absolute change in per-rank time;
MPI_Init/Finalize, outside the wall-time window, come last and explain nothing.
"""

from __future__ import annotations

from typing import Any

from . import callsites
from .analysis import OUTSIDE
from .profile import Profile


def _rel(a: float, b: float) -> float | None:
    """Relative change in % (None when a is zero and b is not)."""
    if a == 0:
        return 0.0 if b == 0 else None
    return 100.0 * (b - a) / a


def compare(a: Profile, b: Profile) -> dict[str, Any]:
    wall_a, wall_b = float(a.header["wall_s"]["mean"]), float(b.header["wall_s"]["mean"])
    dwall = wall_b - wall_a
    rows = []
    for name in sorted(set(a.functions) | set(b.functions)):
        fa, fb = a.functions.get(name, {}), b.functions.get(name, {})
        ta = float(fa.get("time_s", 0.0)) / a.nranks
        tb = float(fb.get("time_s", 0.0)) / b.nranks
        row: dict[str, Any] = {"function": name, "time_a_s": ta, "time_b_s": tb,
                               "time_change_s": tb - ta, "time_change_pct": _rel(ta, tb),
                               "explains_pct": (100.0 * (tb - ta) / dwall
                                                if dwall and name not in OUTSIDE else None)}
        for key in ("calls", "bytes_sent", "bytes_recv"):
            va, vb = int(fa.get(key, 0)), int(fb.get(key, 0))
            row[f"{key}_a"], row[f"{key}_b"] = va, vb
            row[f"{key}_change"] = vb - va
            row[f"{key}_change_pct"] = _rel(va, vb)
        rows.append(row)
    rows.sort(key=lambda r: (r["function"] in OUTSIDE, -abs(r["time_change_s"]), r["function"]))
    return {
        "callsites": compare_callsites(a, b),
        "a": {"profile": str(a.path), "nranks": a.nranks, "wall_s": wall_a,
              "mpi_s": float(a.header["mpi_s"]["mean"])},
        "b": {"profile": str(b.path), "nranks": b.nranks, "wall_s": wall_b,
              "mpi_s": float(b.header["mpi_s"]["mean"])},
        "wall_change_s": dwall,
        "wall_change_pct": _rel(wall_a, wall_b),
        "functions": rows,
    }


def compare_callsites(a: Profile, b: Profile) -> list[dict[str, Any]]:
    """Call sites matched by function and source location (callsites.site_key); times
    per rank as for functions; largest change first."""
    sa = {callsites.site_key(r): r for r in callsites.callsite_rows(a)}
    sb = {callsites.site_key(r): r for r in callsites.callsite_rows(b)}
    rows = []
    for key in set(sa) | set(sb):
        ra, rb = sa.get(key, {}), sb.get(key, {})
        ta = float(ra.get("time_s", 0.0)) / a.nranks
        tb = float(rb.get("time_s", 0.0)) / b.nranks
        rows.append({"function": key[0], "location": key[1], "time_a_s": ta, "time_b_s": tb,
                     "time_change_s": tb - ta, "time_change_pct": _rel(ta, tb),
                     "calls_a": int(ra.get("calls", 0)), "calls_b": int(rb.get("calls", 0)),
                     "bytes_a": int(ra.get("bytes_sent", 0)) + int(ra.get("bytes_recv", 0)),
                     "bytes_b": int(rb.get("bytes_sent", 0)) + int(rb.get("bytes_recv", 0))})
    rows.sort(key=lambda r: (-abs(r["time_change_s"]), r["function"], r["location"]))
    return rows
