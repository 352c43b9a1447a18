"""How advise loads a profile: one pass of the reader, no second reading of the file.

`load(path)` reads the profile with the reader (`report.profile.load`: the rank lines
streamed, folded into `Profile.table` and the load-time views, dropped) with one
more load-time view, "advise": the few per-rank values the rules read beyond the
table, kept as arrays (never one object per rank):

- `cpus_online`, `affinity` (machine.py), `late_arrival` (late.py);
- per function, `bytes_sent` / `bytes_recv` per rank, for the functions with bytes
  (calls and time_s come from the table's `fn_calls` / `fn_time`);
- `peers.recv` (and `peers.sent`, from the table) as sparse triples;
- the call sites of the collectives advise splits by size (`collectives.FAMILIES`):
  function, calls, time_s, bytes_sent, bytes_recv, hist.

The loaded profile's `ranks` is then a sequence of light views over these arrays
(`RankView`), made one at a time while the rules iterate: the rules read
`r["functions"][name]["time_s"]`, `r.get("late_arrival")`, ... as they would a rank
line's dict, with the same values.  A key advise does not fold raises `NotFolded`
(a programming error, not bad input): a rule that starts to read another field of
the rank lines must add it here, where it is folded once.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import compress
from pathlib import Path
from typing import Any, overload

import numpy as np

from ..errors import UserError
from ..report import profile as reader
from ..report.rankdata import RankTable
from .collectives import FAMILIES

NAME = "advise"
SITE_FUNCTIONS = frozenset(FAMILIES)  # call sites folded: rule 3's split by size
RANK_KEYS = frozenset({"rank", "host", "node", "wall_s", "mpi_s", "cpus_online",
                       "affinity", "late_arrival", "functions", "peers", "callsites"})
FUNCTION_KEYS = ("calls", "time_s", "bytes_sent", "bytes_recv")
LATE_KEYS = frozenset({"sampled", "every", "clear", "why", "last_clear", "gap_s"})
SITE_KEYS = frozenset({"function", "calls", "time_s", "bytes_sent", "bytes_recv", "hist"})
PEER_KEYS = frozenset({"sent", "recv"})


class NotFolded(LookupError):
    """A rule read a field of the rank lines that advise's load does not fold."""


class _Record(dict):  # type: ignore[type-arg]
    """A dict of folded values; reading a field outside `allowed` raises NotFolded."""

    __slots__ = ("allowed",)

    def __init__(self, allowed: frozenset[str], *args: Any) -> None:
        super().__init__(*args)
        self.allowed = allowed

    def _check(self, key: object) -> None:
        if key not in self.allowed:
            raise NotFolded(f"advise does not fold the rank lines' {key!r} "
                            f"(advise/ranks.py folds {sorted(self.allowed)})")

    def __missing__(self, key: object) -> Any:
        self._check(key)
        raise KeyError(key)

    def get(self, key: object, default: Any = None) -> Any:
        if key in self:
            return self[key]
        self._check(key)
        return default


