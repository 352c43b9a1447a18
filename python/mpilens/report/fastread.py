"""The reader's fast path: rank lines scanned and folded by a small C library
(runtime/reader/fastread.c, built as lib/libmpilens_read.so beside libmpilens.so).

`load_ranks(path, header)` returns the folded rank lines (a RankTable and the
load-time views of FOLDS), exactly as the Python reader (profile.load) folds
them, or None: the library is absent or disabled, or it met a line it does not
read exactly as the Python reader does (anything unusual, and every bad line).
The caller then reads the file with the Python reader, which stays the
reference and names a bad value in one line.

MPILENS_FASTREAD=off disables it; MPILENS_FASTREAD=/path/libmpilens_read.so
names the library.  Without it (no build, no C compiler) every profile is
read by the Python reader: the same results, slower (docs/scale.md); `report`,
`html`, `diff` and `advise` say so in one line (fallback_note, say_fallback).
"""

from __future__ import annotations

import ctypes as C
import os
import sys
import zlib
from array import array
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from . import limits, rawfile
from .rankdata import RankTable

LIB = "libmpilens_read.so"
last_used = False  # the last load_ranks read the file (tests: the fast path was taken)
refused: list[str] = []  # the files the library loaded but left to the Python reader
CHUNK = 1 << 20
VERSION = 3  # ml_fr_version() of the library this module reads
OK, FLUSH, REFUSED, NOMEM = 0, 1, 2, 3

_P = C.c_void_p
_I64 = C.c_int64
_PI64 = C.POINTER(C.c_int64)
_PU64 = C.POINTER(C.c_uint64)
_PD = C.POINTER(C.c_double)


def _candidates() -> list[Path]:
    env = os.environ.get("MPILENS_FASTREAD", "")
    if env.lower() in ("off", "0", "no", "python"):
        return []
    if env:
        return [Path(env)]
    out = []
    try:
        from ..paths import runtime
        out.append(runtime().root / "lib" / LIB)
    except Exception:  # noqa: BLE001, S110 - no runtime found: look in the build tree
        pass
    from ..paths import REPO
    out += sorted((REPO / "build").glob(f"*/lib/{LIB}"))
    return out


@lru_cache(maxsize=1)
def _lib() -> Any:
    for p in _candidates():
        try:
            lib = C.CDLL(str(p))
            if lib.ml_fr_version() != VERSION:  # a stale build: the Python reader
                continue
            _declare(lib)
        except (OSError, AttributeError):
            continue
        return lib
    return None


def available() -> bool:
    return _lib() is not None


def fallback_note() -> str | None:
    """One line (80 columns) saying why profiles are read by the slower Python reader:
    the library is missing, stale or does not load, or it left a file to the Python
    reader (a line it does not read exactly as the Python reader does).  None when
    the library read every file, or when MPILENS_FASTREAD=off asked for the Python
    reader."""
    if _lib() is not None:
        if not refused:
            return None
        name = refused[0]
        room = 80 - len("mpilens: slower Python reader: the fast one left  to it")
        if len(name) > room:
            name = "..." + name[-(room - 3):]
        return f"mpilens: slower Python reader: the fast one left {name} to it"
    env = os.environ.get("MPILENS_FASTREAD", "")
    if env.lower() in ("off", "0", "no", "python"):
        return None
    found = [p for p in _candidates() if p.is_file()]
    if env:
        why = "MPILENS_FASTREAD names no loadable library"
    elif found:
        why = f"{LIB} does not load (make build)"
    else:
        why = f"{LIB} not built (make build)"
    return f"mpilens: slower Python reader: {why}"


def say_fallback(read_ranks: bool) -> None:
    """fallback_note() on stderr, when the command read rank lines (a profile's file,
    not a partial profile, which the fast path does not read): once per command."""
    note = fallback_note() if read_ranks else None
    refused.clear()  # said once: the next command (in one process: the tests) starts anew
    if note:
        print(note, file=sys.stderr)


