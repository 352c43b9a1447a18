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

from .jsonout import Rows
from .profile import Profile, register_fold

SPARK = "▁▂▃▄▅▆▇█"


class _Timeline:
    """The time lines summed while the rank lines are read (the load-time view
    "timeline"): per group of ranks with the same bin width, bin count and classes,
    the sums per bin and class; per rank its MPI time per bin.

    Lines are folded in batches (numpy converts a batch's lists in one call).  The
    loader (profile.load) also has a batch's values checked here, with numpy
    (`check`): a batch that is not plainly in range is checked line by line, and the
    first bad value raised with the exact checker's message (validate.py)."""

    BATCH = 256

    def __init__(self, header: dict[str, Any]) -> None:
        self.groups: dict[tuple[float, int, tuple[str, ...]], dict[str, Any]] = {}
        self.count = 0  # rank lines seen (a line without a time line keeps a zero row)
        self.pending: list[tuple[int, dict[str, Any], bool]] = []
        self.checker: Any = None  # set by the loader: check each batch (validate._Checker)

    def add(self, r: dict[str, Any], plain: bool = True) -> None:
        """Fold rank line r's time line (plain: the line holds no JSON true/false that
        numpy could take for a count, see profile._rank_line)."""
        tl = r.get("timeline")
        if tl:
            self.pending.append((self.count, tl, plain))
            if len(self.pending) >= self.BATCH:
                self.flush()
        self.count += 1

    def flush(self) -> None:
        """Check (when the loader asks) and fold the pending time lines."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        groups = _arrays(pending, self.checker is not None)
        if groups is None:  # not plainly in range: line by line, the first bad value raised
            _check_lines(self.checker, pending)
            groups = _arrays(pending, False)
            assert groups is not None
        for key, ranks, calls, t, nbytes in groups:
            self.fold_group(key, ranks, calls, t, nbytes)

    def fold_group(self, key: tuple[float, int, tuple[str, ...]], ranks: np.ndarray,
                   calls: np.ndarray, t: np.ndarray, nbytes: np.ndarray) -> None:
        """Fold one batch's time lines of one group (ranks x bins x classes arrays; also
        called by the fast path, report/fastread.py, with the same batches)."""
        g = self.groups.get(key)
        if g is None:
            nb, width = key[1], len(key[2])
            g = self.groups[key] = {
                "calls": np.zeros((nb, width), dtype=np.uint64),
                "time_s": np.zeros((nb, width), dtype=np.float64),
                "bytes": np.zeros((nb, width), dtype=np.uint64),
                "ranks": [], "rows": []}
        g["calls"] += calls.sum(axis=0, dtype=np.uint64)
        g["time_s"] += t.sum(axis=0, dtype=np.float64)
        g["bytes"] += nbytes.sum(axis=0, dtype=np.uint64)
        g["ranks"].append(ranks)
        g["rows"].append(t.sum(axis=2, dtype=np.float64))

    def result(self) -> dict[str, Any] | None:
        self.flush()
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
        frac = np.zeros((self.count, n), dtype=np.float64)
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
            onto = np.zeros((nb, n), dtype=np.float64)  # grid bin of each of the group's bins
            onto[np.arange(nb), grid] = 1.0
            for ranks, rows in zip(g["ranks"], g["rows"]):
                frac[ranks] += rows @ onto
        with np.errstate(over="ignore"):  # a damaged profile's huge times: capped at 1 anyway
            frac = np.minimum(1.0, frac / width)
        classes = [{"class": name, "calls": [int(x) for x in sums["calls"][c]],
                    "time_s": [float(x) for x in sums["time_s"][c]],
                    "bytes": [int(x) for x in sums["bytes"][c]]}
                   for c, name in enumerate(names)]
        return {"bin_s": width, "nbins": n, "classes": classes, "mpi_fraction": frac}


Group = tuple[tuple[float, int, tuple[str, ...]], np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _arrays(pending: list[tuple[int, dict[str, Any], bool]], check: bool) -> list[Group] | None:
    """Per (bin width, bins, classes): the ranks and their calls, times and bytes as
    arrays (ranks x bins x classes).  check: None unless every value is plainly in
    range (numpy's own reading of the lists: counts int64 >= 0, times finite >= 0)."""
    from .validate import timeline_shape_ok

    by_key: dict[tuple[float, int, tuple[str, ...]], list[tuple[int, dict[str, Any]]]] = {}
    for i, tl, plain in pending:
        if check and (not plain or timeline_shape_ok(tl) is None):
            return None
        key = (float(tl["bin_s"]), len(tl["calls"]), tuple(tl["classes"]))
        by_key.setdefault(key, []).append((i, tl))
    out: list[Group] = []
    for key, items in by_key.items():
        shape = (len(items), key[1], len(key[2]))
        got = []
        for k in ("calls", "time_s", "bytes"):
            rows = [tl[k] for _, tl in items]
            if check:
                try:
                    a = np.array(rows)
                except (ValueError, OverflowError):  # ragged, or beyond numpy's integers
                    return None
                if a.shape != shape or not _plainly_in_range(a, k == "time_s"):
                    return None
            else:
                a = np.array(rows, dtype=np.float64 if k == "time_s" else np.uint64)
                a = a.reshape(shape)
            got.append(a)
        out.append((key, np.array([i for i, _ in items], dtype=np.int64), *got))
    return out


def _plainly_in_range(a: np.ndarray, times: bool) -> bool:
    if a.dtype == np.int64:
        return bool(a.size == 0 or a.min() >= 0)
    if times and a.dtype == np.float64:
        return bool(a.size == 0 or (a.min() >= 0 and np.isfinite(a).all()))
    return False


def _check_lines(checker: Any, pending: list[tuple[int, dict[str, Any], bool]]) -> None:
    """Raise the first bad time line of a batch (rank order) with the checker's message."""
    from .validate import _timeline_ok

    for i, tl, _ in pending:
        if not _timeline_ok(tl):
            checker.timeline(f"rank {i} timeline", tl)  # raises, naming the value


register_fold("timeline", _Timeline)


def has_timeline(prof: Profile) -> bool:
    return prof.folded("timeline") is not None


def timeline(prof: Profile) -> dict[str, Any] | None:
    """Per class and grid bin, sums over ranks; per rank and grid bin, the fraction of
    the bin spent in MPI (the heat map: an array ranks x bins).  None without time lines."""
    tl = prof.folded("timeline")
    return None if tl is None else dict(tl)


def as_json(tl: dict[str, Any] | None) -> dict[str, Any] | None:
    """The time line with its heat map as a sequence of lists (JSON: report/jsonout.py
    writes its rows without making them all)."""
    if tl is None:
        return None
    return {**tl, "mpi_fraction": Rows(np.asarray(tl["mpi_fraction"]))}


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