class _Fold:
    """The load-time view "advise" (an Accumulator of report.profile.FOLDS).  The reader's
    C fast path folds the same arrays (runtime/reader/fastread.c, advise's view):
    `fast_sites` asks it to, and `from_fast` makes the view of its arrays."""

    fast_sites = SITE_FUNCTIONS

    @staticmethod
    def from_fast(raw: dict[str, Any]) -> Folded:
        return Folded(raw)

    def __init__(self, header: dict[str, Any]) -> None:
        self.k = 0
        self.cpus = array("q")          # cpus_online, -1: absent
        self.aff = array("i")           # index into strings, -1: absent
        self.strings: dict[str, int] = {}
        self.la = array("b")            # 1: late_arrival is an object
        self.la_int = array("q")        # sampled, every, clear, last_clear per rank
        self.la_gap = array("d")
        self.la_why = array("i")
        # per function with bytes: rank -> (sent, received), sparse
        self.fbytes: dict[str, tuple[array, array, array]] = {}
        self.recv_rank = array("q")
        self.recv_peer = array("q")
        self.recv_msgs = array("Q")
        self.recv_bytes = array("Q")
        self.site_rank = array("q")
        self.site_fn = array("i")
        self.site_calls = array("Q")
        self.site_time = array("d")
        self.site_sent = array("Q")
        self.site_recv = array("Q")
        self.site_hlen = array("i")      # len(hist), -1: none
        self.hist_site = array("q")      # sparse bins of the sites' hists
        self.hist_bin = array("i")
        self.hist_count = array("Q")
        self.fn_names: dict[str, int] = {}

    def _string(self, s: str) -> int:
        i = self.strings.get(s)
        if i is None:
            i = self.strings[s] = len(self.strings)
        return i

    def add(self, r: dict[str, Any]) -> None:
        k = self.k
        self.k += 1
        try:
            self._add(k, r)
        except (TypeError, ValueError, AttributeError, IndexError, OverflowError):
            raise UserError(f"corrupted profile: rank {k}'s line has a bad value where "
                            f"advise reads it (cpus_online, affinity, late_arrival, "
                            f"peers.recv, callsites)") from None

    def _add(self, k: int, r: dict[str, Any]) -> None:
        self.cpus.append(int(r["cpus_online"]) if "cpus_online" in r else -1)
        self.aff.append(self._string(str(r["affinity"])) if "affinity" in r else -1)
        la = r.get("late_arrival")
        if isinstance(la, dict):
            self.la.append(1)
            self.la_int.extend((int(la.get("sampled", 0)), int(la.get("every", 0)),
                                int(la.get("clear", 0)), int(la.get("last_clear", 0))))
            self.la_gap.append(float(la.get("gap_s", 0.0)))
            self.la_why.append(self._string(str(la.get("why", ""))))
        else:
            self.la.append(0)
            self.la_int.extend((0, 0, 0, 0))
            self.la_gap.append(0.0)
            self.la_why.append(-1)
        for name, f in r["functions"].items():
            bs, br = f.get("bytes_sent", 0), f.get("bytes_recv", 0)
            if bs or br:
                bs, br = int(bs), int(br)
                col = self.fbytes.get(name)
                if col is None:
                    col = self.fbytes[name] = (array("q"), array("Q"), array("Q"))
                col[0].append(k)
                col[1].append(bs)
                col[2].append(br)
        for peer, m, b in r.get("peers", {}).get("recv", ()):
            self.recv_rank.append(k)
            self.recv_peer.append(int(peer))
            self.recv_msgs.append(int(m))
            self.recv_bytes.append(int(b))
        for s in r.get("callsites") or ():
            fn = s.get("function")
            if fn not in SITE_FUNCTIONS:
                continue
            site = len(self.site_rank)
            self.site_rank.append(k)
            fi = self.fn_names.get(fn)
            if fi is None:
                fi = self.fn_names[fn] = len(self.fn_names)
            self.site_fn.append(fi)
            self.site_calls.append(int(s.get("calls", 0)))
            self.site_time.append(float(s.get("time_s", 0.0)))
            self.site_sent.append(int(s.get("bytes_sent", 0)))
            self.site_recv.append(int(s.get("bytes_recv", 0)))
            h = s.get("hist")
            self.site_hlen.append(-1 if h is None else len(h))
            if h:
                bins = list(compress(range(len(h)), h))  # the non-zero bins
                self.hist_site.extend([site] * len(bins))
                self.hist_bin.extend(bins)
                self.hist_count.extend([int(h[b]) for b in bins])

    def result(self) -> Folded:
        def col(a: array, dtype: Any) -> np.ndarray:
            return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype)

        return Folded({
            "n": self.k, "cpus": col(self.cpus, np.int64), "aff": col(self.aff, np.int32),
            "la": bytes(self.la), "la_int": col(self.la_int, np.int64),
            "la_gap": col(self.la_gap, np.float64), "la_why": col(self.la_why, np.int32),
            "strings": list(self.strings),
            "fbytes": {name: (col(c[0], np.int64), col(c[1], np.uint64), col(c[2], np.uint64))
                       for name, c in self.fbytes.items()},
            "recv_rank": col(self.recv_rank, np.int64), "recv_peer": col(self.recv_peer, np.int64),
            "recv_msgs": col(self.recv_msgs, np.uint64),
            "recv_bytes": col(self.recv_bytes, np.uint64),
            "site_rank": col(self.site_rank, np.int64), "site_fn": list(self.fn_names),
            "site_fi": col(self.site_fn, np.int32), "site_calls": col(self.site_calls, np.uint64),
            "site_time": col(self.site_time, np.float64),
            "site_sent": col(self.site_sent, np.uint64),
            "site_recv": col(self.site_recv, np.uint64),
            "site_hlen": col(self.site_hlen, np.int32),
            "hist_site": col(self.hist_site, np.int64), "hist_bin": col(self.hist_bin, np.int32),
            "hist_count": col(self.hist_count, np.uint64)})