def _declare(lib: Any) -> None:
    lib.ml_fr_new.restype = _P
    lib.ml_fr_new.argtypes = [_I64]
    lib.ml_fr_free.argtypes = [_P]
    lib.ml_fr_function.argtypes = [_P, C.c_char_p, _I64]
    lib.ml_fr_feed.restype = _I64
    lib.ml_fr_feed.argtypes = [_P, C.c_void_p, _I64, C.c_int, C.POINTER(C.c_int), _I64]
    lib.ml_fr_count.restype = _I64
    lib.ml_fr_count.argtypes = [_P]
    lib.ml_fr_string.restype = _P
    lib.ml_fr_string.argtypes = [_P, C.c_int32, _PI64]
    lib.ml_fr_rank_array.restype = _P
    lib.ml_fr_rank_array.argtypes = [_P, C.c_int, _PI64]
    lib.ml_fr_ncols.argtypes = [_P]
    lib.ml_fr_col.restype = C.c_int32
    lib.ml_fr_col.argtypes = [_P, C.c_int32, C.POINTER(_PD), C.POINTER(_PU64),
                              C.POINTER(C.POINTER(C.c_uint8)), _PU64, _PD,
                              C.POINTER(C.c_int32)]
    lib.ml_fr_peers.restype = _P
    lib.ml_fr_peers.argtypes = [_P, C.c_int, _PI64]
    lib.ml_fr_nsites.restype = _I64
    lib.ml_fr_nsites.argtypes = [_P, C.POINTER(C.c_int), _PU64, _PD]
    lib.ml_fr_site.restype = C.c_int32
    lib.ml_fr_site.argtypes = [_P, _I64, C.POINTER(_PU64), _PI64, _PU64, _PD,
                               C.POINTER(C.c_int), C.POINTER(_PU64), C.POINTER(_PI64),
                               C.POINTER(_PU64), C.POINTER(_PD), _PI64]
    lib.ml_fr_ncomms.restype = _I64
    lib.ml_fr_ncomms.argtypes = [_P, _PU64]
    lib.ml_fr_comm.restype = C.c_int32
    lib.ml_fr_comm.argtypes = [_P, _I64, C.POINTER(C.c_int32), _PI64, C.POINTER(C.c_int),
                               C.POINTER(C.POINTER(C.c_int32)), C.POINTER(C.c_int32), _PU64,
                               _PD]
    lib.ml_fr_nregions.restype = _I64
    lib.ml_fr_nregions.argtypes = [_P]
    lib.ml_fr_region.restype = C.c_int32
    lib.ml_fr_region.argtypes = [_P, _I64, C.POINTER(C.c_int32), _PU64, _PD,
                                 C.POINTER(C.POINTER(C.c_int32)), C.POINTER(C.c_int32)]
    lib.ml_fr_region_fn.restype = C.c_int32
    lib.ml_fr_region_fn.argtypes = [_P, C.c_int32, _PU64, _PD]
    lib.ml_fr_ngroups.restype = _I64
    lib.ml_fr_ngroups.argtypes = [_P]
    lib.ml_fr_group.restype = C.c_int32
    lib.ml_fr_group.argtypes = [_P, _I64, _PD, C.POINTER(C.c_int32),
                                C.POINTER(C.POINTER(C.c_int32)), C.POINTER(_PI64),
                                C.POINTER(_PU64), C.POINTER(_PD), C.POINTER(_PU64)]
    lib.ml_fr_group_width.restype = C.c_int32
    lib.ml_fr_group_width.argtypes = [_P, _I64]
    lib.ml_fr_unstage.argtypes = [_P]
    lib.ml_fr_advise.argtypes = [_P]
    lib.ml_fr_advise_site.argtypes = [_P, C.c_char_p, _I64]
    lib.ml_fr_advise_array.restype = _P
    lib.ml_fr_advise_array.argtypes = [_P, C.c_int, _PI64]
    lib.ml_fr_advise_release.argtypes = [_P, C.c_int]
    lib.ml_fr_advise_nstrings.restype = _I64
    lib.ml_fr_advise_nstrings.argtypes = [_P]
    lib.ml_fr_advise_string.restype = _P
    lib.ml_fr_advise_string.argtypes = [_P, C.c_int32, _PI64]
    lib.ml_fr_advise_site_name.restype = C.c_int32
    lib.ml_fr_advise_site_name.argtypes = [_P, C.c_int32]


