"""What the profile records of the machine and the launch (runtime/core/machine.c):
online CPUs and affinity per rank, the launcher line, the transport settings.  Advise
reports oversubscription (more ranks on a host than CPUs they can run on) and lowers
the confidence of the findings that read timings against the model."""

from __future__ import annotations

import re
from typing import Any

from ..report.profile import Profile

# the variables / options that name the interfaces a job stripes over
RAIL_KEYS = ("btl_tcp_if_include", "UCX_NET_DEVICES")


def cpu_list(text: str) -> set[int]:
    """"0-3,6" -> {0, 1, 2, 3, 6}; "" -> set()."""
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def hosts(prof: Profile) -> dict[str, dict[str, Any]]:
    """Per host: its ranks, the online CPUs (the least any of its ranks saw) and the CPUs
    its ranks may run on (the union of their affinities; None when not recorded)."""
    out: dict[str, dict[str, Any]] = {}
    for r in prof.ranks:
        if "cpus_online" not in r:
            continue
        h = out.setdefault(str(r.get("host", "")), {"ranks": 0, "cpus_online": None,
                                                     "cpus": set()})
        h["ranks"] += 1
        online = int(r["cpus_online"])
        h["cpus_online"] = online if h["cpus_online"] is None else min(h["cpus_online"], online)
        h["cpus"] |= cpu_list(str(r.get("affinity", "")))
    return out


def oversubscribed(prof: Profile) -> list[dict[str, Any]]:
    """The hosts that ran more ranks than CPUs: [{host, ranks, cpus}] (cpus: the online
    CPUs, or fewer when the ranks' affinities allow fewer)."""
    out = []
    for name, h in hosts(prof).items():
        cpus = h["cpus_online"] or 0
        if h["cpus"]:
            cpus = min(cpus, len(h["cpus"])) if cpus else len(h["cpus"])
        if cpus and h["ranks"] > cpus:
            out.append({"host": name, "ranks": h["ranks"], "cpus": cpus})
    return out


def launch(prof: Profile) -> dict[str, Any]:
    got = prof.header.get("launch")
    return got if isinstance(got, dict) else {}


def rails_in_use(prof: Profile) -> list[str]:
    """The interfaces the job was told to stripe over (its launcher line's or rank 0's
    settings: btl_tcp_if_include, UCX_NET_DEVICES), when two or more."""
    got = launch(prof)
    texts = [f"{k}={v}" for k, v in (got.get("settings") or {}).items()]
    texts.append(str(got.get("line", "")))
    for text in texts:
        for key in RAIL_KEYS:
            m = re.search(rf"{key}[= ]+([^\s]+)", text)
            if m:
                devs = [d for d in m.group(1).strip("'\"").split(",") if d]
                if len(devs) >= 2:
                    return devs
    return []