def _starts(owner: np.ndarray, n: int) -> np.ndarray:
    """Where each of n owners' rows start in a rank-ordered column (n + 1 offsets)."""
    return np.searchsorted(owner, np.arange(n + 1))


class Folded:
    """The "advise" view's arrays (see the module's docstring), from the folded columns:
    ranks._Fold's (the Python reader) or the C library's (report/fastread.py)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        n = self.n = int(raw["n"])
        self.cpus, self.aff = raw["cpus"], raw["aff"]
        self.strings = raw["strings"]
        self.la = bytes(raw["la"])
        self.la_int = raw["la_int"].reshape(n, 4)
        self.la_gap, self.la_why = raw["la_gap"], raw["la_why"]
        self.fbytes = dict(sorted(raw["fbytes"].items()))  # by name, however folded
        self.recv_start = _starts(raw["recv_rank"], n)
        self.recv_peer, self.recv_msgs = raw["recv_peer"], raw["recv_msgs"]
        self.recv_bytes = raw["recv_bytes"]
        self.site_start = _starts(raw["site_rank"], n)
        self.site_fn = raw["site_fn"]
        self.site_fi, self.site_calls = raw["site_fi"], raw["site_calls"]
        self.site_sent, self.site_recv = raw["site_sent"], raw["site_recv"]
        self.site_time, self.site_hlen = raw["site_time"], raw["site_hlen"]
        self.hist_start = _starts(raw["hist_site"], len(self.site_hlen))
        self.hist_bin, self.hist_count = raw["hist_bin"], raw["hist_count"]

    def bytes_of(self, name: str, rank: int) -> tuple[int, int]:
        col = self.fbytes.get(name)
        if col is None:
            return 0, 0
        i = int(np.searchsorted(col[0], rank))
        if i < len(col[0]) and col[0][i] == rank:
            return int(col[1][i]), int(col[2][i])
        return 0, 0


class _Functions(Mapping[str, dict[str, Any]]):
    """A rank's functions (those its line has): calls, time_s, bytes_sent, bytes_recv."""

    __slots__ = ("k", "ranks")

    def __init__(self, ranks: AdviseRanks, k: int) -> None:
        self.ranks, self.k = ranks, k

    def __contains__(self, name: object) -> bool:
        i = self.ranks.findex.get(name) if isinstance(name, str) else None
        return i is not None and bool(self.ranks.table.fn_present[i, self.k])

    def __getitem__(self, name: str) -> dict[str, Any]:
        if name not in self:
            raise KeyError(name)
        t, i, k = self.ranks.table, self.ranks.findex[name], self.k
        bs, br = self.ranks.folded.bytes_of(name, k)
        return _Record(_FUNCTION_KEYS, (("calls", int(t.fn_calls[i, k])),
                                        ("time_s", float(t.fn_time[i, k])),
                                        ("bytes_sent", bs), ("bytes_recv", br)))

    def __iter__(self) -> Iterator[str]:
        t, k = self.ranks.table, self.k
        return (name for i, name in enumerate(t.functions) if t.fn_present[i, k])

    def __len__(self) -> int:
        return int(self.ranks.table.fn_present[:, self.k].sum())


_FUNCTION_KEYS = frozenset(FUNCTION_KEYS)


class RankView(Mapping[str, Any]):
    """One rank line as advise folded it: the keys of RANK_KEYS its line has."""

    __slots__ = ("k", "ranks")

    def __init__(self, ranks: AdviseRanks, k: int) -> None:
        self.ranks, self.k = ranks, k

    def _has(self, key: str) -> bool:
        present = _PRESENT.get(key)
        return bool(present(self)) if present else key in RANK_KEYS

    def __getitem__(self, key: str) -> Any:
        if key not in RANK_KEYS:
            raise NotFolded(f"advise does not fold the rank lines' {key!r} "
                            f"(advise/ranks.py folds {sorted(RANK_KEYS)})")
        if not self._has(key):
            raise KeyError(key)
        return _READ[key](self)

    def _late(self) -> _Record:
        f, k = self.ranks.folded, self.k
        sampled, every, clear, last_clear = (int(v) for v in f.la_int[k])
        return _Record(LATE_KEYS, (("sampled", sampled), ("every", every), ("clear", clear),
                                   ("why", f.strings[int(f.la_why[k])]),
                                   ("last_clear", last_clear), ("gap_s", float(f.la_gap[k]))))

    def _peers(self) -> _Record:
        t, f, k = self.ranks.table, self.ranks.folded, self.k
        return _Record(PEER_KEYS, (
            ("sent", _triples(self.ranks.sent_start, k, t.peer_dst, t.peer_msgs, t.peer_bytes)),
            ("recv", _triples(f.recv_start, k, f.recv_peer, f.recv_msgs, f.recv_bytes))))

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in RANK_KEYS and self._has(key)

    def __iter__(self) -> Iterator[str]:
        return (key for key in sorted(RANK_KEYS) if self._has(key))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def _sites(self) -> list[dict[str, Any]]:
        f = self.ranks.folded
        out = []
        for s in range(int(f.site_start[self.k]), int(f.site_start[self.k + 1])):
            n = int(f.site_hlen[s])
            hist: list[int] | None = None
            if n >= 0:
                hist = [0] * n
                for j in range(int(f.hist_start[s]), int(f.hist_start[s + 1])):
                    hist[int(f.hist_bin[j])] = int(f.hist_count[j])
            out.append(_Record(SITE_KEYS, (
                ("function", f.site_fn[int(f.site_fi[s])]), ("calls", int(f.site_calls[s])),
                ("time_s", float(f.site_time[s])), ("bytes_sent", int(f.site_sent[s])),
                ("bytes_recv", int(f.site_recv[s])), ("hist", hist))))
        return out


