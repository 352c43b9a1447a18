"""Every value of a loaded profile is in range, or the profile is refused with one line.

`report.profile.load` checks the file's structure (JSON Lines, header keys,
rank order); `check_values` then checks every number and string the reports
read: counts are integers from 0 to 2^64 - 1 (the runtime's uint64_t
counters), times are finite numbers >= 0, world ranks lie in [0, nranks),
strings are valid text.  A hand-edited or corrupted profile (a histogram bin of
10^23, a time of NaN, a negative byte count, a rank line of another job) thus
stops with `mpilens: <file>: corrupted profile: <where> <what> is <value>,
expected <what is accepted>` instead of a wrong report or a traceback.
"""

from __future__ import annotations

import math
import re
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..errors import UserError

COUNT_MAX = 2**64 - 1
INT_MAX = 2**31 - 1  # a setting the runtime writes as a C int
NBINS = 25
_FUNC_NAME = re.compile(r"MPI_[A-Za-z0-9_]+")

# What each field of a function entry holds (header aggregates and rank lines alike).
_FUNC_COUNTS = ("calls", "timed_calls", "bytes_sent", "bytes_recv", "repro_calls",
                "hist_send_bytes")
_FUNC_TIMES = ("time_s", "time_min_s", "time_max_s")
_A2A_COUNTS = ("comm_size", "ranks_per_node", "bytes", "communicators", "calls",
               "learning_calls", "relearns")
_A2A_TIMES = ("learning_s", "grouping_s", "time_per_call_s")


