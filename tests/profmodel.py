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
        self.ps: list[tuple[int, int]] = []  # (world peer, bytes) of each message sent
        self.pr: list[tuple[int, int]] = []  # ... and received

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

    last = [""]  # the function a message belongs to: the one called last

    def psend(peer: int, n: int) -> None:
        sent[peer][0] += 1
        sent[peer][1] += n
        f[last[0]].ps.append((peer, n))

    def precv(peer: int, n: int) -> None:
        recv[peer][0] += 1
        recv[peer][1] += n
        f[last[0]].pr.append((peer, n))

    def call(name: str, k: int = 1) -> Rec:
        f[name].calls += k
        last[0] = name
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


# prof_c's collectives with data, all on MPI_COMM_WORLD (each records its node span)
COLLECTIVES = {"MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Gatherv",
               "MPI_Scatter", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv",
               "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan", "MPI_Ibcast", "MPI_Iallreduce"}


def node_split(rec: Rec, r: int, node_of: list[int]) -> tuple[list[int], list[int]]:
    """[messages sent, bytes sent, messages received, bytes received] of one function of
    rank r with peers on its own node, and with peers on other nodes."""
    split = [[0, 0, 0, 0], [0, 0, 0, 0]]
    for side, msgs in ((0, rec.ps), (2, rec.pr)):
        for peer, n in msgs:
            x = split[node_of[peer] != node_of[r]]
            x[side] += 1
            x[side + 1] += n
    return split[0], split[1]


def check_nodes(line: dict, P: int, node_of: list[int]) -> None:
    """The rank line's node fields: its node, every function's intra/inter-node split
    and the node span of the collectives (all on MPI_COMM_WORLD)."""
    r = line["rank"]
    recs = expected(r, P)[0]
    assert line["node"] == node_of[r]
    span = {"one_node": 0, "multi_node": 0, "max_nodes": len(set(node_of)),
            "max_ranks_per_node": max(Counter(node_of).values())}
    for name, e in recs.items():
        g = line["functions"][name]
        if e.ps or e.pr:
            intra, inter = node_split(e, r, node_of)
            assert (g["p2p_intra_node"], g["p2p_inter_node"]) == (intra, inter), f"rank {r} {name}"
        else:
            assert "p2p_intra_node" not in g and "p2p_inter_node" not in g, f"rank {r} {name}"
        if name in COLLECTIVES:
            want = dict(span, **{"one_node" if span["max_nodes"] == 1 else "multi_node": e.calls})
            assert g["node_span"] == want, f"rank {r} {name}: {g['node_span']} != {want}"
        else:
            assert "node_span" not in g, f"rank {r} {name}"


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


def check_node_header(header: dict, ranks: list[dict], node_of: list[int]) -> None:
    """The header's node view against the rank lines: the node count, the node x node
    matrix (the ranks' sent peers, by node) and every function's split and span."""
    nn = len(set(node_of))
    matrix = [[[0, 0] for _ in range(nn)] for _ in range(nn)]
    for line in ranks:
        for peer, msgs, nbytes in line["peers"]["sent"]:
            cell = matrix[node_of[line["rank"]]][node_of[peer]]
            cell[0] += msgs
            cell[1] += nbytes
    assert header["nodes"] == {"count": nn,
                               "matrix_msgs": [[c[0] for c in row] for row in matrix],
                               "matrix_bytes": [[c[1] for c in row] for row in matrix]}
    for name, agg in header["functions"].items():
        per = [line["functions"].get(name, {}) for line in ranks]
        for key in ("p2p_intra_node", "p2p_inter_node"):
            if key in agg:
                assert agg[key] == [sum(p.get(key, [0] * 4)[i] for p in per) for i in range(4)], name
            else:
                assert not any(key in p for p in per), name
        spans = [p["node_span"] for p in per if "node_span" in p]
        if spans:
            assert agg["node_span"] == {
                "one_node": sum(s["one_node"] for s in spans),
                "multi_node": sum(s["multi_node"] for s in spans),
                "max_nodes": max(s["max_nodes"] for s in spans),
                "max_ranks_per_node": max(s["max_ranks_per_node"] for s in spans)}, name
    # every byte sent to a known peer is in exactly one of the two classes
    total = sum(c[1] for row in matrix for c in row)
    inter = sum(matrix[i][j][1] for i in range(nn) for j in range(nn) if i != j)
    fsum = [sum(f.get(k, [0, 0])[1] for f in header["functions"].values())
            for k in ("p2p_intra_node", "p2p_inter_node")]
    assert fsum == [total - inter, inter]