def _triples(start: np.ndarray, k: int, *cols: np.ndarray) -> list[list[int]]:
    """Rank k's rows of rank-ordered columns (start: each rank's first row) as lists."""
    lo, hi = start[k], start[k + 1]
    return [list(row) for row in zip(*(c[lo:hi].tolist() for c in cols))]


# per key of RANK_KEYS, its value for a rank; and, for those a line may lack, whether it has it
_READ: dict[str, Callable[[RankView], Any]] = {
    "rank": lambda v: v.k,
    "functions": lambda v: _Functions(v.ranks, v.k),
    "wall_s": lambda v: float(v.ranks.table.wall_s[v.k]),
    "mpi_s": lambda v: float(v.ranks.table.mpi_s[v.k]),
    "host": lambda v: v.ranks.table.hosts[int(v.ranks.table.host[v.k])],
    "node": lambda v: int(v.ranks.table.node[v.k]),
    "cpus_online": lambda v: int(v.ranks.folded.cpus[v.k]),
    "affinity": lambda v: v.ranks.folded.strings[int(v.ranks.folded.aff[v.k])],
    "late_arrival": RankView._late,
    "peers": RankView._peers,
    "callsites": RankView._sites,
}
_PRESENT: dict[str, Callable[[RankView], Any]] = {
    "cpus_online": lambda v: v.ranks.folded.cpus[v.k] >= 0,
    "affinity": lambda v: v.ranks.folded.aff[v.k] >= 0,
    "late_arrival": lambda v: v.ranks.folded.la[v.k],
    "node": lambda v: v.ranks.table.node[v.k] >= 0,
}


class AdviseRanks(Sequence[RankView]):
    """The profile's rank lines as advise folded them: a view per rank, made on use."""

    def __init__(self, table: RankTable, folded: Folded) -> None:
        self.table, self.folded = table, folded
        self.findex = {name: i for i, name in enumerate(table.functions)}
        self.sent_start = np.searchsorted(table.peer_src, np.arange(table.n + 1))

    def __len__(self) -> int:
        return self.table.n

    def __bool__(self) -> bool:
        return self.table.n > 0

    def __iter__(self) -> Iterator[RankView]:
        return (RankView(self, k) for k in range(self.table.n))

    @overload
    def __getitem__(self, i: int) -> RankView: ...

    @overload
    def __getitem__(self, i: slice) -> list[RankView]: ...

    def __getitem__(self, i: int | slice) -> RankView | list[RankView]:
        if isinstance(i, slice):
            return [RankView(self, k) for k in range(self.table.n)[i]]
        if i < 0:
            i += self.table.n
        if not 0 <= i < self.table.n:
            raise IndexError(i)
        return RankView(self, i)


@contextmanager
def _folding() -> Iterator[None]:
    """The "advise" view folded by the loads made inside (and by no other load)."""
    reader.register_fold(NAME, _Fold)
    try:
        yield
    finally:
        reader.FOLDS.pop(NAME, None)


def load(path: str | Path) -> reader.Profile:
    """The profile at path, read once (UserError with one line if unusable): its rank
    lines as AdviseRanks views over the reader's table and the "advise" view."""
    with _folding():
        prof = reader.load(path)
    folded = prof.folds.pop(NAME, None)
    if prof.ranks and isinstance(folded, Folded) and prof.table is not None:
        prof.ranks = AdviseRanks(prof.table, folded)
    return prof