def _copy(ptr: Any, n: int, dtype: Any) -> np.ndarray:
    """n items of dtype at ptr, copied into a numpy array."""
    if n == 0 or not ptr:
        return np.zeros(0, dtype=dtype)
    size = n * np.dtype(dtype).itemsize
    addr = ptr if isinstance(ptr, int) else C.cast(ptr, C.c_void_p).value
    # one copy, from the library's memory (string_at made a bytes object first)
    return np.frombuffer((C.c_char * size).from_address(addr), dtype=dtype).copy()


class _Refused(Exception):
    """The fast path does not read this file: the Python reader does."""


class _Reader:
    def __init__(self, lib: Any, nranks: int) -> None:
        self.lib = lib
        self.s = lib.ml_fr_new(nranks)
        if not self.s:
            raise _Refused
        self.strings: dict[int, str] = {}

    def close(self) -> None:
        if self.s:
            self.lib.ml_fr_free(self.s)
            self.s = None

    def string(self, i: int) -> str:
        s = self.strings.get(i)
        if s is None:
            n = C.c_int64()
            p = self.lib.ml_fr_string(self.s, i, C.byref(n))
            s = self.strings[i] = C.string_at(p, n.value).decode("ascii")
        return s


def load_ranks(path: Path, header: dict[str, Any], timeline_acc: Any,
               advise_sites: frozenset[str] | None = None
               ) -> tuple[RankTable, dict[str, Any], int] | None:
    """(table, the callsites / comms / regions views, rank lines read), with the
    time lines folded into timeline_acc (timeline._Timeline); None: read the file
    with the Python reader.  advise_sites (the functions whose call sites advise
    keeps): advise's view is folded too, as "advise" (its arrays, `advise_arrays`)."""
    global last_used
    last_used = False
    lib = _lib()
    if lib is None:
        return None
    nranks = int(header["nranks"])
    try:
        rd = _Reader(lib, nranks)
    except _Refused:
        refused.append(path.name)
        return None
    try:
        for name in sorted(header["functions"]):
            raw = name.encode("utf-8", "surrogatepass")
            if lib.ml_fr_function(rd.s, raw, len(raw)) < 0:
                raise _Refused
        if advise_sites is not None:
            _advise_on(lib, rd, advise_sites)
        _feed(lib, rd, path, timeline_acc)
        count = int(lib.ml_fr_count(rd.s))
        if count != nranks:  # rank lines missing (MPILENS_DETAIL=off): the Python reader's
            return None      # to judge, and quick to read
        table = _table(lib, rd, count)
        views = {"callsites": _sites(lib, rd), **_comms(lib, rd)}
        if advise_sites is not None:
            views["advise"] = advise_arrays(lib, rd, count)
        last_used = True
        return table, views, count
    except _Refused:
        pass
    finally:
        rd.close()
    refused.append(path.name)
    return None


def _feed(lib: Any, rd: _Reader, path: Path, acc: Any) -> None:
    status = C.c_int()
    try:
        with rawfile.open_bytes(path) as f:
            first = f.readline(limits.MAX_LINE_BYTES + 1)  # the header: read by the caller
            if not first.endswith(b"\n"):
                raise _Refused
            rest = b""
            while True:
                chunk = f.read(max(CHUNK, len(rest)))  # a long line: doubling reads
                final = not chunk
                buf = rest + chunk if rest else chunk
                off = 0
                base = C.cast(C.c_char_p(buf), C.c_void_p).value or 0  # buf itself, no copy
                while True:
                    used = lib.ml_fr_feed(rd.s, base + off, len(buf) - off, int(final),
                                          C.byref(status), limits.MAX_LINE_BYTES)
                    off += used
                    if status.value == FLUSH:
                        _flush(lib, rd, acc)
                        continue
                    if status.value != OK:
                        raise _Refused
                    break
                rest = buf[off:]
                if len(rest) > limits.MAX_LINE_BYTES:
                    raise _Refused
                if final:
                    break
    except (OSError, EOFError, zlib.error):  # the Python reader says what is wrong
        raise _Refused from None
    _flush(lib, rd, acc)


