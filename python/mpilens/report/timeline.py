"""The time line (profile version 2, docs/profile-format.md): per rank, calls, MPI time
and bytes per function class in time bins from MPI_Init.

Ranks may have different bin widths (their bins merged a different number of times,
or their clocks were calibrated apart): every rank's bins are put on one grid whose
width is the widest, each bin into the grid bin holding its start, so counts and
bytes are kept exactly."""

from __future__ import annotations

import math
from typing import Any

from .profile import Profile

SPARK = "▁▂▃▄▅▆▇█"


def has_timeline(prof: Profile) -> bool:
    return any("timeline" in r for r in prof.ranks)


def _grid(prof: Profile) -> tuple[float, int]:
    width = max(float(r["timeline"]["bin_s"]) for r in prof.ranks if "timeline" in r)
    span = max(float(r["timeline"]["bin_s"]) * len(r["timeline"]["calls"])
               for r in prof.ranks if "timeline" in r)
    return width, max(1, math.ceil(span / width - 1e-9))


def timeline(prof: Profile) -> dict[str, Any] | None:
    """Per class and grid bin, sums over ranks; per rank and grid bin, the fraction of
    the bin spent in MPI (the heat map).  None without time lines."""
    if not has_timeline(prof):
        return None
    width, n = _grid(prof)
    names: list[str] = next(r["timeline"]["classes"] for r in prof.ranks if "timeline" in r)
    sums = {k: [[0 if k != "time_s" else 0.0] * n for _ in names]
            for k in ("calls", "time_s", "bytes")}
    frac = []
    for r in prof.ranks:
        row = [0.0] * n
        tl = r.get("timeline")
        if tl:
            w = float(tl["bin_s"])
            for i in range(len(tl["calls"])):
                g = min(n - 1, int(i * w / width + 1e-9))
                for c in range(len(names)):
                    for k in sums:
                        sums[k][c][g] += tl[k][i][c]
                row[g] += sum(tl["time_s"][i])
        frac.append([min(1.0, t / width) for t in row])
    classes = [{"class": name, "calls": sums["calls"][c], "time_s": sums["time_s"][c],
                "bytes": sums["bytes"][c]} for c, name in enumerate(names)]
    return {"bin_s": width, "nbins": n, "classes": classes, "mpi_fraction": frac}


def sparkline(values: list[float]) -> str:
    peak = max(values) if values else 0
    if peak <= 0:
        return " " * len(values)
    return "".join(" " if v <= 0 else SPARK[min(len(SPARK) - 1, int(v / peak * len(SPARK)))]
                   for v in values)
