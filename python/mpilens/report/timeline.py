"""The time line (profile version 2, docs/profile-format.md): per rank, calls, MPI time
and bytes per function class in time bins from MPI_Init.

Ranks may have different bin widths (their bins merged a different number of times,
or their clocks were calibrated apart): every rank's bins are put on one grid whose
width is the widest, each bin into the grid bin holding its start, so counts and
bytes are kept exactly."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .profile import Profile, register_fold

SPARK = "▁▂▃▄▅▆▇█"


class _Timeline:
    """The time lines summed while the rank lines are read (the load-time view
    "timeline"): per group of ranks with the same bin width, bin count and classes,
    the sums per bin and class; per rank its bin width and MPI time per bin."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.groups: dict[tuple[float, int, tuple[str, ...]], dict[str, np.ndarray]] = {}
        self.rank_rows: list[tuple[float, np.ndarray] | None] = []

    def add(self, r: dict[str, Any]) -> None:
        tl = r.get("timeline")
        if not tl:
            self.rank_rows.append(None)
            return
        w, nb = float(tl["bin_s"]), len(tl["calls"])
        key = (w, nb, tuple(tl["classes"]))
        t = np.array(tl["time_s"], dtype=np.float64).reshape(nb, len(key[2]))
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = {
                "calls": np.zeros((nb, len(key[2])), dtype=np.uint64),
                "time_s": np.zeros((nb, len(key[2])), dtype=np.float64),
                "bytes": np.zeros((nb, len(key[2])), dtype=np.uint64)}
        g["calls"] += np.array(tl["calls"], dtype=np.uint64).reshape(t.shape)
        g["time_s"] += t
        g["bytes"] += np.array(tl["bytes"], dtype=np.uint64).reshape(t.shape)
        self.rank_rows.append((w, t.sum(axis=1)))

    def result(self) -> dict[str, Any] | None:
        if not self.groups:
            return None
        width = max(w for w, _, _ in self.groups)
        span = max(w * nb for w, nb, _ in self.groups)
        n = max(1, math.ceil(span / width - 1e-9))
        names = list(next(iter(self.groups))[2])
        sums = {k: np.zeros((len(names), n), dtype=np.float64 if k == "time_s" else object)
                for k in ("calls", "time_s", "bytes")}
        for k in ("calls", "bytes"):
            sums[k][:] = 0
        for (w, nb, classes), g in self.groups.items():
            grid = np.minimum(n - 1, (np.arange(nb) * w / width + 1e-9).astype(np.int64))
            for c in range(min(len(names), len(classes))):
                for k in sums:
                    col = g[k][:, c]
                    if k == "time_s":
                        np.add.at(sums[k][c], grid, col)
                    else:
                        for i, gi in enumerate(grid.tolist()):
                            sums[k][c][gi] += int(col[i])
        frac = np.zeros((len(self.rank_rows), n), dtype=np.float64)
        cache: dict[tuple[float, int], np.ndarray] = {}
        for i, row in enumerate(self.rank_rows):
            if row is None:
                continue
            w, t = row
            grid = cache.get((w, len(t)))
            if grid is None:
                grid = cache[(w, len(t))] = np.minimum(
                    n - 1, (np.arange(len(t)) * w / width + 1e-9).astype(np.int64))
            np.add.at(frac[i], grid, t)
        frac = np.minimum(1.0, frac / width)
        classes = [{"class": name, "calls": [int(x) for x in sums["calls"][c]],
                    "time_s": [float(x) for x in sums["time_s"][c]],
                    "bytes": [int(x) for x in sums["bytes"][c]]}
                   for c, name in enumerate(names)]
        return {"bin_s": width, "nbins": n, "classes": classes, "mpi_fraction": frac}


register_fold("timeline", _Timeline)


def has_timeline(prof: Profile) -> bool:
    return prof.folded("timeline") is not None


def timeline(prof: Profile) -> dict[str, Any] | None:
    """Per class and grid bin, sums over ranks; per rank and grid bin, the fraction of
    the bin spent in MPI (the heat map: an array ranks x bins).  None without time lines."""
    tl = prof.folded("timeline")
    return None if tl is None else dict(tl)


def as_json(tl: dict[str, Any] | None) -> dict[str, Any] | None:
    """The time line with its heat map as lists (JSON)."""
    if tl is None:
        return None
    return {**tl, "mpi_fraction": np.asarray(tl["mpi_fraction"]).tolist()}


def binned_fraction(frac: np.ndarray, rows: int = 256) -> tuple[np.ndarray, int]:
    """The heat map with at most `rows` rows: the mean over consecutive ranks (and
    how many ranks a row holds)."""
    p = frac.shape[0]
    per = max(1, math.ceil(p / rows))
    if per == 1:
        return frac, 1
    pad = (-p) % per
    full = np.vstack([frac, np.full((pad, frac.shape[1]), np.nan)]) if pad else frac
    return np.nanmean(full.reshape(-1, per, frac.shape[1]), axis=1), per


def sparkline(values: list[float]) -> str:
    peak = max(values) if values else 0
    if peak <= 0:
        return " " * len(values)
    return "".join(" " if v <= 0 else SPARK[min(len(SPARK) - 1, int(v / peak * len(SPARK)))]
                   for v in values)