class _Checker:
    """Walks one profile; the first bad value raises UserError naming its place."""

    def __init__(self, path: Path, nranks: int) -> None:
        self.path = path
        self.nranks = nranks

    def fail(self, where: str, value: Any, expected: str) -> UserError:
        shown = repr(value)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return UserError(f"{self.path}: corrupted profile: {where} is {shown}, expected {expected}")

    def count(self, where: str, v: Any, lo: int = 0, hi: int = COUNT_MAX) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            what = ("a count (an integer from 0 to 2^64-1)" if (lo, hi) == (0, COUNT_MAX)
                    else f"an integer from {lo} to {hi}")
            raise self.fail(where, v, what)
        return v

    def rank(self, where: str, v: Any) -> int:
        return self.count(where, v, 0, self.nranks - 1)

    def time(self, where: str, v: Any) -> float:
        if (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)
                or v < 0):
            raise self.fail(where, v, "a time (a finite number >= 0 of seconds)")
        return float(v)

    def text(self, where: str, v: Any) -> str:
        ok = isinstance(v, str)
        if ok:
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate from a \\ud8xx escape
                ok = False
        if not ok:
            raise self.fail(where, v, "a string of valid text")
        return v

    def flag(self, where: str, v: Any) -> None:
        if not isinstance(v, bool):
            raise self.fail(where, v, "true or false")

    def obj(self, where: str, v: Any) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, v, "an object")
        return v

    def seq(self, where: str, v: Any, n: int | None = None) -> list[Any]:
        if not isinstance(v, list) or (n is not None and len(v) != n):
            raise self.fail(where, v, "a list" if n is None else f"a list of {n} values")
        return v

    # ---- sections ----

    def function(self, where: str, name: str, f: Any, header: bool) -> None:
        if not isinstance(name, str) or not _FUNC_NAME.fullmatch(name):
            raise self.fail(f"{where} function name", name, "an MPI function name (MPI_Xxx)")
        f = self.obj(f"{where} {name}", f)
        w = f"{where} {name}."
        for key in _FUNC_COUNTS:
            if key in f:
                self.count(w + key, f[key])
        for key in _FUNC_TIMES:
            if key in f:
                self.time(w + key, f[key])
        for key in ("hist_send", "hist_recv"):
            if key in f:
                for i, c in enumerate(self.seq(w + key, f[key], NBINS)):
                    self.count(f"{w}{key}[{i}]", c)
        self.node_fields(w, f)
        if not header:
            return
        if "caution" in f:
            self.flag(w + "caution", f["caution"])
        if "rank_time_s" in f:
            rt = self.obj(w + "rank_time_s", f["rank_time_s"])
            for key in ("min", "mean", "max"):
                if key in rt:
                    self.time(f"{w}rank_time_s.{key}", rt[key])
            if "max_rank" in rt:
                self.rank(w + "rank_time_s.max_rank", rt["max_rank"])
        if "calls_per_rank" in f:
            cp = self.obj(w + "calls_per_rank", f["calls_per_rank"])
            for key in ("min", "max"):
                if key in cp:
                    self.count(f"{w}calls_per_rank.{key}", cp[key])

    def node_fields(self, w: str, f: dict[str, Any]) -> None:
        """A function's intra/inter-node split and node span (docs/profile-format.md, Nodes)."""
        for key in ("p2p_intra_node", "p2p_inter_node"):
            if key in f:
                for i, c in enumerate(self.seq(w + key, f[key], 4)):
                    self.count(f"{w}{key}[{i}]", c)
        if "node_span" in f:
            span = self.obj(w + "node_span", f["node_span"])
            for key in ("one_node", "multi_node", "max_nodes", "max_ranks_per_node"):
                self.count(f"{w}node_span.{key}", span.get(key, 0))

    def nodes(self, h: dict[str, Any]) -> None:
        nodes = self.obj("header nodes", h["nodes"])
        n = self.count("header nodes.count", nodes.get("count", 1), 1, self.nranks)
        for key in ("matrix_msgs", "matrix_bytes"):
            if key in nodes:
                for i, row in enumerate(self.seq(f"header nodes.{key}", nodes[key], n)):
                    for j, c in enumerate(self.seq(f"header nodes.{key}[{i}]", row, n)):
                        self.count(f"header nodes.{key}[{i}][{j}]", c)

    def functions(self, where: str, funcs: dict[str, Any], header: bool) -> None:
        for name, f in funcs.items():
            self.function(where, name, f, header)

    def header(self, h: dict[str, Any]) -> None:
        for key in ("job_id", "command", "created", "mpi_library", "mpi_library_full",
                    "mpi_flavour"):
            if key in h:
                self.text(f"header {key}", h[key])
        for i, host in enumerate(self.seq("header hosts", h.get("hosts", []))):
            self.text(f"header hosts[{i}]", host)
        labels = h.get("hist_labels")
        if isinstance(labels, list) and len(labels) == NBINS:  # anything else: default labels
            for i, lab in enumerate(labels):
                self.text(f"header hist_labels[{i}]", lab)
        for i, c in enumerate(self.seq("header ranks_per_host", h.get("ranks_per_host", []))):
            self.count(f"header ranks_per_host[{i}]", c)
        for key in ("overhead_ns", "overhead_sampled_ns", "caution_factor"):
            if key in h:
                self.time(f"header {key}", h[key])
        if "detail" in h:
            self.flag("header detail", h["detail"])
        for key in ("wall_s", "mpi_s"):
            for s in ("min", "mean", "max"):
                self.time(f"header {key}.{s}", h[key].get(s))
        if "profiler_finalize_s" in h:
            fin = self.obj("header profiler_finalize_s", h["profiler_finalize_s"])
            for key in ("reduce", "offsets", "total"):
                if key in fin:
                    self.time(f"header profiler_finalize_s.{key}", fin[key])
        if "timing" in h:  # the runtime's settings, C ints (profile_format.c)
            timing = self.obj("header timing", h["timing"])
            if "mode" in timing and timing["mode"] not in ("sampled", "all"):
                raise self.fail("header timing.mode", timing["mode"], "sampled or all")
            for key, lo in (("sample_period", 1), ("warmup_calls", 0), ("always_above_ns", 0)):
                if key in timing:
                    self.count(f"header timing.{key}", timing[key], lo, INT_MAX)
        if "clock" in h:
            clock = self.obj("header clock", h["clock"])
            for key in ("ghz", "resolution_ns"):
                if key in clock:
                    self.time(f"header clock.{key}", clock[key])
        self.functions("header", h["functions"], header=True)
        for i, rec in enumerate(h.get("alltoall", [])):
            self.alltoall(f"header alltoall[{i}]", rec)
        if "topologies" in h:
            self.topologies(h)
        if "nodes" in h:
            self.nodes(h)

    def alltoall(self, where: str, rec: dict[str, Any]) -> None:
        for key in _A2A_COUNTS:
            self.count(f"{where}.{key}", rec[key])
        if "carried_calls" in rec:
            self.count(f"{where}.carried_calls", rec["carried_calls"])
        for key in _A2A_TIMES:
            self.time(f"{where}.{key}", rec[key])
        self.text(f"{where}.source", rec["source"])
        if rec.get("algorithm") is not None:
            self.text(f"{where}.algorithm", rec["algorithm"])
        for name, v in rec["learned_mean_s"].items():
            self.text(f"{where}.learned_mean_s key", name)
            self.time(f"{where}.learned_mean_s.{name}", v)

    def topologies(self, h: dict[str, Any]) -> None:
        """The topologies the application created (docs/profile-format.md, topologies)."""
        self.count("header topologies_dropped", h.get("topologies_dropped", 0))
        for i, t in enumerate(self.seq("header topologies", h["topologies"])):
            w = f"header topologies[{i}]"
            t = self.obj(w, t)
            kind = t.get("kind")
            if kind not in ("cart", "graph", "dist_graph"):
                raise self.fail(f"{w}.kind", kind, "cart, graph or dist_graph")
            ranks = self.seq(f"{w}.ranks", t.get("ranks"))
            if not ranks:
                raise self.fail(f"{w}.ranks", ranks, "a non-empty list of world ranks")
            for j, r in enumerate(ranks):
                self.rank(f"{w}.ranks[{j}]", r)
            n = len(ranks)
            if kind == "cart":
                dims = self.seq(f"{w}.dims", t.get("dims"))
                periods = self.seq(f"{w}.periods", t.get("periods"), len(dims))
                prod = 1
                for j, d in enumerate(dims):
                    prod *= self.count(f"{w}.dims[{j}]", d, 1, n)
                for j, p in enumerate(periods):
                    self.flag(f"{w}.periods[{j}]", p)
                if prod != n:
                    raise self.fail(f"{w}.dims", dims, f"dimensions whose product is {n} "
                                                       "(the number of ranks)")
            elif t.get("edges") is not None:
                edges = self.seq(f"{w}.edges", t["edges"], n)
                for j, out in enumerate(edges):
                    for k, e in enumerate(self.seq(f"{w}.edges[{j}]", out)):
                        self.count(f"{w}.edges[{j}][{k}]", e, 0, n - 1)

    def rank_line(self, r: dict[str, Any]) -> None:
        w = f"rank {r['rank']}"
        if "host" in r:
            self.text(f"{w} host", r["host"])
        self.time(f"{w} wall_s", r["wall_s"])
        self.time(f"{w} mpi_s", r["mpi_s"])
        for key in ("pid", "threads", "untracked_requests"):
            if key in r:
                self.count(f"{w} {key}", r[key])
        if "node" in r:
            self.rank(f"{w} node", r["node"])
        self.functions(w, r["functions"], header=False)
        peers = self.obj(f"{w} peers", r.get("peers", {}))
        for side in ("sent", "recv"):
            for i, e in enumerate(self.seq(f"{w} peers.{side}", peers.get(side, []))):
                e = self.seq(f"{w} peers.{side}[{i}]", e, 3)
                self.rank(f"{w} peers.{side}[{i}] peer", e[0])
                self.count(f"{w} peers.{side}[{i}] messages", e[1])
                self.count(f"{w} peers.{side}[{i}] bytes", e[2])
        self.version2(w, r)

    # ---- version 2: call sites, regions, time line (docs/profile-format.md) ----

    def counts(self, where: str, d: Any, keys: tuple[str, ...]) -> None:
        d = self.obj(where, d)
        for key in keys:
            if key in d:
                if key.endswith("_s"):
                    self.time(f"{where}.{key}", d[key])
                else:
                    self.count(f"{where}.{key}", d[key])

    def version2(self, w: str, r: dict[str, Any]) -> None:
        site_keys = ("calls", "timed_calls", "time_s", "bytes_sent", "bytes_recv")
        mods = self.seq(f"{w} callsite_modules", r.get("callsite_modules", []))
        for i, m in enumerate(mods):
            self.text(f"{w} callsite_modules[{i}]", m)
        for i, s in enumerate(self.seq(f"{w} callsites", r.get("callsites", []))):
            ws = f"{w} callsites[{i}]"
            s = self.obj(ws, s)
            self.text(f"{ws}.function", s.get("function"))
            for key in ("calls", "bytes_sent", "bytes_recv", "time_s"):
                if key not in s:
                    raise self.fail(f"{ws}.{key}", None, "a value (required)")
            self.counts(ws, s, site_keys)
            for j, fr in enumerate(self.seq(f"{ws}.frames", s.get("frames"))):
                fr = self.seq(f"{ws}.frames[{j}]", fr, 2)
                self.count(f"{ws}.frames[{j}] module", fr[0], 0, max(0, len(mods) - 1))
                self.count(f"{ws}.frames[{j}] offset", fr[1])
            for j, c in enumerate(self.seq(f"{ws}.hist", s.get("hist", [0] * NBINS), NBINS)):
                self.count(f"{ws}.hist[{j}]", c)
        if "callsites_dropped" in r:
            self.counts(f"{w} callsites_dropped", r["callsites_dropped"],
                        ("calls", "time_s", "bytes_sent", "bytes_recv"))
        for i, g in enumerate(self.seq(f"{w} regions", r.get("regions", []))):
            wg = f"{w} regions[{i}]"
            g = self.obj(wg, g)
            self.text(f"{wg}.name", g.get("name"))
            if g.get("parent") is not None:
                self.text(f"{wg}.parent", g["parent"])
            self.count(f"{wg}.entries", g.get("entries"))
            self.time(f"{wg}.wall_s", g.get("wall_s"))
            for name, f in self.obj(f"{wg}.functions", g.get("functions")).items():
                self.text(f"{wg}.functions key", name)
                self.counts(f"{wg}.functions.{name}", f, ("calls", "time_s", "bytes_sent",
                                                          "bytes_recv"))
        if "regions_dropped" in r:
            self.counts(f"{w} regions_dropped", r["regions_dropped"],
                        ("labels", "calls", "unmatched"))
        if "timeline" in r:
            self.timeline(f"{w} timeline", r["timeline"])
        self.count(f"{w} comms_dropped", r.get("comms_dropped", 0))
        for i, c in enumerate(self.seq(f"{w} comms", r.get("comms", []))):
            wc = f"{w} comms[{i}]"
            c = self.obj(wc, c)
            self.count(f"{wc}.id", c.get("id"), -1, 2**31 - 1)
            self.text(f"{wc}.kind", c.get("kind"))
            if "name" in c:
                self.text(f"{wc}.name", c["name"])
            if c.get("parent") is not None:
                self.count(f"{wc}.parent", c["parent"], 0, 2**31 - 1)
            if "size" in c:
                self.count(f"{wc}.size", c["size"], 0, 2**31 - 1)
            for key in ("calls", "time_s", "bytes_sent", "bytes_recv"):
                if key not in c:
                    raise self.fail(f"{wc}.{key}", None, "a value (required)")
            self.counts(wc, c, ("calls", "time_s", "bytes_sent", "bytes_recv"))

    def timeline(self, w: str, tl: Any) -> None:
        tl = self.obj(w, tl)
        if self.time(f"{w}.bin_s", tl.get("bin_s")) <= 0:
            raise self.fail(f"{w}.bin_s", tl.get("bin_s"), "a bin width > 0")
        classes = self.seq(f"{w}.classes", tl.get("classes"))
        if not classes:
            raise self.fail(f"{w}.classes", classes, "a non-empty list of class names")
        for i, c in enumerate(classes):
            self.text(f"{w}.classes[{i}]", c)
        n = len(self.seq(f"{w}.calls", tl.get("calls")))
        for key in ("calls", "time_s", "bytes"):
            for i, b in enumerate(self.seq(f"{w}.{key}", tl.get(key), n)):
                for j, v in enumerate(self.seq(f"{w}.{key}[{i}]", b, len(classes))):
                    if key == "time_s":
                        self.time(f"{w}.{key}[{i}][{j}]", v)
                    else:
                        self.count(f"{w}.{key}[{i}][{j}]", v)


