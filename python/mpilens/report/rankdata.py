"""The rank lines folded into columns (numpy arrays), one entry per rank.

`profile.load` streams the rank lines once: each line is parsed, checked,
folded into a `RankTable` and dropped, so a 100,000-rank profile is held as a
few arrays of 100,000 numbers, not 100,000 dicts.  Point-to-point traffic is
kept as sparse triples (source, destination, messages, bytes), never as a
P x P matrix.  Sums of counts are exact Python integers while folding; the
arrays hold them as uint64 (the runtime's counters).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Functions outside the wall-time window (analysis.OUTSIDE, repeated here: no import cycle)
OUTSIDE = frozenset({"MPI_Init", "MPI_Init_thread", "MPI_Finalize"})
_U64 = 2**64 - 1


def _u64(v: int) -> int:
    return v if v <= _U64 else _U64  # noqa: FURB136 - per value: no call of min()


@dataclass
class RankTable:
    """Per-rank figures of a profile, in rank order (index = MPI_COMM_WORLD rank)."""

    n: int
    wall_s: np.ndarray            # float64
    mpi_s: np.ndarray             # float64 (without MPI_Init* and MPI_Finalize)
    node: np.ndarray              # int64, -1 where the rank line has none
    host: np.ndarray              # int32 index into hosts
    hosts: list[str]
    calls: np.ndarray             # uint64, MPI_Init/Finalize left out
    bytes_sent: np.ndarray        # uint64, all functions
    bytes_recv: np.ndarray
    p2p: np.ndarray               # uint64 (n, 4): intra msgs, intra bytes, inter msgs, inter bytes (sent)
    top_function: np.ndarray      # int32 index into functions, -1: none
    top_function_s: np.ndarray    # float64
    functions: list[str]          # names of the function columns
    fn_time: np.ndarray           # float64 (F, n): time_s per function and rank
    fn_calls: np.ndarray          # uint64 (F, n)
    fn_present: np.ndarray        # bool (F, n): the rank line has the function
    peer_src: np.ndarray          # int64: sparse point-to-point triples of the `sent` lists
    peer_dst: np.ndarray
    peer_msgs: np.ndarray         # uint64
    peer_bytes: np.ndarray        # uint64
    # per function, sums over the rank lines (exact): calls, bytes_sent, bytes_recv, time_s
    sums: dict[str, tuple[int, int, int, float]] = field(default_factory=dict)

    def function_index(self, name: str) -> int | None:
        try:
            return self.functions.index(name)
        except ValueError:
            return None

    def time_of(self, name: str) -> np.ndarray:
        """time_s of one function on every rank (0 where the rank never called it)."""
        i = self.function_index(name)
        return np.zeros(self.n) if i is None else self.fn_time[i]


@dataclass
class Folder:
    """Builds a RankTable one rank line at a time."""

    n: int
    known: list[str]
    wall: array = field(default_factory=lambda: array("d"))
    mpi: array = field(default_factory=lambda: array("d"))
    node: array = field(default_factory=lambda: array("q"))
    host: array = field(default_factory=lambda: array("i"))
    hosts: dict[str, int] = field(default_factory=dict)
    calls: list[int] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    recv: list[int] = field(default_factory=list)
    p2p: list[tuple[int, int, int, int]] = field(default_factory=list)
    top: array = field(default_factory=lambda: array("i"))
    top_s: array = field(default_factory=lambda: array("d"))
    fidx: dict[str, int] = field(default_factory=dict)
    fn_time: list[np.ndarray] = field(default_factory=list)
    fn_calls: list[np.ndarray] = field(default_factory=list)
    fn_present: list[np.ndarray] = field(default_factory=list)
    src: array = field(default_factory=lambda: array("q"))
    dst: array = field(default_factory=lambda: array("q"))
    msgs: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    sums: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in sorted(self.known):
            self._column(name)

    def _column(self, name: str) -> int:
        i = self.fidx.get(name)
        if i is None:
            i = self.fidx[name] = len(self.fidx)
            self.fn_time.append(np.zeros(self.n))
            self.fn_calls.append(np.zeros(self.n, dtype=np.uint64))
            self.fn_present.append(np.zeros(self.n, dtype=bool))
        return i

    def add(self, r: dict[str, Any]) -> None:
        k = len(self.wall)
        self.wall.append(float(r["wall_s"]))
        self.mpi.append(float(r["mpi_s"]))
        self.node.append(int(r.get("node", -1)))
        h = str(r.get("host", ""))
        self.host.append(self.hosts.setdefault(h, len(self.hosts)))
        calls = sent = recv = 0
        p = [0, 0, 0, 0]
        top, top_s = None, 0.0
        for name in sorted(r["functions"]):
            f = r["functions"][name]
            c = int(f.get("calls", 0))
            t = float(f.get("time_s", 0.0))
            i = self._column(name)
            self.fn_time[i][k] = t
            self.fn_calls[i][k] = c
            self.fn_present[i][k] = True
            bs, br = int(f.get("bytes_sent", 0)), int(f.get("bytes_recv", 0))
            sent += bs
            recv += br
            acc = self.sums.get(name)
            if acc is None:
                acc = self.sums[name] = [0, 0, 0, 0.0]
            acc[0] += c
            acc[1] += bs
            acc[2] += br
            acc[3] += t
            if name not in OUTSIDE:
                calls += c
                if top is None or t > top_s:  # the longest; the first name on a tie
                    top, top_s = name, t
            a = f.get("p2p_intra_node")
            if a:
                p[0] += a[0]
                p[1] += a[1]
            b = f.get("p2p_inter_node")
            if b:
                p[2] += b[0]
                p[3] += b[1]
        self.calls.append(_u64(calls))
        self.sent.append(_u64(sent))
        self.recv.append(_u64(recv))
        self.p2p.append((_u64(p[0]), _u64(p[1]), _u64(p[2]), _u64(p[3])))
        self.top.append(-1 if top is None else self.fidx[top])
        self.top_s.append(top_s)
        rank = int(r["rank"])
        for peer, m, b in r.get("peers", {}).get("sent", ()):
            self.src.append(rank)
            self.dst.append(int(peer))
            self.msgs.append(int(m))
            self.nbytes.append(int(b))

    def table(self) -> RankTable:
        k = len(self.wall)
        names = list(self.fidx)
        order = sorted(range(len(names)), key=lambda i: names[i])
        pos = np.zeros(len(names), dtype=np.int32)
        for j, i in enumerate(order):
            pos[i] = j
        top = np.array(self.top, dtype=np.int32)
        top = np.where(top >= 0, pos[np.maximum(top, 0)] if len(names) else top, -1).astype(np.int32)

        def stack(cols: list[np.ndarray], dtype: Any) -> np.ndarray:
            if not cols:
                return np.zeros((0, k), dtype=dtype)
            return np.stack([cols[i][:k] for i in order])

        return RankTable(
            n=k,
            wall_s=np.array(self.wall, dtype=np.float64),
            mpi_s=np.array(self.mpi, dtype=np.float64),
            node=np.array(self.node, dtype=np.int64),
            host=np.array(self.host, dtype=np.int32),
            hosts=list(self.hosts),
            calls=np.array(self.calls, dtype=np.uint64),
            bytes_sent=np.array(self.sent, dtype=np.uint64),
            bytes_recv=np.array(self.recv, dtype=np.uint64),
            p2p=np.array(self.p2p, dtype=np.uint64).reshape(k, 4),
            top_function=top,
            top_function_s=np.array(self.top_s, dtype=np.float64),
            functions=[names[i] for i in order],
            fn_time=stack(self.fn_time, np.float64),
            fn_calls=stack(self.fn_calls, np.uint64),
            fn_present=stack(self.fn_present, bool),
            peer_src=np.array(self.src, dtype=np.int64),
            peer_dst=np.array(self.dst, dtype=np.int64),
            peer_msgs=np.array(self.msgs, dtype=np.uint64),
            peer_bytes=np.array(self.nbytes, dtype=np.uint64),
            sums={k: (v[0], v[1], v[2], v[3]) for k, v in self.sums.items()},
        )


def fold(lines: Iterable[dict[str, Any]], n: int, known: Iterable[str] = ()) -> RankTable:
    """A RankTable of rank lines (a list kept in memory, e.g. a partial profile's)."""
    f = Folder(n, list(known))
    for r in lines:
        f.add(r)
    return f.table()