def _flush(lib: Any, rd: _Reader, acc: Any) -> None:
    """Fold the staged time lines (one batch of timeline._Timeline) and unstage them."""
    bin_s, nb = C.c_double(), C.c_int32()
    classes, ranks = C.POINTER(C.c_int32)(), C.POINTER(C.c_int64)()
    calls, t, nbytes = C.POINTER(C.c_uint64)(), C.POINTER(C.c_double)(), C.POINTER(C.c_uint64)()
    for g in range(int(lib.ml_fr_ngroups(rd.s))):
        k = lib.ml_fr_group(rd.s, g, C.byref(bin_s), C.byref(nb), C.byref(classes),
                            C.byref(ranks), C.byref(calls), C.byref(t), C.byref(nbytes))
        if k == 0:
            continue
        width = lib.ml_fr_group_width(rd.s, g)
        names = tuple(rd.string(classes[i]) for i in range(width))
        shape = (k, nb.value, width)
        cells = k * nb.value * width
        acc.fold_group((bin_s.value, nb.value, names), _copy(ranks, k, np.int64),
                       _copy(calls, cells, np.uint64).reshape(shape),
                       _copy(t, cells, np.float64).reshape(shape),
                       _copy(nbytes, cells, np.uint64).reshape(shape))
    lib.ml_fr_unstage(rd.s)


def _table(lib: Any, rd: _Reader, k: int) -> RankTable:
    n = C.c_int64()

    def ranks(which: int, dtype: Any, per: int = 1) -> np.ndarray:
        ptr = lib.ml_fr_rank_array(rd.s, which, C.byref(n))
        return _copy(ptr, n.value * per, dtype)

    hosts = [rd.string(int(i)) for i in ranks(10, np.int32)]
    cols = []
    tp, cp, pp = C.POINTER(C.c_double)(), C.POINTER(C.c_uint64)(), C.POINTER(C.c_uint8)()
    sums = (C.c_uint64 * 3)()
    tsum, order = C.c_double(), C.c_int32()
    for i in range(int(lib.ml_fr_ncols(rd.s))):
        name = rd.string(lib.ml_fr_col(rd.s, i, C.byref(tp), C.byref(cp), C.byref(pp), sums,
                                       C.byref(tsum), C.byref(order)))
        cols.append((name, _copy(tp, k, np.float64), _copy(cp, k, np.uint64),
                     _copy(pp, k, np.uint8).astype(bool),
                     (int(sums[0]), int(sums[1]), int(sums[2]), tsum.value), order.value))
    by_name = sorted(range(len(cols)), key=lambda i: cols[i][0])
    pos = np.zeros(max(1, len(cols)), dtype=np.int32)
    for j, i in enumerate(by_name):
        pos[i] = j
    top = ranks(8, np.int32)
    top = np.where(top >= 0, pos[np.maximum(top, 0)], -1).astype(np.int32)

    def stack(j: int, dtype: Any) -> np.ndarray:
        if not cols:
            return np.zeros((0, k), dtype=dtype)
        return np.stack([cols[i][j] for i in by_name])

    def peers(which: int, dtype: Any) -> np.ndarray:
        return _copy(lib.ml_fr_peers(rd.s, which, C.byref(n)), n.value, dtype)

    with_sums = sorted((c for c in cols if c[5] >= 0), key=lambda c: c[5])
    return RankTable(
        n=k, wall_s=ranks(0, np.float64), mpi_s=ranks(1, np.float64),
        node=ranks(2, np.int64), host=ranks(3, np.int32), hosts=hosts,
        calls=ranks(4, np.uint64), bytes_sent=ranks(5, np.uint64),
        bytes_recv=ranks(6, np.uint64), p2p=ranks(7, np.uint64, 4).reshape(k, 4),
        top_function=top, top_function_s=ranks(9, np.float64),
        functions=[cols[i][0] for i in by_name],
        fn_time=stack(1, np.float64), fn_calls=stack(2, np.uint64), fn_present=stack(3, bool),
        peer_src=peers(0, np.int64), peer_dst=peers(1, np.int64),
        peer_msgs=peers(2, np.uint64), peer_bytes=peers(3, np.uint64),
        sums={c[0]: c[4] for c in with_sums})


