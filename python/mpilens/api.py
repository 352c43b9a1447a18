"""The Python API: a profile's tables as pandas DataFrames (docs/api.md).

    import mpilens
    p = mpilens.load("mpilens-1234.prof.gz")
    p.functions.sort_values("time_s", ascending=False).head()

`load(path)` reads a profile (or a partial profile's directory) as the CLI does and
returns a `Profile` whose tables are built on first use from the same rows the
CLI's views print (`mpilens report --format json`): `functions`, `ranks`,
`callsites`, `peers`, `timeline`, `regions`, `communicators`.  pandas is needed
for the tables only (`pip install pandas` into the Python that runs mpilens: mpilens
is not on PyPI, so pip cannot fetch an extra of it from there); `to_hatchet()`
gives the call sites as a Hatchet GraphFrame (`pip install llnl-hatchet`, mpilens.llnl).

Column names are those of the JSON report: units and percentages as suffixes
(`time_s`, `bytes_sent`, `mpi_pct`).  Sizes stay linear in ranks and peers with
traffic: the peer table is one row per (rank, direction, peer) that exchanged
messages, never a dense rank x rank matrix.
"""

from __future__ import annotations

import sys
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .report import analysis, callsites, comms, ranks, regions, timeline
from .report import profile as _profile
from .report.partial import load_any

if TYPE_CHECKING:  # pandas is optional: imported when a table is first asked for
    import pandas as pd

CALLSITE_COLUMNS = ["function", "location", "file", "line", "frame_function", "depth",
                    "calls", "time_s", "sites_pct", "bytes_sent", "bytes_recv", "nranks"]
PEER_COLUMNS = ["rank", "direction", "peer", "messages", "bytes"]
TIMELINE_COLUMNS = ["class", "bin", "start_s", "calls", "time_s", "bytes"]


def _pandas() -> Any:
    try:
        import pandas
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"mpilens's tables are pandas DataFrames: install pandas into this Python "
            f"({sys.executable} -m pip install pandas)") from None
    return pandas


def _frame(rows: list[dict[str, Any]], columns: list[str], index: str | None) -> pd.DataFrame:
    pd_ = _pandas()
    df = pd_.DataFrame(rows, columns=columns if not rows else None)
    if rows:
        df = df[[c for c in rows[0] if c in df.columns]]
    return df.set_index(index) if index else df


class Profile:
    """One profile: header values as attributes, tables as DataFrames (built once)."""

    def __init__(self, prof: _profile.Profile) -> None:
        self.raw = prof  # the reader's Profile (mpilens.report.profile): header, rank lines

    def __repr__(self) -> str:
        return f"<mpilens.Profile {self.path} ({self.nranks} ranks)>"

    @property
    def path(self) -> Path:
        return self.raw.path

    @property
    def nranks(self) -> int:
        return self.raw.nranks

    @property
    def header(self) -> dict[str, Any]:
        return self.raw.header

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The report's summary: job, ranks, hosts, wall time, time in MPI (min/mean/max)."""
        return analysis.summary(self.raw)

    @cached_property
    def functions(self) -> pd.DataFrame:
        """One row per MPI function (index: function), heaviest total time first."""
        return _frame(analysis.function_rows(self.raw), ["function"], "function")

    @cached_property
    def ranks(self) -> pd.DataFrame:
        """One row per rank (index: rank): wall, time in MPI, calls, bytes, top function.
        Empty when the profile has no rank lines (MPILENS_DETAIL=off)."""
        return _frame(ranks.rank_rows(self.raw) or [], ranks.RANK_COLUMNS, "rank")

    @cached_property
    def callsites(self) -> pd.DataFrame:
        """One row per call site summed over ranks (index: id, as `report --callsite N`);
        file, line and frame_function are the innermost frame's, depth the stack's."""
        rows = []
        for r in callsites.callsite_rows(self.raw):
            f = r["frames"][0] if r["frames"] else {"file": None, "line": None, "function": None}
            rows.append({"id": r["id"], "function": r["function"], "location": r["location"],
                         "file": f["file"], "line": f["line"], "frame_function": f["function"],
                         "depth": len(r["frames"]), "calls": r["calls"], "time_s": r["time_s"],
                         "sites_pct": r["sites_pct"], "bytes_sent": r["bytes_sent"],
                         "bytes_recv": r["bytes_recv"], "nranks": r["nranks"]})
        return _frame(rows, ["id", *CALLSITE_COLUMNS], "id")

    @cached_property
    def peers(self) -> pd.DataFrame:
        """Point-to-point traffic: one row per rank, direction (sent/recv) and peer with
        messages (world ranks; the rank lines' peers)."""
        rows = [{"rank": int(line["rank"]), "direction": d, "peer": int(p), "messages": int(m),
                 "bytes": int(b)}
                for line in self.raw.ranks
                for d in ("sent", "recv")
                for p, m, b in (line.get("peers") or {}).get(d, [])]
        return _frame(rows, PEER_COLUMNS, None)

    @cached_property
    def timeline(self) -> pd.DataFrame:
        """MPI calls, time and bytes per function class and time bin (summed over ranks);
        start_s: the bin's start from MPI_Init.  Empty without a time line."""
        tl = timeline.timeline(self.raw)
        rows = [] if tl is None else [
            {"class": c["class"], "bin": i, "start_s": i * tl["bin_s"], "calls": c["calls"][i],
             "time_s": c["time_s"][i], "bytes": c["bytes"][i]}
            for c in tl["classes"] for i in range(tl["nbins"])]
        return _frame(rows, TIMELINE_COLUMNS, None)

    @cached_property
    def regions(self) -> pd.DataFrame:
        """One row per region (MPI_Pcontrol labels, mpilens_region_begin/end)."""
        return _frame(regions.region_rows(self.raw), ["name"], None)

    @cached_property
    def communicators(self) -> pd.DataFrame:
        """One row per communicator description (records of all ranks grouped)."""
        return _frame(comms.comm_rows(self.raw), ["communicator"], None)

    def histogram(self, function: str) -> pd.DataFrame:
        """The message-size histogram of one function: one row per direction and size
        class, with the class's bounds in bytes (max_bytes None: open)."""
        h = analysis.histogram(self.raw, function)
        rows = [{"direction": d, "bin": i, "size_class": h["labels"][i],
                 "min_bytes": h["bounds"][i][0], "max_bytes": h["bounds"][i][1],
                 "messages": c}
                for d, v in h["directions"].items() for i, c in enumerate(v["bins"])]
        return _frame(rows, ["direction", "bin", "size_class", "min_bytes", "max_bytes",
                             "messages"], None)

    def to_hatchet(self) -> Any:
        """The call sites as a Hatchet GraphFrame (mpilens.llnl.graphframe)."""
        from .llnl import graphframe

        return graphframe(self)


def load(path: str | Path) -> Profile:
    """Read a profile (or a partial profile's directory); mpilens.errors.UserError with
    one line when the file is not a usable profile."""
    return Profile(load_any([str(path)]))
