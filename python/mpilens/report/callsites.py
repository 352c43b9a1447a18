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
from collections.abc import Sequence
from functools import lru_cache
from operator import add
from pathlib import Path
from typing import Any

from .jsonout import Records
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
        self.agg: dict[Key, list[Any]] = {}
        # (function, modules, frames as written) -> the site's sums: a line's sites are
        # found without resolving their frames again (bounded: see add)
        self.seen: dict[tuple[Any, ...], list[Any]] = {}
        self.present = False
        self.dropped: dict[str, Any] = {"calls": 0, "time_s": 0.0, "bytes_sent": 0,
                                        "bytes_recv": 0}

    def add(self, r: dict[str, Any]) -> None:
        if "callsites" in r:
            self.present = True
        rank = int(r["rank"])
        mods = tuple(r.get("callsite_modules", ()))
        seen = self.seen
        for s in r.get("callsites", ()):
            fn = s["function"]
            ck = (fn, mods, *map(tuple, s["frames"]))
            a = seen.get(ck)
            if a is None:
                key = (str(fn), _frames(r, s))
                a = self.agg.get(key)
                if a is None:
                    # calls, time, sent, received, hist, ranks, their calls, their time
                    a = self.agg[key] = [0, 0.0, 0, 0, [0] * len(s.get("hist", [])),
                                         array("q"), array("Q"), array("d")]
                if len(seen) < 1 << 16:
                    seen[ck] = a
            c, t = int(s["calls"]), float(s["time_s"])
            a[0] += c
            a[1] += t
            a[2] += int(s["bytes_sent"])
            a[3] += int(s["bytes_recv"])
            h = s.get("hist")
            if h:
                a[4] = list(map(add, a[4], h))  # ints: checked at load
            if a[5] and a[5][-1] == rank:
                a[6][-1] = min(a[6][-1] + c, 2**64 - 1)
                a[7][-1] += t
            else:
                a[5].append(rank)
                a[6].append(min(c, 2**64 - 1))
                a[7].append(t)
        d = r.get("callsites_dropped")
        if d:
            for k, v in self.dropped.items():
                self.dropped[k] = v + type(v)(d.get(k, 0))

    def result(self) -> dict[str, Any]:
        sites = {key: {"calls": a[0], "time_s": a[1], "bytes_sent": a[2], "bytes_recv": a[3],
                       "hist": a[4], "rank": a[5], "rank_calls": a[6], "rank_time": a[7]}
                 for key, a in self.agg.items()}
        return {"present": self.present, "sites": sites, "dropped": self.dropped}


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


class PerRank(Records):
    """A call site's calls and time per rank that had it, {"rank", "calls", "time_s"}
    made only when read (a site of 100,000 ranks keeps three arrays, not 100,000 dicts);
    equal to the list of the same dicts, and written as that list in JSON."""

    def __init__(self, rank: Sequence[int], calls: Sequence[int], time: Sequence[float]) -> None:
        super().__init__(("rank", "calls", "time_s"), (rank, calls, time))
        self.rank, self.calls, self.time = rank, calls, time


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
                     "per_rank": PerRank(a["rank"], a["rank_calls"], a["rank_time"])})
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