def _sites(lib: Any, rd: _Reader) -> dict[str, Any]:
    present = C.c_int()
    dropped = (C.c_uint64 * 3)()
    dtime = C.c_double()
    nsites = int(lib.ml_fr_nsites(rd.s, C.byref(present), dropped, C.byref(dtime)))
    frames, hist = C.POINTER(C.c_uint64)(), C.POINTER(C.c_uint64)()
    rank, rcalls, rtime = C.POINTER(C.c_int64)(), C.POINTER(C.c_uint64)(), C.POINTER(C.c_double)()
    nframes, nrank = C.c_int64(), C.c_int64()
    sums = (C.c_uint64 * 3)()
    t, hlen = C.c_double(), C.c_int()
    sites: dict[Any, dict[str, Any]] = {}
    for i in range(nsites):
        fn = rd.string(lib.ml_fr_site(rd.s, i, C.byref(frames), C.byref(nframes), sums,
                                      C.byref(t), C.byref(hlen), C.byref(hist), C.byref(rank),
                                      C.byref(rcalls), C.byref(rtime), C.byref(nrank)))
        fr = tuple((rd.string(int(frames[2 * j])), int(frames[2 * j + 1]))
                   for j in range(nframes.value))
        m = nrank.value
        ranks = array("q")
        ranks.frombytes(_copy(rank, m, np.int64).tobytes())
        rc = array("Q")
        rc.frombytes(_copy(rcalls, m, np.uint64).tobytes())
        rt = array("d")
        rt.frombytes(_copy(rtime, m, np.float64).tobytes())
        sites[(fn, fr)] = {"calls": int(sums[0]), "time_s": t.value, "bytes_sent": int(sums[1]),
                           "bytes_recv": int(sums[2]),
                           "hist": [int(hist[j]) for j in range(hlen.value)],
                           "rank": ranks, "rank_calls": rc, "rank_time": rt}
    if len(sites) != nsites:  # two keys of the library read as one (cannot happen): Python
        raise _Refused
    return {"present": bool(present.value), "sites": sites,
            "dropped": {"calls": int(dropped[0]), "time_s": dtime.value,
                        "bytes_sent": int(dropped[1]), "bytes_recv": int(dropped[2])}}


def _comms(lib: Any, rd: _Reader) -> dict[str, Any]:
    from .comms import describe

    dropped = (C.c_uint64 * 4)()
    ncomms = int(lib.ml_fr_ncomms(rd.s, dropped))
    name, size, inter = C.c_int32(), C.c_int64(), C.c_int()
    chain, chain_len = C.POINTER(C.c_int32)(), C.c_int32()
    sums = (C.c_uint64 * 4)()
    t = C.c_double()
    agg: dict[str, dict[str, Any]] = {}
    for i in range(ncomms):
        kind = rd.string(lib.ml_fr_comm(rd.s, i, C.byref(name), C.byref(size), C.byref(inter),
                                        C.byref(chain), C.byref(chain_len), sums, C.byref(t)))
        # the record and its parents as comms.describe reads them
        kinds = [kind] + [rd.string(chain[j]) for j in range(chain_len.value)]
        recs = [{"id": j, "kind": kd, "parent": j + 1 if j + 1 < len(kinds) else None}
                for j, kd in enumerate(kinds)]
        rec = recs[0]
        if size.value >= 0:
            rec["size"] = size.value
        if inter.value:
            rec["inter"] = True
        if name.value >= 0:
            rec["name"] = rd.string(name.value)
        d = describe(rec, {r["id"]: r for r in recs})
        if d in agg:  # two keys, one description: the Python reader adds them in its order
            raise _Refused
        agg[d] = {"communicator": d, "kind": kind,
                  "size": size.value if size.value >= 0 else None,
                  "name": rd.string(name.value) if name.value >= 0 else None,
                  "records": int(sums[0]), "calls": int(sums[1]), "time_s": t.value,
                  "bytes_sent": int(sums[2]), "bytes_recv": int(sums[3])}
    return {"comms": {"comms": agg, "dropped": int(dropped[0])},
            "regions": {"regions": _regions(lib, rd),
                        "dropped": {"labels": int(dropped[1]), "calls": int(dropped[2]),
                                    "unmatched": int(dropped[3])}}}