def check_values(path: Path, header: dict[str, Any], ranks: list[dict[str, Any]]) -> None:
    """Raise UserError (one line) at the first value of the profile that is out of range."""
    c = _Checker(path, int(header["nranks"]))
    c.count("header nranks", header["nranks"], 1, 2**31 - 1)
    if ranks and len(ranks) != header["nranks"]:
        raise UserError(f"{path}: corrupted profile: {len(ranks)} rank lines for "
                        f"{header['nranks']} ranks")
    c.header(header)
    for r in ranks:
        c.rank_line(r)


# ---- the fast path of a rank line: the same checks without building messages ----

def _cnt(v: Any, hi: int = COUNT_MAX) -> bool:
    return type(v) is int and 0 <= v <= hi


def _tim(v: Any) -> bool:
    t = type(v)
    return (t is float or t is int) and 0 <= v < math.inf


def _txt(v: Any) -> bool:
    if type(v) is not str:
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_INT = {int}
_LIST = {list}
_NUM = {int, float}


def _ints(h: list[Any], hi: int = COUNT_MAX) -> bool:
    """Every item an int from 0 to hi (type() is exact: a bool is not a count)."""
    return not h or (set(map(type, h)) == _INT and min(h) >= 0 and max(h) <= hi)


def _times(h: list[Any]) -> bool:
    """Every item a finite number >= 0."""
    if not h:
        return True
    if not set(map(type, h)) <= _NUM:
        return False
    try:
        return min(h) >= 0 and math.isfinite(math.fsum(h))
    except (OverflowError, ValueError):
        return False


