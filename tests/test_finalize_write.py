"""How the ranks write the profile at MPI_Finalize (docs/scale.md, docs/runtime.md):
MPILENS_WRITE=posix (every rank's pwrite at its MPI_Exscan offset; auto's choice up to
1024 ranks) and mpiio (one collective MPI_File_write_at_all) write the same profile,
plain and compressed; the header's hosts come from each node's first rank only; and
tests/progs/fin_probe (the finalize benchmark's program) runs and reports."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path

import pytest
from conftest import BUILD, read_profile, run_mpi
from mpilens.report import analysis
from mpilens.report.profile import load
from test_cli_support import EVERY, STEPS, N, example, per_rank_calls
from test_profiler import check_header

P = 4
EXEC = BUILD / "bin" / "mpilens-exec"


def lines_of(path: Path) -> tuple[dict, list[dict]]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        text = gzip.decompress(raw).decode()
        rows = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
        return rows[0], rows[1:]
    return read_profile(path)


def test_posix_and_mpiio_write_the_same_profile(tmp_path: Path) -> None:
    """heat2d on 4 ranks written with pwrite, with MPI-IO, and with MPI-IO compressed
    (auto compresses through pwrite in test_scale.py): each file whole, each rank's
    exact calls (from the example's source), the header's sums equal to the rank
    lines, and the same hosts, functions and calls in all three."""
    got = []
    for writer, compress in (("posix", "off"), ("mpiio", "off"), ("mpiio", "gzip")):
        out = tmp_path / f"{writer}-{compress}.prof"
        run_mpi(P, [EXEC, example("heat2d"), N, STEPS, EVERY],
                env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", "MPILENS_WRITE": writer,
                     "MPILENS_COMPRESS": compress})
        assert (out.read_bytes()[:2] == b"\x1f\x8b") == (compress == "gzip")
        header, ranks = lines_of(out)
        check_header(header, ranks, P)
        want = per_rank_calls()
        for r in ranks:
            assert {f: r["functions"][f]["calls"] for f in want} == want
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".mpilens-")] == []
        got.append((header["hosts"], header["ranks_per_host"],
                    {f: v["calls"] for f, v in header["functions"].items()},
                    [sorted(r["functions"]) for r in ranks]))
    assert got[0] == got[1] == got[2]


def test_fin_probe_reports_every_rank(tmp_path: Path) -> None:
    """The finalize benchmark's program (bench/finalize/finalize.py) under the profiler:
    one line per rank after MPI_Finalize, and the profile has its exact calls: 4
    Isend, 4 Irecv and 1 Waitall per step with the ring neighbours at distance 1 and 2,
    1 Allreduce per step, 1 Bcast and 1 Reduce every 5th step, 1 Barrier."""
    steps, n = 7, 1000
    out = tmp_path / "f.prof"
    proc = run_mpi(P, [EXEC, BUILD / "tests" / "fin_probe", steps, n],
                   env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    found = re.findall(r"^fin_probe rank=(\d+) finalize_s=([0-9.]+) hwm_kb=(\d+)$", proc.stdout,
                       re.MULTILINE)
    assert sorted(int(r) for r, _, _ in found) == list(range(P))
    assert all(float(t) >= 0 and int(k) > 0 for _, t, k in found)
    header, ranks = read_profile(out)
    check_header(header, ranks, P)
    every5 = len(range(0, steps, 5))
    want = {"MPI_Isend": 4 * steps, "MPI_Irecv": 4 * steps, "MPI_Waitall": steps,
            "MPI_Allreduce": steps, "MPI_Bcast": every5, "MPI_Reduce": every5, "MPI_Barrier": 1}
    for r in ranks:
        assert {f: r["functions"][f]["calls"] for f in want} == want
        assert r["functions"]["MPI_Isend"]["bytes_sent"] == 4 * steps * n
        sent = {p: (m, b) for p, m, b in r["peers"]["sent"]}
        ring = {(r["rank"] + d) % P for d in (-2, -1, 1, 2)}  # at 4 ranks +2 and -2 are one peer
        assert set(sent) == ring
        assert sum(m for m, _ in sent.values()) == 4 * steps


def members(raw: bytes) -> list[bytes]:
    """Each gzip member's text, in file order; the stream must end with the last one."""
    out = []
    while raw:
        d = zlib.decompressobj(31)
        out.append(d.decompress(raw) + d.flush())
        assert d.eof
        raw = d.unused_data
    return out


def gz_member(text: bytes) -> bytes:
    """text as one gzip member at level 9, as runtime/core/profile_gzip.c writes it (the
    same zlib: its output does not depend on how the input is cut)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(text) + c.flush()


@pytest.mark.parametrize("np_,writer,compress,group", [
    (5, "posix", "off", 2), (6, "mpiio", "gzip", None), (7, "posix", "gzip", 1),
    (5, "mpiio", "gzip", 2), (5, "posix", "gzip", 4)])
def test_uneven_lines_at_their_prefix_sums(tmp_path: Path, np_: int, writer: str,
                                           compress: str, group: int | None) -> None:
    """Each rank writes its line at the header's length plus the sum of the lengths of the
    lines below it (the recursive-doubling scan of profile_reduce.c, P not a power of two):
    tests/progs/fin_uneven gives every rank a line of its own length (rank r: r peers
    sent, P-1-r received, the first r of seven local functions).  The file is exactly
    the header and the P lines in rank order, back to back (plain: no byte left over or
    zero, every line whole, MPILENS_COMPRESS_GROUP changing nothing; gzip: the header's
    member, then one member per block of MPILENS_COMPRESS_GROUP consecutive ranks, the
    last one shorter (5 ranks in 2s: 2, 2, 1; in 4s: 4, 1; the default 16: all of them),
    each holding its ranks' whole lines; 1: one member per line, as before grouping), and
    each line holds its rank's exact calls and peers."""
    out = tmp_path / "u.prof"
    env = {"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", "MPILENS_WRITE": writer,
           "MPILENS_COMPRESS": compress}
    if group is not None:
        env["MPILENS_COMPRESS_GROUP"] = str(group)
    run_mpi(np_, [EXEC, BUILD / "tests" / "fin_uneven"], env=env)
    raw = out.read_bytes()
    if compress == "gzip":
        g = group or 16
        blocks = [min(g, np_ - k) for k in range(0, np_, g)]
        packed = members(raw)
        assert [p.count(b"\n") for p in packed] == [1, *blocks]
        assert all(p.endswith(b"\n") for p in packed)
        assert gzip.decompress(raw) == b"".join(packed)  # one stream for gunzip and zcat
        assert b"".join(gz_member(p) for p in packed) == raw  # each zlib's member of its lines
        parts = [ln + b"\n" for p in packed for ln in p[:-1].split(b"\n")]
    else:
        assert b"\0" not in raw and raw.endswith(b"\n")
        parts = [ln + b"\n" for ln in raw[:-1].split(b"\n")]
        assert sum(len(p) for p in parts) == len(raw)
    assert len(parts) == np_ + 1
    header, lines = json.loads(parts[0]), [json.loads(p) for p in parts[1:]]
    check_header(header, lines, np_)
    assert [ln["rank"] for ln in lines] == list(range(np_))
    local = ["MPI_Get_version", "MPI_Get_processor_name", "MPI_Initialized", "MPI_Query_thread",
             "MPI_Is_thread_main", "MPI_Get_library_version", "MPI_Wtick"]
    for r, ln in enumerate(lines):
        f = ln["functions"]
        assert f.get("MPI_Send", {}).get("calls", 0) == r
        assert f.get("MPI_Recv", {}).get("calls", 0) == np_ - 1 - r
        assert {p: (m, b) for p, m, b in ln["peers"]["sent"]} == {q: (1, 8) for q in range(r)}
        assert [n for n in local if n in f] == local[:r]
    sizes = [len(json.dumps(ln)) for ln in lines]
    assert max(sizes) - min(sizes) > 300  # uneven: the offsets differ from multiples of one length
    # the profiler's own finalize, rank 0: its parts within the whole, and the whole shown
    fin = header["profiler_finalize_s"]
    assert 0 <= fin["offsets"] <= fin["total"] and 0 <= fin["reduce"] <= fin["total"]
    assert analysis.summary(load(out))["profiler_finalize_s"] == fin["total"]
    assert analysis._profiler_finalize({"profiler_finalize_s": {"reduce": 0.25}}) == 0.25


@pytest.mark.parametrize("fail_rank,written", [(2, False), (1, True)])
def test_zlib_failure_on_a_block_leader_writes_nothing(tmp_path: Path, fail_rank: int,
                                                       written: bool) -> None:
    """tests/progs/fin_zfail is fin_uneven whose zlib deflateInit2_ fails on rank
    FIN_ZFAIL_RANK.  5 ranks in blocks of 2 (MPILENS_COMPRESS_GROUP=2): rank 2 is its
    block's first rank, which compresses ranks 2 and 3's lines; it fails, every rank
    agrees (through the lines' scan), nothing lands under the final name or as a
    temporary file, rank 0 says so in one line, and the job's exit status stays 0.
    Rank 1 compresses nothing (its line goes to rank 0): the same failure there is
    never reached, and the profile is whole."""
    out = tmp_path / "z.prof.gz"
    proc = run_mpi(5, [EXEC, BUILD / "tests" / "fin_zfail"],
                   env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1",
                        "MPILENS_COMPRESS_GROUP": "2", "FIN_ZFAIL_RANK": str(fail_rank)})
    assert proc.returncode == 0
    if not written:
        assert sorted(p.name for p in tmp_path.iterdir()) == []
        assert [ln for ln in proc.stderr.splitlines() if ln.startswith("mpilens:")] == \
            [f"mpilens: profile not written: {out}: gzip compression (zlib) failed on 1 rank"]
        return
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    assert [p.count(b"\n") for p in members(out.read_bytes())] == [1, 2, 2, 1]
    header, lines = read_profile(out)
    check_header(header, lines, 5)
    assert [ln["functions"].get("MPI_Send", {}).get("calls", 0) for ln in lines] == [0, 1, 2, 3, 4]



def test_long_lines_are_compressed_by_their_own_rank(tmp_path: Path) -> None:
    """tests/progs/fin_wide: ranks 1 and 3 call MPI_Comm_rank from 512 call sites,
    which makes their lines ~90 KB, above the 64 KB that a block's first rank takes
    plain.  5 ranks in blocks of 4: rank 0 compresses ranks 0 and 2 (each the start of a
    member, as ranks 1 and 3 end the member before them), ranks 1 and 3 their own lines,
    rank 4 its own (the next block): header + 5 members, in rank order (without wide
    lines: header, ranks 0-3, rank 4, test_uneven_lines_at_their_prefix_sums).  Every
    member is byte for byte zlib's level-9 member of its lines."""
    wide = "13"
    out = tmp_path / "w.prof.gz"
    run_mpi(5, [EXEC, BUILD / "tests" / "fin_wide"],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", "MPILENS_COMPRESS_GROUP": "4",
                 "MPILENS_CALLSITE_SLOTS": "1024", "FIN_WIDE_RANKS": wide})
    raw = out.read_bytes()
    packed = members(raw)
    assert [p.count(b"\n") for p in packed] == [1, 1, 1, 1, 1, 1]
    assert b"".join(gz_member(p) for p in packed) == raw
    header, lines = read_profile(out)
    check_header(header, lines, 5)
    sizes = [len(json.dumps(ln, separators=(",", ":"))) for ln in lines]
    for r, ln in enumerate(lines):
        assert ln["rank"] == r
        n = 512 if wide and str(r) in wide else 0
        assert ln["functions"]["MPI_Comm_rank"]["calls"] == n + 1
        assert len(ln["callsites"]) >= n + 1 and (sizes[r] > 64 * 1024) == (n > 0)