def _regions(lib: Any, rd: _Reader) -> dict[str, dict[str, Any]]:
    """Regions summed over ranks, as regions._Regions folds them."""
    parent, nfns = C.c_int32(), C.c_int32()
    counts = (C.c_uint64 * 3)()
    wall, t = C.c_double(), C.c_double()
    fns = C.POINTER(C.c_int32)()
    agg: dict[str, dict[str, Any]] = {}
    for i in range(int(lib.ml_fr_nregions(rd.s))):
        name = rd.string(lib.ml_fr_region(rd.s, i, C.byref(parent), counts, C.byref(wall),
                                          C.byref(fns), C.byref(nfns)))
        a = agg[name] = {"name": name,
                         "parent": rd.string(parent.value) if parent.value >= 0 else None,
                         "ranks": int(counts[0]), "entries": int(counts[1]),
                         "wall_s": wall.value, "calls": 0, "time_s": 0.0, "bytes_sent": 0,
                         "bytes_recv": 0, "functions": {}}
        for j in range(nfns.value):
            fn = rd.string(lib.ml_fr_region_fn(rd.s, fns[j], counts, C.byref(t)))
            a["functions"][fn] = {"calls": int(counts[0]), "time_s": t.value,
                                  "bytes_sent": int(counts[1]), "bytes_recv": int(counts[2])}
    return agg


def _advise_on(lib: Any, rd: _Reader, sites: frozenset[str]) -> None:
    if lib.ml_fr_advise(rd.s) < 0:
        raise _Refused
    for name in sorted(sites):
        raw = name.encode("ascii")
        if lib.ml_fr_advise_site(rd.s, raw, len(raw)) < 0:
            raise _Refused


# advise's arrays (ml_fr_advise_array's order): name, numpy type
ADVISE_ARRAYS = (
    ("cpus", np.int64), ("aff", np.int32), ("la", np.uint8), ("la_int", np.int64),
    ("la_gap", np.float64), ("la_why", np.int32),
    ("fb_col", np.int32), ("fb_rank", np.int64), ("fb_sent", np.uint64), ("fb_recv", np.uint64),
    ("recv_rank", np.int64), ("recv_peer", np.int64), ("recv_msgs", np.uint64),
    ("recv_bytes", np.uint64),
    ("site_rank", np.int64), ("site_fi", np.int32), ("site_calls", np.uint64),
    ("site_time", np.float64), ("site_sent", np.uint64), ("site_recv", np.uint64),
    ("site_hlen", np.int32),
    ("hist_site", np.int64), ("hist_bin", np.int32), ("hist_count", np.uint64))


def advise_arrays(lib: Any, rd: _Reader, count: int) -> dict[str, Any]:
    """advise's view as folded by the library: the arrays of ranks._Fold (numpy), its
    strings, the call sites' function names (by index) and, per function with bytes,
    (ranks, sent, received) in rank order."""
    n = C.c_int64()
    out: dict[str, Any] = {"n": count}
    for which, (name, dtype) in enumerate(ADVISE_ARRAYS):
        ptr = lib.ml_fr_advise_array(rd.s, which, C.byref(n))
        out[name] = _copy(ptr, n.value, dtype)
        lib.ml_fr_advise_release(rd.s, which)  # the copy only: a lower peak
    strings = []
    for i in range(int(lib.ml_fr_advise_nstrings(rd.s))):
        p = lib.ml_fr_advise_string(rd.s, i, C.byref(n))
        strings.append(C.string_at(p, n.value).decode("ascii"))
    out["strings"] = strings
    nfi = int(out["site_fi"].max()) + 1 if len(out["site_fi"]) else 0
    out["site_fn"] = [rd.string(lib.ml_fr_advise_site_name(rd.s, i)) for i in range(nfi)]
    tp, cp, pp = C.POINTER(C.c_double)(), C.POINTER(C.c_uint64)(), C.POINTER(C.c_uint8)()
    sums = (C.c_uint64 * 3)()
    tsum, order = C.c_double(), C.c_int32()
    col, order_by = out.pop("fb_col"), None
    fbytes = {}
    if len(col):
        order_by = np.argsort(col, kind="stable")  # per function, in rank order
        col = col[order_by]
        ranks, sent, recv = (out.pop(k)[order_by] for k in ("fb_rank", "fb_sent", "fb_recv"))
        cuts = np.flatnonzero(np.diff(col)) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(col)]):
            name = rd.string(lib.ml_fr_col(rd.s, int(col[lo]), C.byref(tp), C.byref(cp),
                                           C.byref(pp), sums, C.byref(tsum), C.byref(order)))
            fbytes[name] = (ranks[lo:hi], sent[lo:hi], recv[lo:hi])
    else:
        for k in ("fb_rank", "fb_sent", "fb_recv"):
            out.pop(k)
    out["fbytes"] = fbytes
    return out