class _Plan:
    """Where the values of one key set lie (a function entry, a call site): cached, so a
    rank line's entries are checked with a few C-level gathers instead of key by key."""

    __slots__ = ("counts", "full", "list_keys", "lists", "times")

    def __init__(self, keys: tuple[str, ...], counts: tuple[str, ...], times: tuple[str, ...],
                 lists: tuple[str, ...], required: tuple[str, ...] = ()) -> None:
        self.full = all(k in keys for k in required)
        self.counts = _getter(tuple(k for k in keys if k in counts))
        self.times = _getter(tuple(k for k in keys if k in times))
        self.list_keys = tuple(k for k in keys if k in lists)
        self.lists = _getter(self.list_keys)


def _getter(keys: tuple[str, ...]) -> Any:
    if not keys:
        return lambda d: ()
    if len(keys) == 1:
        k = keys[0]
        return lambda d: (d[k],)
    return itemgetter(*keys)


_PLAN_MAX = 1024  # distinct key sets (and names) cached: a hostile file cannot grow them
_FN_PLANS: dict[tuple[str, ...], _Plan] = {}
_SITE_PLANS: dict[tuple[str, ...], _Plan] = {}
_NAMES_OK: set[str] = set()  # function names already matched by _FUNC_NAME
_TXT_OK: set[str] = set()  # call sites' function names already found valid text
_SPAN = ("one_node", "multi_node", "max_nodes", "max_ranks_per_node")
_FN_LISTS = ("hist_send", "hist_recv", "p2p_intra_node", "p2p_inter_node", "node_span")
_SITE_COUNTS = ("calls", "timed_calls", "bytes_sent", "bytes_recv")
_ZERO_HIST = [0] * NBINS


