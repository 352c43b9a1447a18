"""The header's totals checked against the rank lines (docs/profile-format.md).

The header's per-function `calls`, `bytes_sent`, `bytes_recv` and `time_s` are sums
over ranks, reduced by the runtime at MPI_Finalize; the rank lines hold each rank's
own figures.  They must agree: counts exactly, times within TIME_RTOL (the reduction
adds the ranks' times in another order).  When they do not, the report says so: the
header's totals are wrong (MPICH 4.0.2's MPI_Reduce of >= 1000 uint64 values dropped
rank 0's share when rank 0 was alone on its node, pmodels/mpich issue 6893; mpilens
since reduces without that pattern) or the file was edited.
"""

from __future__ import annotations

from typing import Any

from ..units import fmt_time
from .profile import Profile

TIME_RTOL = 1e-6
TIME_ATOL = 1e-9
SHOWN = 3


def check(prof: Profile) -> dict[str, Any] | None:
    """{"ok", "mismatches": [{function, field, header, rank_lines}]}; None without rank
    lines (nothing to check against) and for a partial profile (its header is made from
    the rank lines by the reader)."""
    if not prof.ranks or prof.partial is not None:
        return None
    sums = prof.columns().sums
    out = []
    for name in sorted(set(prof.functions) | set(sums)):
        h = prof.functions.get(name, {})
        c, bs, br, t = sums.get(name, (0, 0, 0, 0.0))
        for key, got in (("calls", c), ("bytes_sent", bs), ("bytes_recv", br)):
            want = int(h.get(key, 0))
            if want != got:
                out.append({"function": name, "field": key, "header": want, "rank_lines": got})
        ht = float(h.get("time_s", 0.0))
        if abs(ht - t) > TIME_ATOL + TIME_RTOL * max(abs(ht), abs(t)):
            out.append({"function": name, "field": "time_s", "header": ht, "rank_lines": t})
    return {"ok": not out, "mismatches": out}


def sentence(res: dict[str, Any]) -> str:
    """One line for the report: what differs, the first few values."""
    def show(m: dict[str, Any]) -> str:
        f = fmt_time if m["field"] == "time_s" else (lambda v: f"{v:,}")
        return f"{m['function']} {m['field']}: header {f(m['header'])}, rank lines {f(m['rank_lines'])}"

    mm = res["mismatches"]
    more = f", and {len(mm) - SHOWN} more" if len(mm) > SHOWN else ""
    return (f"Warning: the header's totals differ from the sums of the rank lines in "
            f"{len(mm)} value{'s' if len(mm) != 1 else ''} ("
            + "; ".join(show(m) for m in mm[:SHOWN]) + more
            + "). The function table shows the header; the rank lines are each rank's own "
            "record (a faulty MPI_Reduce, e.g. MPICH 4.0.2 issue 6893, or an edited file).")
