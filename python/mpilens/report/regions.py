"""Regions (profile version 2, docs/profile-format.md): MPI calls, time and bytes per
named phase (MPI_Pcontrol(1, "label") ... MPI_Pcontrol(-1, "label"), or
mpilens_region_begin/end).  A call belongs to the innermost open region; a
region's wall time includes its nested regions.  Summed over ranks here."""

from __future__ import annotations

import copy
from typing import Any

from ..errors import UserError
from .profile import Profile, register_fold


class _Regions:
    """Regions summed over ranks (the load-time view "regions")."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.agg: dict[str, dict[str, Any]] = {}
        self.dropped = {"labels": 0, "calls": 0, "unmatched": 0}

    def add(self, r: dict[str, Any]) -> None:
        for g in r.get("regions", []):
            a = self.agg.setdefault(g["name"], {"name": g["name"], "parent": g.get("parent"),
                                                "ranks": 0, "entries": 0, "wall_s": 0.0,
                                                "calls": 0, "time_s": 0.0, "bytes_sent": 0,
                                                "bytes_recv": 0, "functions": {}})
            a["ranks"] += 1
            a["entries"] += int(g["entries"])
            a["wall_s"] += float(g["wall_s"])
            for fn, f in g.get("functions", {}).items():
                af = a["functions"].setdefault(fn, {"calls": 0, "time_s": 0.0, "bytes_sent": 0,
                                                    "bytes_recv": 0})
                for k in af:
                    af[k] += type(af[k])(f.get(k, 0))
        d = r.get("regions_dropped", {})
        for k in self.dropped:
            self.dropped[k] += int(d.get(k, 0))

    def result(self) -> dict[str, Any]:
        return {"regions": self.agg, "dropped": self.dropped}


register_fold("regions", _Regions)


def region_rows(prof: Profile) -> list[dict[str, Any]]:
    """One row per region, most MPI time first: entries and wall time (summed over
    ranks, and the mean per rank), MPI calls, time and bytes, and per function."""
    rows = copy.deepcopy(list(prof.folded("regions")["regions"].values()))
    for a in rows:
        for k in ("calls", "time_s", "bytes_sent", "bytes_recv"):
            a[k] = sum(f[k] for f in a["functions"].values())
        a["wall_mean_s"] = a["wall_s"] / a["ranks"] if a["ranks"] else 0.0
    rows.sort(key=lambda a: (-a["time_s"], a["name"]))
    return rows


def dropped(prof: Profile) -> dict[str, int]:
    return dict(prof.folded("regions")["dropped"])


def region_functions(prof: Profile, name: str) -> dict[str, dict[str, Any]]:
    """The header-like function records of one region, summed over ranks (the
    function table's input for `report --region NAME`)."""
    rows = {r["name"]: r for r in region_rows(prof)}
    if name not in rows:
        known = ", ".join(sorted(rows)) or "none"
        raise UserError(f"region '{name}' is not in this profile (regions: {known})")
    return rows[name]["functions"]