def _plan(cache: dict[tuple[str, ...], _Plan], keys: tuple[str, ...], counts: tuple[str, ...],
          times: tuple[str, ...], lists: tuple[str, ...], required: tuple[str, ...] = ()) -> _Plan:
    p = cache.get(keys)
    if p is None:
        p = _Plan(keys, counts, times, lists, required)
        if len(cache) < _PLAN_MAX:
            cache[keys] = p
    return p


def _times_ok(h: list[Any]) -> bool:
    """Every item a finite number >= 0 (as _tim, for a list)."""
    if not h:
        return True
    if not set(map(type, h)) <= _NUM:
        return False
    try:
        return min(h) >= 0 and math.isfinite(math.fsum(h)) and math.isfinite(max(h))
    except (OverflowError, ValueError):
        return False


def _lists_ok(lists: list[Any], width: int, hi: int = COUNT_MAX) -> bool:
    """Every item a list of `width` ints from 0 to hi."""
    if not lists:
        return True
    if set(map(type, lists)) != _LIST or set(map(len, lists)) != {width}:
        return False
    return _ints(list(chain.from_iterable(lists)), hi)


def _functions_ok(fs: dict[Any, Any]) -> bool:
    """Every function entry of a rank line in range (as _Checker's, without messages)."""
    cnts: list[Any] = []
    tims: list[Any] = []
    hists: list[Any] = []
    p2ps: list[Any] = []
    for name, f in fs.items():
        if name not in _NAMES_OK:
            if type(name) is not str or not _FUNC_NAME.fullmatch(name):
                return False
            if len(_NAMES_OK) < _PLAN_MAX:
                _NAMES_OK.add(name)
        if type(f) is not dict:
            return False
        p = _plan(_FN_PLANS, tuple(f), _FUNC_COUNTS, _FUNC_TIMES, _FN_LISTS)
        cnts += p.counts(f)
        tims += p.times(f)
        for k, v in zip(p.list_keys, p.lists(f)):
            if k == "node_span":
                if type(v) is not dict:
                    return False
                cnts += [v.get(x, 0) for x in _SPAN]
            elif k[0] == "h":
                hists.append(v)
            else:
                p2ps.append(v)
    return (_ints(cnts) and _times_ok(tims) and _lists_ok(hists, NBINS)
            and _lists_ok(p2ps, 4))


