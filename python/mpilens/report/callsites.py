"""Call sites (profile version 2, docs/profile-format.md): which line of the
program made the MPI calls.

Each rank line holds its call sites as frames of (module index, offset in the
module); a module is a path in the rank's `callsite_modules`.  Here the sites
are summed over ranks by (function, frames as module path + offset) and each
frame is resolved to file:line and function with `addr2line` (GNU binutils,
or elfutils' `eu-addr2line`), once per module for all its offsets.  The
offset is the return address, so the call instruction is at offset - 1.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from array import array
from operator import add
from functools import lru_cache
from pathlib import Path
from typing import Any

from .profile import Profile, register_fold

Key = tuple[str, tuple[tuple[str, int], ...]]


def _tool() -> str | None:
    return shutil.which("addr2line") or shutil.which("eu-addr2line")


@lru_cache(maxsize=256)
def _resolve_module(module: str, offsets: tuple[int, ...]) -> tuple[tuple[str | None, str | None,
                                                                          int | None], ...]:
    """(function, file, line) per offset; None where unknown."""
    unknown = tuple((None, None, None) for _ in offsets)
    tool = _tool()
    try:
        exists = Path(module).is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL in it
        exists = False
    if not tool or not exists or not offsets:
        return unknown
    args = [tool, "-f", "-C", "-e", module] + [hex(max(0, o - 1)) for o in offsets]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=60,
                             check=False).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return unknown
    if len(out) != 2 * len(offsets):
        return unknown
    res = []
    for i in range(len(offsets)):
        fn, loc = out[2 * i].strip(), out[2 * i + 1].strip()
        loc = re.sub(r"\s*\(discriminator \d+\)$", "", loc)
        m = re.match(r"^(.*):(\d+)$", loc)
        file, line = (m.group(1), int(m.group(2))) if m and m.group(1) != "??" else (None, None)
        res.append((None if fn == "??" else fn, file, line if line else None))
    return tuple(res)


def _frames(rank: dict[str, Any], site: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    mods = rank.get("callsite_modules", [])
    out = []
    for mi, off in site["frames"]:
        path = mods[mi] if 0 <= mi < len(mods) else "?"
        out.append((str(path), int(off)))
    return tuple(out)


def has_callsites(prof: Profile) -> bool:
    return bool(prof.folded("callsites")["present"])


class _Sites:
    """Call sites summed over ranks (registered as the load-time view "callsites"):
    per site its sums and, per rank that had it, calls and time (arrays, in rank order)."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.agg: dict[Key, dict[str, Any]] = {}
        self.present = False
        self.dropped: dict[str, Any] = {"calls": 0, "time_s": 0.0, "bytes_sent": 0,
                                        "bytes_recv": 0}

    def add(self, r: dict[str, Any]) -> None:
        if "callsites" in r:
            self.present = True
        rank = int(r["rank"])
        for s in r.get("callsites", []):
            key = (str(s["function"]), _frames(r, s))
            a = self.agg.get(key)
            if a is None:
                a = self.agg[key] = {"calls": 0, "time_s": 0.0, "bytes_sent": 0,
                                     "bytes_recv": 0, "hist": [0] * len(s.get("hist", [])),
                                     "rank": array("q"), "rank_calls": [],
                                     "rank_time": array("d")}
            a["calls"] += int(s["calls"])
            a["time_s"] += float(s["time_s"])
            a["bytes_sent"] += int(s["bytes_sent"])
            a["bytes_recv"] += int(s["bytes_recv"])
            a["hist"] = list(map(add, a["hist"], s.get("hist", [])))  # ints: checked at load
            if a["rank"] and a["rank"][-1] == rank:
                a["rank_calls"][-1] += int(s["calls"])
                a["rank_time"][-1] += float(s["time_s"])
            else:
                a["rank"].append(rank)
                a["rank_calls"].append(int(s["calls"]))
                a["rank_time"].append(float(s["time_s"]))
        d = r.get("callsites_dropped", {})
        for k, v in self.dropped.items():
            self.dropped[k] = v + type(v)(d.get(k, 0))

    def result(self) -> dict[str, Any]:
        return {"present": self.present, "sites": self.agg, "dropped": self.dropped}


register_fold("callsites", _Sites)


def _aggregate(prof: Profile) -> dict[Key, dict[str, Any]]:
    return prof.folded("callsites")["sites"]  # type: ignore[no-any-return]


Resolved = tuple[str | None, str | None, int | None]


def _resolve_all(keys: list[Key]) -> dict[tuple[str, int], Resolved]:
    """Every frame resolved, one addr2line run per module."""
    by_mod: dict[str, set[int]] = {}
    for _, frames in keys:
        for module, off in frames:
            by_mod.setdefault(module, set()).add(off)
    out: dict[tuple[str, int], Resolved] = {}
    for module, offs in by_mod.items():
        order = tuple(sorted(offs))
        for o, r in zip(order, _resolve_module(module, order)):
            out[(module, o)] = r
    return out


def location(frame: dict[str, Any]) -> str:
    """'file.c:12 (main)', or 'module+0x1f3' when the line is unknown."""
    if frame["file"]:
        where = f"{Path(frame['file']).name}:{frame['line']}"
        return f"{where} ({frame['function']})" if frame["function"] else where
    name = Path(frame["module"]).name
    return f"{name}+{frame['offset']:#x}" + (f" ({frame['function']})" if frame["function"] else "")


def callsite_rows(prof: Profile) -> list[dict[str, Any]]:
    """Call sites summed over ranks, most time first, numbered from 1 (`report --callsite N`)."""
    agg = _aggregate(prof)
    res = _resolve_all(list(agg))
    total = sum(a["time_s"] for a in agg.values())
    rows = []
    for (fn, frames), a in agg.items():
        fr = []
        for module, off in frames:
            f, file, line = res[(module, off)]
            fr.append({"module": module, "offset": off, "function": f, "file": file, "line": line})
        rows.append({"function": fn, "frames": fr, "location": " < ".join(location(x) for x in fr),
                     "calls": a["calls"], "time_s": a["time_s"],
                     "sites_pct": 100.0 * a["time_s"] / total if total > 0 else 0.0,
                     "bytes_sent": a["bytes_sent"], "bytes_recv": a["bytes_recv"],
                     "hist": a["hist"], "nranks": len(a["rank"]),
                     "per_rank": [{"rank": k, "calls": c, "time_s": t} for k, c, t in
                                  zip(a["rank"], a["rank_calls"], a["rank_time"])]})
    rows.sort(key=lambda r: (-r["time_s"], -r["calls"], r["function"], r["location"]))
    for i, r in enumerate(rows):
        r["id"] = i + 1
    return rows


def dropped(prof: Profile) -> dict[str, Any]:
    """Calls of sites beyond MPILENS_CALLSITE_SLOTS, summed over ranks."""
    return dict(prof.folded("callsites")["dropped"])


def site_key(row: dict[str, Any]) -> tuple[str, str]:
    """How diff matches a site across runs: function and source location (module+offset
    where no line is known, which only matches the same binary)."""
    return row["function"], row["location"]
