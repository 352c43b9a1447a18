"""Per-communicator records (profile version 2, docs/profile-format.md).

Each rank numbers its communicators in order of creation; the same communicator
has a record on each of its ranks.  Here records are grouped by what describes
a communicator the same way on all its ranks: how it was made, its parent's
description, its size and its name (the two halves of a split are one row, with
the number of records)."""

from __future__ import annotations

from typing import Any

from .profile import Profile, register_fold


def describe(rec: dict[str, Any], by_id: dict[int, dict[str, Any]]) -> str:
    """'split of dup of world, size 2 "half"'."""
    if rec.get("kind") == "other":
        return "other (beyond MPILENS_COMMS, or made before mpilens saw them)"
    chain, seen = [str(rec["kind"])], {int(rec["id"])}
    p = rec.get("parent")
    while p is not None and p in by_id and p not in seen:
        seen.add(p)
        chain.append(str(by_id[p]["kind"]))
        p = by_id[p].get("parent")
    size = f", size {rec['size']}" if rec.get("size") is not None else ""  # optional field
    text = " of ".join(chain) + size + (" (inter)" if rec.get("inter") else "")
    name = rec.get("name") or ""
    builtin = {"world": "MPI_COMM_WORLD", "self": "MPI_COMM_SELF"}.get(str(rec["kind"]))
    return text + (f' "{name}"' if name and name != builtin else "")


class _Comms:
    """Communicator records grouped by description (the load-time view "comms")."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.agg: dict[str, dict[str, Any]] = {}
        self.dropped = 0

    def add(self, r: dict[str, Any]) -> None:
        recs = r.get("comms", [])
        by_id = {int(c["id"]): c for c in recs}
        for c in recs:
            d = describe(c, by_id)
            a = self.agg.setdefault(d, {"communicator": d, "kind": c.get("kind"),
                                        "size": c.get("size"), "name": c.get("name"),
                                        "records": 0, "calls": 0, "time_s": 0.0,
                                        "bytes_sent": 0, "bytes_recv": 0})
            a["records"] += 1
            for k in ("calls", "bytes_sent", "bytes_recv"):
                a[k] += int(c.get(k, 0))
            a["time_s"] += float(c.get("time_s", 0.0))
        self.dropped += int(r.get("comms_dropped", 0))

    def result(self) -> dict[str, Any]:
        return {"comms": self.agg, "dropped": self.dropped}


register_fold("comms", _Comms)


def comm_rows(prof: Profile) -> list[dict[str, Any]]:
    """Communicators grouped by description, most MPI time first."""
    rows = [dict(a) for a in prof.folded("comms")["comms"].values() if a["calls"]]
    rows.sort(key=lambda a: (-a["time_s"], -a["calls"], a["communicator"]))
    return rows


def dropped(prof: Profile) -> int:
    return int(prof.folded("comms")["dropped"])