def _sites_ok(sites: list[Any], top: int) -> bool:
    """Every call site of a rank line in range (as _Checker's, without messages)."""
    cnts: list[Any] = []
    tims: list[Any] = []
    hists: list[Any] = []
    frs: list[Any] = []
    for s in sites:
        if type(s) is not dict:
            return False
        fn = s.get("function")
        if type(fn) is not str or fn not in _TXT_OK:  # a damaged line: any JSON value
            if not _txt(fn):
                return False
            if len(_TXT_OK) < _PLAN_MAX:
                _TXT_OK.add(fn)
        p = _plan(_SITE_PLANS, tuple(s), _SITE_COUNTS, ("time_s",), ("frames", "hist"), _FOUR)
        if not p.full:
            return False
        cnts += p.counts(s)
        tims += p.times(s)
        frames = s.get("frames")
        if type(frames) is not list:
            return False
        frs += frames
        hists.append(s.get("hist", _ZERO_HIST))
    if not (_ints(cnts) and _times_ok(tims) and _lists_ok(hists, NBINS)):
        return False
    if frs:
        if set(map(type, frs)) != _LIST or set(map(len, frs)) != {2}:
            return False
        if not (_ints([fr[0] for fr in frs], top) and _ints([fr[1] for fr in frs])):
            return False
    return True


def _counts_ok(d: Any, keys: tuple[str, ...]) -> bool:
    if type(d) is not dict:
        return False
    for key in keys:
        if key in d and not (_tim(d[key]) if key.endswith("_s") else _cnt(d[key])):
            return False
    return True


_SITE = ("calls", "timed_calls", "time_s", "bytes_sent", "bytes_recv")
_FOUR = ("calls", "time_s", "bytes_sent", "bytes_recv")


def _version2_ok(r: dict[str, Any], timeline: bool = True) -> bool:
    mods = r.get("callsite_modules", [])
    if type(mods) is not list or not all(map(_txt, mods)):  # few: per item
        return False
    sites = r.get("callsites", [])
    if type(sites) is not list:
        return False
    if sites and not _sites_ok(sites, max(0, len(mods) - 1)):
        return False
    if "callsites_dropped" in r and not _counts_ok(r["callsites_dropped"], _FOUR):
        return False
    regions = r.get("regions", [])
    if type(regions) is not list:
        return False
    for g in regions:
        if type(g) is not dict or not _txt(g.get("name")):
            return False
        if g.get("parent") is not None and not _txt(g["parent"]):
            return False
        if not _cnt(g.get("entries")) or not _tim(g.get("wall_s")):
            return False
        fs = g.get("functions")
        if type(fs) is not dict:
            return False
        for name, f in fs.items():
            if not _txt(name) or not _counts_ok(f, _FOUR):
                return False
    if "regions_dropped" in r and not _counts_ok(r["regions_dropped"],
                                                 ("labels", "calls", "unmatched")):
        return False
    if timeline and "timeline" in r and not _timeline_ok(r["timeline"]):
        return False
    if not _cnt(r.get("comms_dropped", 0)):
        return False
    comms = r.get("comms", [])
    if type(comms) is not list:
        return False
    for c in comms:
        if type(c) is not dict:
            return False
        cid = c.get("id")
        if type(cid) is not int or not -1 <= cid <= 2**31 - 1 or not _txt(c.get("kind")):
            return False
        if "name" in c and not _txt(c["name"]):
            return False
        if c.get("parent") is not None and not _cnt(c["parent"], 2**31 - 1):
            return False
        if "size" in c and not _cnt(c["size"], 2**31 - 1):
            return False
        if not all(k in c for k in _FOUR) or not _counts_ok(c, _FOUR):
            return False
    return True


