"""The network model advise predicts with: P-LogP parameters (Kielmann et al.) from the
file `mpilens bench logp --model FILE` writes (docs/bench.md), or measured now on this
host when no file is given.

Parameters for m bytes are interpolated as the adaptive Alltoall's netmodel.c does:
linearly between the file's sizes, past the largest along the line through the last
two (never decreasing), below the smallest its value.  One message of m bytes costs
T(m) = L + g(m) (P-LogP: RTT(m) = 2 (L + g(m))).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..report import limits

REQUIRED = ("format", "version", "model", "mpi_library", "L_s", "sizes", "os_s", "or_s", "g_s")
ARRAYS = ("os_s", "or_s", "g_s")
# latency_step rule of `mpilens bench p2p` (docs/bench.md): rtt(s) exceeds the linear
# model 2 rtt(s/2) - rtt(0) by more than this share of rtt(s), and (here) by more than
# rtt(0), a handshake's round trip: a fixed cost appears (eager -> rendezvous).
STEP_SHARE = 0.30
STEP_MIN = 64  # ... from 64 B on, as bench p2p (below, the timer's noise makes steps)


@dataclass
class NetModel:
    source: str                      # the file, or how it was measured
    mpi_library: str
    L: float
    sizes: list[int]
    os: list[float]
    or_: list[float]
    g: list[float]
    rtt: list[float] | None = None
    hosts: list[str] = field(default_factory=list)
    measured_now: bool = False
    intra: NetModel | None = None    # the intra-node class (bench logp --pairs intra,...)
    # 95 % intervals of the medians per size: {"rtt_s"|"os_s"|"or_s"|"g_s": [[lo, hi], ...]}
    ci95: dict[str, list[list[float]]] | None = None

    def bounds(self) -> tuple[NetModel, NetModel] | None:
        """The model at the low and at the high ends of its intervals (os, or, g their
        bounds; L scaled as RTT(0)'s bound over RTT(0)); None without intervals."""
        if not self.ci95:
            return None
        out = []
        for end in (0, 1):
            ci = {k: [float(v[end]) for v in vs] for k, vs in self.ci95.items()}
            rtt0 = self.rtt[0] if self.rtt else 0.0
            scale = ci["rtt_s"][0] / rtt0 if "rtt_s" in ci and rtt0 > 0 else 1.0
            out.append(replace(self, source=f"{self.source} ({'low' if end == 0 else 'high'} "
                                            f"end of its 95 % intervals)",
                               L=self.L * scale, os=ci.get("os_s", self.os),
                               or_=ci.get("or_s", self.or_), g=ci.get("g_s", self.g),
                               rtt=ci.get("rtt_s", self.rtt), ci95=None))
        return out[0], out[1]

    def at(self, key: str, m: float) -> float:
        """os_s, or_s or g_s at m bytes (netmodel.c's interpolation)."""
        ys = {"os_s": self.os, "or_s": self.or_, "g_s": self.g}[key]
        return interpolate(self.sizes, ys, m)

    def gap(self, m: float) -> float:
        return self.at("g_s", m)

    def msg(self, m: float) -> float:
        """T(m) = L + g(m): one message of m bytes."""
        return self.L + self.gap(m)

    def latency_crossover(self) -> int | None:
        """The smallest size of the model whose size-dependent part g(m) - g(0)
        reaches the fixed part L + g(0); None when no measured size does.  Each g(m) is
        first the median of it and its neighbours' (the first and last sizes as they
        are): one size's spike, as a model measured on a loaded host has (g(2 B) 35 us
        between 10.3 us and 10.2 us), is the noise of one median, not the crossover."""
        fixed = self.L + self.g[0]
        n = len(self.g)
        smooth = [self.g[i] if i in (0, n - 1) else sorted(self.g[i - 1:i + 2])[1]
                  for i in range(n)]
        return next((s for s, g in zip(self.sizes, smooth) if g - self.g[0] >= fixed), None)

    def eager_crossover(self) -> int | None:
        """The first size where the round trip steps up (bench p2p's latency_step rule
        on rtt_s): the eager -> rendezvous switch; None if the model shows none."""
        if not self.rtt:
            return None
        by_size = dict(zip(self.sizes, self.rtt))
        r0 = by_size.get(0, self.rtt[0])
        for s, r in zip(self.sizes, self.rtt):
            half = by_size.get(s // 2)
            if s >= STEP_MIN and half is not None \
                    and r - (2 * half - r0) > max(STEP_SHARE * r, r0):
                return s
        return None

    def describe(self) -> str:
        return (f"P-LogP model {self.source}: L = {self.L:.3g} s, g(0) = {self.g[0]:.3g} s, "
                f"sizes {self.sizes[0]}..{self.sizes[-1]} B")


def interpolate(sizes: list[int], ys: list[float], x: float) -> float:
    """ys at x: linear between the two sizes around x; past the last size along the last
    segment (slope at least 0); at or below the first size its value."""
    if x <= sizes[0] or len(sizes) == 1:
        return ys[0]
    hi = min(max(bisect.bisect_left(sizes, x), 1), len(sizes) - 1)
    x0, x1, y0, y1 = sizes[hi - 1], sizes[hi], ys[hi - 1], ys[hi]
    rise = y1 - y0
    if x > x1 and rise < 0:
        rise = 0.0
    return max(y0 + rise * (x - x0) / (x1 - x0), 0.0)


def host_stem(host: str) -> str:
    """A host name without its domain and node number (node012.x -> node), as the
    adaptive Alltoall's machine signature (tuning.c)."""
    return re.sub(r"[0-9-]+$", "", host.split(".")[0])


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def parse(doc: Any, source: str) -> NetModel:
    """A network model from a parsed document; UserError with one line if it is not one."""
    where = f"network model {source}"
    if not isinstance(doc, dict):
        raise UserError(f"{where}: not a JSON object (write it with "
                        f"`mpilens bench logp --model FILE`)")
    for key in REQUIRED:
        if key not in doc:
            raise UserError(f"{where}: has no key '{key}' (write it with "
                            f"`mpilens bench logp --model FILE`)")
    if doc["format"] != "mpilens-netmodel" or doc["model"] != "plogp" or doc["version"] != 1:
        raise UserError(f"{where}: format {doc['format']!r} model {doc['model']!r} version "
                        f"{doc['version']!r}, expected 'mpilens-netmodel' 'plogp' 1")
    sizes = doc["sizes"]
    if (not isinstance(sizes, list) or not sizes
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes)
            or any(b <= a for a, b in pairwise(sizes))):
        raise UserError(f"{where}: sizes must be increasing byte counts")
    for key in ARRAYS + (("rtt_s",) if "rtt_s" in doc else ()):
        arr = doc[key]
        if not isinstance(arr, list) or len(arr) != len(sizes):
            raise UserError(f"{where}: {key} must be a list as long as sizes ({len(sizes)})")
        for i, v in enumerate(arr):
            if not _num(v):
                raise UserError(f"{where}: {key}[{i}] must be a non-negative number")
    if not _num(doc["L_s"]):
        raise UserError(f"{where}: L_s must be a non-negative number")
    if doc["L_s"] + doc["g_s"][0] <= 0:
        raise UserError(f"{where}: L_s + g_s[0] is 0: a message must cost something")
    if not isinstance(doc["mpi_library"], str):
        raise UserError(f"{where}: mpi_library must be a string")
    hosts = doc.get("hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise UserError(f"{where}: hosts must be a list of host names")
    classes = doc.get("classes", {})
    if not isinstance(classes, dict):
        raise UserError(f"{where}: classes must be an object of per-class models")
    intra = parse(classes["intra"], f"{source} (intra-node class)") \
        if "intra" in classes else None
    ci95 = doc.get("ci95")
    if ci95 is not None:
        ok = isinstance(ci95, dict) and all(
            k in ARRAYS + ("rtt_s",) and isinstance(v, list) and len(v) == len(sizes)
            and all(isinstance(b, list) and len(b) == 2 and all(_num(x) for x in b)
                    and b[0] <= b[1] for b in v) for k, v in ci95.items())
        if not ok:
            raise UserError(f"{where}: ci95 must map os_s, or_s, g_s, rtt_s to a [lo, hi] "
                            f"pair per size")
    return NetModel(source=source, mpi_library=doc["mpi_library"], L=float(doc["L_s"]),
                    sizes=list(sizes), os=[float(v) for v in doc["os_s"]],
                    or_=[float(v) for v in doc["or_s"]], g=[float(v) for v in doc["g_s"]],
                    rtt=[float(v) for v in doc["rtt_s"]] if "rtt_s" in doc else None,
                    hosts=list(hosts), intra=intra, ci95=ci95)


def load(path: str | Path) -> NetModel:
    p = Path(path)
    if not p.exists():
        raise UserError(f"network model {p}: no such file")
    if p.is_dir():
        raise UserError(f"network model {p}: is a directory, not a model file")
    try:  # a regular file, bounded lines and nesting (report/limits.py)
        text = limits.read_bytes(p, "network model").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"network model {p}: cannot read: "
                        f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise UserError(f"network model {p}: not valid JSON (write it with "
                        f"`mpilens bench logp --model FILE`)") from None
    return parse(doc, str(p))


def check_fits(model: NetModel, mpi_library: str, hosts: list[str]) -> None:
    """A model from another MPI library or another machine describes another network."""
    if model.mpi_library != mpi_library:
        raise UserError(f"network model {model.source} was measured with "
                        f"'{model.mpi_library}', the profile ran '{mpi_library}': measure one "
                        f"with that MPI (`mpilens bench logp --model FILE`)")
    stems = {host_stem(h) for h in hosts}
    if model.hosts and not stems & {host_stem(h) for h in model.hosts}:
        raise UserError(f"network model {model.source} was measured on "
                        f"{', '.join(model.hosts)}, the profile ran on {', '.join(hosts)}: "
                        f"measure one on that machine (`mpilens bench logp --model FILE`)")
