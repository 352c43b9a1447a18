"""What tests/progs/prof_c.c and prof_f.f90 must leave in the profile, rank by rank.

Computed from what the programs do (docs/runtime.md's byte rule: count x type
size of the data the buffer arguments describe; one histogram entry per call
and side of the per-peer block size).
"""

from __future__ import annotations

from collections import Counter, defaultdict


def hbin(n: int) -> int:
    """Histogram class of an n-byte message (0: empty, 1: 1 B, k: 2^(k-1)..2^k-1, 24: >= 8 MiB)."""
    return 0 if n == 0 else min(n.bit_length(), 24)


class Rec:
    def __init__(self) -> None:
        self.calls = 0
        self.bs = 0
        self.br = 0
        self.hs: Counter[int] = Counter()
        self.hr: Counter[int] = Counter()
        self.hsb = 0  # sum of the sizes the send histogram counts

    def send(self, n: int, block: int | None = None) -> None:
        self.bs += n
        self.hs[hbin(n if block is None else block)] += 1
        self.hsb += n if block is None else block

    def recv(self, n: int, block: int | None = None) -> None:
        self.br += n
        self.hr[hbin(n if block is None else block)] += 1


def expected(r: int, P: int) -> tuple[dict[str, Rec], dict[int, list[int]], dict[int, list[int]]]:
    """Per-function records and peers (sent, recv: peer -> [msgs, bytes]) of rank r of P."""
    f: dict[str, Rec] = defaultdict(Rec)
    sent: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    recv: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    right, left = (r + 1) % P, (r - 1) % P

    def psend(peer: int, n: int) -> None:
        sent[peer][0] += 1
        sent[peer][1] += n

    def precv(peer: int, n: int) -> None:
        recv[peer][0] += 1
        recv[peer][1] += n

    def call(name: str, k: int = 1) -> Rec:
        f[name].calls += k
        return f[name]

    call("MPI_Init")
    call("MPI_Comm_rank")
    call("MPI_Comm_size")
    for s in (0, 1, 3, 8, 100, 1000, 5000, 70000):  # 1. ring
        rec = call("MPI_Sendrecv")
        rec.send(s)
        rec.recv(s)
        psend(right, s)
        precv(left, s)
    for _ in range(3):  # 2. pairs
        if r % 2 == 0 and r + 1 < P:
            call("MPI_Send").send(128)
            psend(r + 1, 128)
        if r % 2 == 1:
            call("MPI_Recv").recv(128)
            precv(r - 1, 128)
    for _ in range(2):  # 3. non-blocking ring
        call("MPI_Irecv").recv(16)
        precv(left, 16)
        call("MPI_Isend").send(16)
        psend(right, 16)
        call("MPI_Waitall")
    call("MPI_Irecv").recv(8)
    precv(left, 8)
    call("MPI_Send").send(8)
    psend(right, 8)
    call("MPI_Wait")
    call("MPI_Send_init")  # 4. persistent ring
    call("MPI_Recv_init")
    for _ in range(3):
        rec = call("MPI_Startall")
        rec.send(40)
        rec.recv(40)
        psend(right, 40)
        precv(left, 40)
        call("MPI_Waitall")
    call("MPI_Request_free", 2)
    call("MPI_Isend").send(12)  # 5. probe
    psend(right, 12)
    call("MPI_Probe")
    call("MPI_Get_count")
    call("MPI_Recv").recv(12)
    precv(left, 12)
    call("MPI_Wait")
    # 6. collectives
    (call("MPI_Bcast").send if r == 0 else call("MPI_Bcast").recv)(40)
    rec = call("MPI_Reduce")
    rec.send(24)
    if r == 0:
        rec.recv(24)
    for n in (8, 16):
        rec = call("MPI_Allreduce")
        rec.send(n)
        rec.recv(n)
    rec = call("MPI_Gather")
    rec.send(8)
    if r == 0:
        rec.recv(8 * P, 8)
    rec = call("MPI_Gatherv")
    rec.send(4 * (r + 1))
    if r == 0:
        tot = 4 * P * (P + 1) // 2
        rec.recv(tot, tot // P)
    rec = call("MPI_Scatter")
    if r == 0:
        rec.send(12 * P, 12)
    rec.recv(12)
    rec = call("MPI_Allgather")
    rec.send(4)
    rec.recv(4 * P, 4)
    rec = call("MPI_Allgatherv")
    rec.send(8)  # MPI_IN_PLACE: its own block
    rec.recv(8 * P, 8)
    rec = call("MPI_Alltoall")
    rec.send(8 * P, 8)
    rec.recv(8 * P, 8)
    rec = call("MPI_Alltoallv")
    rec.send(4 * P, 4)
    rec.recv(4 * P, 4)
    rec = call("MPI_Reduce_scatter_block")
    rec.send(16 * P, 16)
    rec.recv(16)
    rec = call("MPI_Scan")
    rec.send(8)
    rec.recv(8)
    rec = call("MPI_Exscan")
    rec.send(4)
    rec.recv(4)
    call("MPI_Barrier", 2)
    (call("MPI_Ibcast").send if r == 0 else call("MPI_Ibcast").recv)(40)
    call("MPI_Wait")
    rec = call("MPI_Iallreduce")
    rec.send(8)
    rec.recv(8)
    call("MPI_Wait")
    # 7. split(color r % 2, key -r): members of my parity in decreasing world rank
    call("MPI_Comm_split")
    members = sorted((q for q in range(P) if q % 2 == r % 2), reverse=True)
    sr, sp = members.index(r), len(members)
    call("MPI_Comm_rank")
    call("MPI_Comm_size")
    rec = call("MPI_Sendrecv")
    rec.send(64)
    rec.recv(64)
    psend(members[(sr + 1) % sp], 64)
    precv(members[(sr - 1) % sp], 64)
    call("MPI_Comm_dup")
    call("MPI_Barrier")
    call("MPI_Comm_free", 2)
    # 8. one-sided
    call("MPI_Win_create")
    call("MPI_Win_fence", 3)
    call("MPI_Put").send(40)
    psend(right, 40)
    call("MPI_Get").recv(16)
    precv(left, 16)
    call("MPI_Win_free")
    # 9. MPI-IO
    call("MPI_File_open")
    call("MPI_File_write_at").send(100)
    call("MPI_File_read_at").recv(100)
    call("MPI_File_close")
    call("MPI_Barrier")
    if r == 0:
        call("MPI_File_delete")
    call("MPI_Finalize")  # its record: the wait for the last rank (docs/runtime.md)
    return dict(f), dict(sent), dict(recv)


def check_rank(line: dict, P: int) -> None:
    """Assert that one rank line of a profile is exactly what the program did."""
    r = line["rank"]
    recs, sent, recv = expected(r, P)
    got = line["functions"]
    assert sorted(got) == sorted(recs), f"rank {r}: functions differ: " \
        f"extra {sorted(set(got) - set(recs))}, missing {sorted(set(recs) - set(got))}"
    for name, e in recs.items():
        g = got[name]
        assert g["calls"] == e.calls, f"rank {r} {name}: calls {g['calls']} != {e.calls}"
        assert g.get("bytes_sent", 0) == e.bs, f"rank {r} {name}: bytes_sent {g.get('bytes_sent')} != {e.bs}"
        assert g.get("bytes_recv", 0) == e.br, f"rank {r} {name}: bytes_recv {g.get('bytes_recv')} != {e.br}"
        assert g.get("hist_send_bytes", 0) == e.hsb, f"rank {r} {name}: hist_send_bytes {g.get('hist_send_bytes')} != {e.hsb}"
        hs = {i: v for i, v in enumerate(g.get("hist_send", [])) if v}
        hr = {i: v for i, v in enumerate(g.get("hist_recv", [])) if v}
        assert hs == dict(e.hs), f"rank {r} {name}: hist_send {hs} != {dict(e.hs)}"
        assert hr == dict(e.hr), f"rank {r} {name}: hist_recv {hr} != {dict(e.hr)}"
        assert g["time_s"] >= 0 and g["time_min_s"] <= g["time_max_s"]
    gs = {p: [m, b] for p, m, b in line["peers"]["sent"]}
    gr = {p: [m, b] for p, m, b in line["peers"]["recv"]}
    assert gs == sent, f"rank {r}: peers sent {gs} != {sent}"
    assert gr == recv, f"rank {r}: peers recv {gr} != {recv}"


def distinct_functions(P: int) -> set[str]:
    return set(expected(0, P)[0])