def _timeline_ok(tl: Any) -> bool:
    if type(tl) is not dict or not _tim(tl.get("bin_s")) or tl["bin_s"] <= 0:
        return False
    classes = tl.get("classes")
    if type(classes) is not list or not classes or not all(map(_txt, classes)):
        return False
    calls = tl.get("calls")
    if type(calls) is not list:
        return False
    n, width = len(calls), len(classes)
    for key in ("calls", "time_s", "bytes"):
        rows = tl.get(key)
        if type(rows) is not list or len(rows) != n:
            return False
        if rows and (set(map(type, rows)) != _LIST or set(map(len, rows)) != {width}):
            return False
        flat = list(chain.from_iterable(rows))
        if not (_times(flat) if key == "time_s" else _ints(flat)):
            return False
    return True


def timeline_shape_ok(tl: Any) -> tuple[int, int] | None:
    """(bins, classes) of a time line whose bin width, classes and row counts are in
    range (its values are left to the caller: timeline._check_batch), else None."""
    if type(tl) is not dict or not _tim(tl.get("bin_s")) or tl["bin_s"] <= 0:
        return None
    classes = tl.get("classes")
    if type(classes) is not list or not classes:
        return None
    if not all(type(c) is str for c in classes):  # a damaged line: lists, objects
        return None
    key = tuple(classes)
    if key not in _CLASSES_OK:
        if not all(map(_txt, classes)):
            return None
        if len(_CLASSES_OK) < _PLAN_MAX:
            _CLASSES_OK.add(key)
    calls = tl.get("calls")
    if type(calls) is not list:
        return None
    n = len(calls)
    for k in ("time_s", "bytes"):
        rows = tl.get(k)
        if type(rows) is not list or len(rows) != n:
            return None
    return n, len(classes)


_CLASSES_OK: set[tuple[Any, ...]] = set()


def rank_line_ok(r: dict[str, Any], nranks: int, timeline: bool = True) -> bool:
    """True when every value of the rank line is in range (as _Checker.rank_line checks);
    timeline=False leaves its time line to the caller (timeline._check_batch)."""
    last = nranks - 1
    if "host" in r and not _txt(r["host"]):
        return False
    if not _tim(r["wall_s"]) or not _tim(r["mpi_s"]):
        return False
    for key in ("pid", "threads", "untracked_requests"):
        if key in r and not _cnt(r[key]):
            return False
    if "node" in r and not _cnt(r["node"], last):
        return False
    if not _functions_ok(r["functions"]):
        return False
    peers = r.get("peers", {})
    if type(peers) is not dict:
        return False
    for side in ("sent", "recv"):
        lst = peers.get(side, [])
        if type(lst) is not list:
            return False
        if lst and (set(map(type, lst)) != _LIST or set(map(len, lst)) != {3}):
            return False
        if lst and not (_ints([e[0] for e in lst], last)
                        and _ints([x for e in lst for x in e[1:]])):
            return False
    return _version2_ok(r, timeline)


def check_rank_line(c: _Checker, r: dict[str, Any]) -> None:
    """Raise UserError (one line) at the first bad value of one rank line."""
    if not rank_line_ok(r, c.nranks):
        c.rank_line(r)  # names the value; accepts what the fast path was stricter about
