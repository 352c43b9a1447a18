"""The flight recorder's verdicts on labelled jobs (docs/flight-recorder.md): healthy jobs
killed are never called deadlocked or mismatched; real deadlocks, mismatches, a computing
rank and an MPI_Abort are named with their ranks.  Also: hand-made dumps for the cases a
real job shows only by chance, corrupted partial dumps (a report or one line, never a
traceback), the partial directory of another job and a symbolic link at its path.

The jobs are tests/progs/flight_corpus on 4 ranks, run by tests/flight_corpus.py (the
whole corpus, n times, with its confusion matrix, is run by hand: see that file)."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import launcher, mpi_env
from flight_corpus import HEALTHY_OK, SCENARIOS, names_right, run_one
from test_cli_support import mpilens_inproc

FLAVOUR = os.environ.get("MPILENS_MPI", "openmpi")

# (scenario, kill moment): healthy ones at a moment each, then one of each kind of hang
CI = [("pipeline", 1.3), ("ring", 0.4), ("colls", 2.5), ("ssend2", None), ("recvrecv", None),
      ("bcast_allreduce", None), ("skip", None), ("compute", None), ("abort", None),
      ("stopterm", None)]


@pytest.mark.parametrize("name,at", CI, ids=[f"{n}@{a}" if a else n for n, a in CI])
def test_corpus_verdict(build: Path, name: str, at: float | None) -> None:
    if FLAVOUR == "intelmpi" and name == "bcast_allreduce":
        # Intel MPI returns from the mismatched MPI_Bcast and MPI_Allreduce of one double
        # on every rank, and the job then waits in MPI_Finalize (every rank there, its 5th
        # collective): no rank is inside the mismatched calls, so no dump can show them
        pytest.skip("Intel MPI completes this mismatch: nothing left to see in the dumps")
    sc = SCENARIOS[name]
    res = run_one(sc, FLAVOUR, build, at)
    assert res["verdict"] not in ("deadlock", "mismatch") or sc.label not in ("healthy",), res
    # a healthy job may lose a rank's dump on a loaded machine (mpirun's SIGKILL comes 1 s
    # after its SIGTERM): "missing" then says so, and accuses no one
    ok = sc.ok + (("missing",) if sc.label == "healthy" else ())
    assert res["verdict"] in ok, (res["verdict"], res["text"], res["note"])
    if sc.label != "healthy":
        assert names_right(sc, res), res["text"]
    if name == "stopterm":
        w = res["w"]
        if FLAVOUR == "openmpi":
            # mpirun sends SIGCONT before SIGTERM: rank 1 resumed and dumped (the others
            # may have moved on before their SIGTERM, or not); the hang stays the verdict,
            # and rank 1 says it was stopped (its 5 s stop: 5x the recorder's 1 s threshold)
            assert w["verdict"]["kind"] == "stuck_on_stopped"
            assert w["at_hang"]["verdict"]["kind"] == "stuck_on_stopped"
            assert "which was stopped from " in w["at_hang"]["verdict"]["text"]
            assert w["ranks"][1]["reason"] == "signal"
            (stop,) = w["ranks"][1]["stopped"]
            assert stop["for_s"] >= 1.0 and stop["cpu_s"] < 0.25 * stop["for_s"], stop
        else:
            # hydra leaves the rank stopped: no dump of rank 1; the others still inside
            # the collective at SIGTERM; the time line says so
            assert res["text"].startswith("stuck on rank 1: ")
            assert w["ranks"][1]["state"] == "no_dump"
            assert any(f["text"].startswith("hung from ") and f["text"].endswith(", still stuck")
                       for f in w["findings"][1:]), w["findings"]


# ---- hand-made dumps ----

def _dump(rank: int, n: int, call: dict[str, Any] | None, *, reason: str = "signal",
          elapsed: float = 3.0, requests: list[dict[str, Any]] | None = None,
          world: int | None = 3, calls: int = 10, **extra: Any) -> str:
    head = {"format": "mpilens-partial", "version": 1, "rank": rank, "nranks": n,
            "reason": reason, "signal": "SIGTERM" if reason == "signal" else None,
            "errorcode": None, "dump": 1, "created": "2026-01-01T00:00:00Z",
            "elapsed_s": elapsed, "job_id": "j", "command": "./a", "host": "h", "pid": 100 + rank,
            "mpi_library": "x", "hang_after_s": 0, "world_collectives": world,
            "threads": [{"thread": 0, "call": call}], "requests": requests or [],
            "requests_live": len(requests or []), "untracked_requests": 0, **extra}
    line = {"rank": rank, "host": "h", "pid": 100 + rank, "wall_s": elapsed,
            "mpi_s": 0.5 * (rank + 1), "threads": 1,
            "functions": {"MPI_Barrier": {"calls": calls, "time_s": 0.5 * (rank + 1)}},
            "peers": {"sent": [], "recv": []}}
    return json.dumps(head) + "\n" + json.dumps(line) + "\n"


def _p2p(fn: str, kind: str, peer: int, tag: int, since: float) -> dict[str, Any]:
    key = "dest" if kind == "send" else "source"
    return {"function": fn, "kind": kind, "comm": "world", key: peer, "tag": tag,
            "bytes": 1240, "since_s": since}


def _job(tmp: Path, calls: dict[int, dict[str, Any] | None], n: int = 4, **kw: Any) -> dict:
    d = tmp / "job.prof.partial"
    d.mkdir(exist_ok=True)
    for r, c in calls.items():
        (d / f"rank-{r}").write_text(_dump(r, n, c, **kw))
    proc = mpilens_inproc("report", d, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_matched_blocking_pair_is_in_flight(tmp_path: Path) -> None:
    """NPB LU's case: rank 0 in MPI_Send to 1 (tag 2) while rank 1 is in MPI_Recv from 0
    (tag 2) for 5 s: a matched pair in flight, not a cycle (it was called a deadlock)."""
    w = _job(tmp_path, {0: _p2p("MPI_Send", "send", 1, 2, 5.0),
                        1: _p2p("MPI_Recv", "recv", 0, 2, 5.0),
                        2: None, 3: None})["partial"]
    assert w["cycles"] == [] and w["deadlocked"] == []
    assert [r["waits_for"] for r in w["ranks"]] == [[], [], [], []]
    assert w["verdict"]["kind"] == "communicating"


def test_any_source_and_any_tag_match(tmp_path: Path) -> None:
    w = _job(tmp_path, {0: _p2p("MPI_Send", "send", 1, 2, 5.0),
                        1: {**_p2p("MPI_Recv", "recv", 0, -1, 5.0), "source": "any"},
                        2: None, 3: None})["partial"]
    assert w["deadlocked"] == [] and w["verdict"]["kind"] == "communicating"


def test_recv_recv_snapshot_is_not_a_deadlock_until_settled(tmp_path: Path) -> None:
    """Two ranks each in MPI_Recv from the other: for 10 ms it is an eager exchange seen
    mid-way (healthy), for 5 s a deadlock."""
    young = _job(tmp_path, {0: _p2p("MPI_Recv", "recv", 1, 5, 0.01),
                            1: _p2p("MPI_Recv", "recv", 0, 5, 0.01), 2: None, 3: None})
    assert young["partial"]["verdict"]["kind"] == "communicating"
    old = _job(tmp_path, {0: _p2p("MPI_Recv", "recv", 1, 5, 5.0),
                          1: _p2p("MPI_Recv", "recv", 0, 5, 5.0), 2: None, 3: None})
    w = old["partial"]
    assert w["cycles"] == [[0, 1, 0]] and w["deadlocked"] == [0, 1]
    assert w["verdict"]["text"].startswith(
        "deadlock: 0 -> 1 -> 0 (rank 0 in MPI_Recv from 1, tag 5, 1.21 KiB; rank 1 in "
        "MPI_Recv from 0, tag 5, 1.21 KiB): none of them can be met -- missing: a matching "
        "send from rank 0; a matching send from rank 1; every call waiting for 5 s or more")


def test_posted_irecv_matches_a_send(tmp_path: Path) -> None:
    """Rank 1 computes with an MPI_Irecv from 0 (tag 4) posted: rank 0's MPI_Ssend is in
    flight; rank 0's wait on rank 2's receive is not."""
    irecv = {"function": "MPI_Irecv", "kind": "recv", "persistent": False, "comm": "world",
             "source": 0, "tag": 4, "bytes": 8, "since_s": 4.0}
    d = tmp_path / "job.prof.partial"
    d.mkdir()
    (d / "rank-0").write_text(_dump(0, 3, _p2p("MPI_Ssend", "send", 1, 4, 4.0)))
    (d / "rank-1").write_text(_dump(1, 3, None, requests=[irecv]))
    (d / "rank-2").write_text(_dump(2, 3, _p2p("MPI_Ssend", "send", 0, 9, 4.0)))
    w = json.loads(mpilens_inproc("report", d, "--format", "json").stdout)["partial"]
    assert [r["waits_for"] for r in w["ranks"]] == [[], [], [0]]
    assert w["deadlocked"] == []


def test_stats_over_the_ranks_with_a_dump(tmp_path: Path) -> None:
    """Missing ranks are not ranks at 0 s: mean between min and max, 'n of N ranks'."""
    data = _job(tmp_path, {0: None, 1: None}, n=4)
    assert data["partial"]["missing"] == [2, 3]
    assert data["partial"]["verdict"]["text"] == "ranks 2-3 left no dump; 2 of 4 ranks left a dump"
    from mpilens.report.partial import load_partial
    prof = load_partial([tmp_path / "job.prof.partial"])
    st = prof.header["functions"]["MPI_Barrier"]["rank_time_s"]
    assert (st["min"], st["mean"], st["max"]) == (0.5, 0.75, 1.0)
    assert prof.header["mpi_s"] == {"min": 0.5, "mean": 0.75, "max": 1.0}


def test_stopped_rank_is_named(tmp_path: Path) -> None:
    """Ranks 0, 2, 3 in their 7th MPI_Allreduce for 2 s after SIGTERM; rank 1's last dump
    is a hang dump 3 s older (it could not dump for the signal: stopped)."""
    coll = {"function": "MPI_Allreduce", "kind": "coll", "comm": "world", "root": None,
            "coll_seq": 7, "tag": -1, "bytes": 8, "since_s": 2.0}
    d = tmp_path / "job.prof.partial"
    d.mkdir()
    for r in (0, 2, 3):
        (d / f"rank-{r}").write_text(_dump(r, 4, coll, world=7, elapsed=6.0))
    (d / "rank-1").write_text(_dump(1, 4, {**coll, "coll_seq": 6, "since_s": 1.0},
                                    world=6, reason="hang", elapsed=3.0))
    w = json.loads(mpilens_inproc("report", d, "--format", "json").stdout)["partial"]
    assert w["verdict"]["kind"] == "stuck_on_stopped"
    assert w["verdict"]["text"].startswith("stuck on rank 1: ranks 0, 2-3 (in MPI_Allreduce, "
                                           "up to 2 s) wait, directly or through others, for "
                                           "rank 1, which stopped dumping")


# ---- the history of the dumps ----

T0 = 1796644800.0  # 2026-12-07 12:00:00 UTC
ALLRED = {"function": "MPI_Allreduce", "kind": "coll", "comm": "world", "root": None,
          "tag": -1, "bytes": 8}


def _write(d: Path, name: str, text: str) -> None:
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)


def _report(d: Path) -> dict[str, Any]:
    proc = mpilens_inproc("report", d, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["partial"]


def _stopped_job(d: Path, resumed: bool) -> None:
    """Rank 1 stopped (SIGSTOP) from 12:00:02 while ranks 0, 2, 3 wait in their 7th
    MPI_Allreduce: their hang dumps at 12:00:03 (rank-N.hang, also rank-N.prev).  Then
    SIGTERM at 12:00:08: resumed (Open MPI's SIGCONT), every rank moved on and dumped
    outside MPI; or not (MPICH's hydra leaves it stopped): ranks 0, 2, 3 still inside."""
    for r in (0, 2, 3):
        hang = _dump(r, 4, {**ALLRED, "coll_seq": 7, "since_s": 1.0}, reason="hang",
                     elapsed=3.0, world=7, calls=20, time=T0 + 3, cpu_s=2.9, stopped=[])
        _write(d, f"rank-{r}.hang", hang)
        _write(d, f"rank-{r}.prev", hang)
        call = None if resumed else {**ALLRED, "coll_seq": 7, "since_s": 6.0}
        _write(d, f"rank-{r}", _dump(r, 4, call, elapsed=8.0, world=9 if resumed else 7,
                                     calls=30 if resumed else 20, dump=2, time=T0 + 8,
                                     cpu_s=7.9, stopped=[]))
    if resumed:
        _write(d, "rank-1", _dump(1, 4, None, elapsed=8.0, world=9, calls=30, time=T0 + 8,
                                  cpu_s=2.1, stopped=[{"from": T0 + 2, "for_s": 6.0,
                                                       "cpu_s": 0.001}]))


def test_stopped_rank_then_sigterm_keeps_the_hang(tmp_path: Path) -> None:
    """Open MPI: the stopped rank resumed by SIGCONT before SIGTERM; the last dumps show
    everyone moving again.  The verdict keeps the hang (it was 'still progressing')."""
    d = tmp_path / "job.prof.partial"
    _stopped_job(d, resumed=True)
    w = _report(d)
    assert w["verdict"]["kind"] == "stuck_on_stopped"
    assert w["verdict"]["text"] == (
        "hung from 12:00:03 UTC (stuck on rank 1, which was stopped for 6 s), then ended by "
        "SIGTERM at 12:00:08 UTC while moving again (ranks 0, 2-3 completed MPI calls after "
        "the hang; rank 1 resumed)")
    assert [f["text"][:40] for f in w["findings"][1:]] == [
        "at the hang: stuck on rank 1: ranks 0, 2", "at the end: rank 1 was stopped from 12:0",
        "at the end: still progressing: ranks 0, "]
    assert w["findings"][1]["text"].endswith(
        "for rank 1, which was stopped from 12:00:02 UTC for 6 s (its clock ran, its CPU time "
        "did not); 3 of 4 ranks left a dump")
    assert [t["what"] for t in w["timeline"]] == ["hang", "ended by SIGTERM"]
    # without the hang dumps (as before rank-N.hang): rank 1's own dump still says it was
    # stopped (it was 'still progressing')
    for r in (0, 2, 3):
        (d / f"rank-{r}.hang").unlink()
        (d / f"rank-{r}.prev").unlink()
    v = _report(d)["verdict"]
    assert (v["kind"], v["text"]) == ("stopped", (
        "rank 1 was stopped from 12:00:02 UTC for 6 s -- its clock ran, its CPU time did not; "
        "4 of 4 ranks left a dump"))


def test_stopped_rank_left_stopped_then_sigterm(tmp_path: Path) -> None:
    """MPICH: the rank stays stopped, no dump of it; the last dumps already show the hang,
    and the time line adds when it began."""
    d = tmp_path / "job.prof.partial"
    _stopped_job(d, resumed=False)
    w = _report(d)
    assert w["verdict"]["kind"] == "stuck_on_missing"
    assert w["verdict"]["text"].startswith("stuck on rank 1: ranks 0, 2-3 (in MPI_Allreduce, "
                                           "up to 6 s) wait")
    assert w["findings"][-1]["text"] == (
        "hung from 12:00:03 UTC (stuck on rank 1, which left no dump), then ended by SIGTERM "
        "at 12:00:08 UTC, still stuck")


def test_a_stop_long_before_the_dump_is_a_note(tmp_path: Path) -> None:
    """Rank 2 stopped for 3 s at 12:00:05, then ran on for a minute: the verdict is the
    job's (no rank inside MPI), the stop a note after it."""
    d = tmp_path / "job.prof.partial"
    for r in range(4):
        stops = [{"from": T0 + 5, "for_s": 3.0, "cpu_s": 0.0}] if r == 2 else []
        _write(d, f"rank-{r}", _dump(r, 4, None, elapsed=70.0, time=T0 + 70, stopped=stops))
    w = _report(d)
    assert [(f["kind"], f["text"]) for f in w["findings"]] == [
        ("none", "no rank is inside an MPI call; 4 of 4 ranks left a dump"),
        ("stopped_earlier", "rank 2 was stopped earlier and ran on (rank 2 from 12:00:05 UTC "
                            "for 3 s)")]


def test_hang_dump_timing_a_stop_accuses_no_one(tmp_path: Path) -> None:
    """hpcc's case: rank 2 stopped at 12:00:08 inside MPI_Testany for 15 s; the others
    poll (short calls: no hang dump).  A recorder before 'a stop is not a hang' wrote a
    hang dump on resuming (its call 'inside for 15 s'), then all dumped on SIGTERM.  Not
    'stuck on ranks 0-1, 3, which left no dump': rank 2 was stopped."""
    d = tmp_path / "job.prof.partial"
    testany = {"function": "MPI_Testany", "kind": "wait", "comm": None, "tag": -1,
               "bytes": 0, "since_s": 15.0, "requests": 1, "waits_on": [
                   {**_p2p("MPI_Irecv", "recv", 0, 5, 15.0), "persistent": False}]}
    stop = [{"from": T0 + 8, "for_s": 15.0, "cpu_s": 0.01}]
    hang = _dump(2, 4, testany, reason="hang", elapsed=23.0, time=T0 + 23.05, stopped=stop)
    _write(d, "rank-2.hang", hang)
    _write(d, "rank-2.prev", hang)
    _write(d, "rank-2", _dump(2, 4, None, elapsed=23.5, calls=12, dump=2, time=T0 + 23.5,
                              stopped=stop))
    for r in (0, 1, 3):
        _write(d, f"rank-{r}", _dump(r, 4, _p2p("MPI_Iprobe", "other", 2, 5, 0.001),
                                     elapsed=23.5, time=T0 + 23.5))
    w = _report(d)
    assert w["timeline"] == []
    assert (w["verdict"]["kind"], w["verdict"]["text"]) == ("stopped", (
        "rank 2 was stopped from 12:00:08 UTC for 15 s -- its clock ran, its CPU time did "
        "not; 4 of 4 ranks left a dump"))


def test_slow_call_hang_dump_then_progress_accuses_no_one(tmp_path: Path) -> None:
    """Healthy: a matched MPI_Send/MPI_Recv pair inside for 1.5 s (a slow transfer) made
    hang dumps; later dumps show the job moving.  No hang in the verdict."""
    d = tmp_path / "job.prof.partial"
    calls = {0: _p2p("MPI_Send", "send", 1, 2, 1.5), 1: _p2p("MPI_Recv", "recv", 0, 2, 1.5)}
    for r in range(4):
        hang = _dump(r, 4, calls.get(r), reason="hang", elapsed=3.0, calls=20, time=T0 + 3)
        if r in calls:
            _write(d, f"rank-{r}.hang", hang)
        _write(d, f"rank-{r}.prev", hang)
        _write(d, f"rank-{r}", _dump(r, 4, None, elapsed=8.0, calls=30, dump=2, time=T0 + 8))
    w = _report(d)
    assert w["verdict"]["kind"] == "progressing" and w["timeline"] == [], w["verdict"]
    assert all(f["kind"] not in ("deadlock", "mismatch") for f in w["findings"])


def test_stalled_allreduce_member_is_not_a_mismatch(tmp_path: Path) -> None:
    """LULESH's case, 8 ranks: rank 5 in its 17th MPI_Allreduce for 4 s; the others made
    their 17th (an MPI_Allreduce too: rank 0's earlier dump shows it) and went on to their
    18th.  Ranks may leave a collective whose stalled member already sent its part: no
    mismatch, 'stuck in a collective the others completed'."""
    d = tmp_path / "job.prof.partial"
    for r in range(8):
        seq = 17 if r == 5 else 18
        _write(d, f"rank-{r}", _dump(r, 8, {**ALLRED, "coll_seq": seq,
                                            "since_s": 4.0 if r == 5 else 0.2},
                                     world=seq, elapsed=9.0, dump=2, time=T0 + 9))
    _write(d, "rank-0.prev", _dump(0, 8, {**ALLRED, "coll_seq": 17, "since_s": 0.01},
                                   world=17, elapsed=5.0, time=T0 + 5))
    w = _report(d)
    assert w["mismatched"] == []
    assert w["verdict"]["kind"] == "stuck_in_completed"
    assert w["verdict"]["text"] == (
        "stuck in a collective the others completed: rank 5 in MPI_Allreduce on "
        "MPI_COMM_WORLD, 17th collective on it, for 4 s or more, while ranks 0-4, 6-7 made "
        "it and went on (cannot tell why: a member may leave once its part is sent)")
    # the others outside MPI after their 17th: the same
    for r in (0, 1, 2, 3, 4, 6, 7):
        _write(d, f"rank-{r}", _dump(r, 8, None, world=17, elapsed=9.0, dump=2, time=T0 + 9))
    w = _report(d)
    assert w["mismatched"] == [] and w["verdict"]["kind"] == "stuck_in_completed"


def test_mismatch_proven_by_an_earlier_dump(tmp_path: Path) -> None:
    """Rank 3 in its 5th collective, MPI_Allreduce, for 4 s; rank 0's earlier dump shows
    its 5th was MPI_Bcast (root 0): proven, by the operations at one collective number."""
    d = tmp_path / "job.prof.partial"
    for r in range(4):
        call = {**ALLRED, "coll_seq": 5, "since_s": 4.0} if r == 3 else None
        _write(d, f"rank-{r}", _dump(r, 4, call, world=5 if r == 3 else 6, elapsed=9.0,
                                     dump=2, time=T0 + 9))
    _write(d, "rank-0.prev", _dump(0, 4, {**ALLRED, "function": "MPI_Bcast", "root": 0,
                                          "coll_seq": 5, "since_s": 0.5},
                                   world=5, elapsed=5.0, time=T0 + 5))
    w = _report(d)
    assert w["verdict"]["kind"] == "mismatch"
    assert w["verdict"]["text"] == (
        "mismatched collectives on MPI_COMM_WORLD: rank 0 made MPI_Bcast "
        "(root 0), rank 3 in MPI_Allreduce -- for each of them its 5th collective on it")
    # the same with rank 0's 5th an MPI_Allreduce too: no mismatch
    _write(d, "rank-0.prev", _dump(0, 4, {**ALLRED, "coll_seq": 5, "since_s": 0.5},
                                   world=5, elapsed=5.0, time=T0 + 5))
    w = _report(d)
    assert w["mismatched"] == [] and w["verdict"]["kind"] == "stuck_in_completed"


def test_world_ops_prove_a_mismatch_or_clear_one(tmp_path: Path) -> None:
    """bcast_allreduce's shape: ranks 2-3 in their 4th collective, MPI_Allreduce, for 3 s;
    ranks 0-1 went on to MPI_Finalize (their 5th).  Their world_ops say what their 4th
    was: MPI_Bcast (root 0), a mismatch; MPI_Allreduce, none (a stalled member)."""
    d = tmp_path / "job.prof.partial"
    fin = {"function": "MPI_Finalize", "kind": "coll", "comm": "world", "root": None,
           "coll_seq": 5, "tag": -1, "bytes": 0, "since_s": 3.0}
    for fourth, kind in (("MPI_Bcast", "mismatch"), ("MPI_Allreduce", "stuck_in_completed")):
        ops = [{"coll_seq": k, "function": "MPI_Barrier", "root": None} for k in (1, 2, 3)]
        ops += [{"coll_seq": 4, "function": fourth, "root": 0 if fourth == "MPI_Bcast" else None},
                {"coll_seq": 5, "function": "MPI_Finalize", "root": None}]
        for r in range(4):
            call = fin if r < 2 else {**ALLRED, "coll_seq": 4, "since_s": 3.0}
            _write(d, f"rank-{r}", _dump(r, 4, call, world=5 if r < 2 else 4, time=T0 + 9,
                                         world_ops=ops if r < 2 else ops[:3] + [
                                             {**ops[3], "function": "MPI_Allreduce",
                                              "root": None}]))
        w = _report(d)
        assert w["verdict"]["kind"] == kind, w["verdict"]
    (m,) = [m for m in _report_mismatch(d, tmp_path)]
    assert m == ("mismatched collectives on MPI_COMM_WORLD: ranks 0-1 made MPI_Bcast (root 0), "
                 "ranks 2-3 in MPI_Allreduce -- for each of them its 4th collective on it")


def _report_mismatch(d: Path, tmp: Path) -> list[str]:
    """The mismatch texts of d with ranks 0-1's 4th collective made an MPI_Bcast again."""
    for r in (0, 1):
        text = (d / f"rank-{r}").read_text()
        (d / f"rank-{r}").write_text(text.replace(
            '{"coll_seq": 4, "function": "MPI_Allreduce", "root": null}',
            '{"coll_seq": 4, "function": "MPI_Bcast", "root": 0}'))
    return [f["text"] for f in _report(d)["findings"] if f["kind"] == "mismatch"]


# ---- corrupted partial dumps ----

NASTY: list[Any] = [-1, 10**23, 2**64, 1.5, float("nan"), "x", "", None, True, [], {}, ["x"],
                    {"a": 1}, "\ud800", -5, 7]


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


def _mutate_all(d: Path, base: dict[int, str], count: int, seed: int, line2: float,
                tmp: Path) -> dict[str, int]:
    """count value mutations of the rank files in d (one file at a time, then put back):
    every report is a report (the bad file left out with one line) or shows what the file
    now says; never a traceback."""
    rng = random.Random(seed)
    outcomes = {"report": 0, "left out": 0}
    for i in range(count):
        r = rng.choice(sorted(base))
        lines = [json.loads(x) for x in base[r].splitlines()]
        k = 1 if rng.random() < line2 else 0
        doc = copy.deepcopy(lines[k])
        path = rng.choice([p for p in _paths(doc) if p])
        target = doc
        for key in path[:-1]:
            target = target[key]
        if rng.random() < 0.15 and isinstance(target, dict):
            del target[path[-1]]
        else:
            target[path[-1]] = rng.choice(NASTY)
        lines[k] = doc
        (d / f"rank-{r}").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        label = f"mutation {i}: rank {r} line {k + 1} {'.'.join(map(str, path))}"
        cmds: list[tuple[Any, ...]] = [("report", d, "--format", "json")]
        if i % 5 == 0:  # the text tables are slower: every 5th
            cmds.append(("report", d))
        if i < 3:  # drawing is slower still: the first few
            cmds.append(("html", d, "-o", tmp / "p.html", "--force"))
        for args in cmds:
            try:
                proc = mpilens_inproc(*args)
            except Exception as exc:  # a traceback
                raise AssertionError(f"{label}: {type(exc).__name__}: {exc}") from exc
            assert proc.returncode == 0, (label, proc.stderr)
            assert "Traceback" not in proc.stderr, label
        data = json.loads(proc.stdout if len(cmds) == 1 else
                          mpilens_inproc("report", d, "--format", "json").stdout)
        outcomes["left out" if data["partial"]["skipped"] else "report"] += 1
        (d / f"rank-{r}").write_text(base[r])
    return outcomes


def test_mutated_partial_dumps_never_trace_back(tmp_path: Path) -> None:
    """50 value mutations of hand-made dumps (mostly their headers: calls, requests, waits,
    communicators)."""
    irecv = {"function": "MPI_Irecv", "kind": "recv", "persistent": False, "comm": "world",
             "source": 2, "tag": 9, "bytes": 8, "since_s": 4.0}
    wait = {"function": "MPI_Waitall", "kind": "wait", "comm": None, "tag": -1, "bytes": 0,
            "since_s": 4.0, "requests": 1, "waits_on": [irecv]}
    coll = {"function": "MPI_Bcast", "kind": "coll", "comm": {"size": 2, "ranks": [1, 3]},
            "root": 3, "coll_seq": 2, "tag": -1, "bytes": 8, "since_s": 4.0}
    base = {0: _dump(0, 4, wait, requests=[irecv]), 1: _dump(1, 4, coll),
            2: _dump(2, 4, _p2p("MPI_Ssend", "send", 0, 3, 4.0)), 3: _dump(3, 4, None)}
    d = tmp_path / "job.prof.partial"
    d.mkdir()
    for r, text in base.items():
        (d / f"rank-{r}").write_text(text)
    outcomes = _mutate_all(d, base, 50, 20261126, 0.3, tmp_path)
    assert outcomes["left out"] >= 20 and outcomes["report"] >= 5, outcomes


def test_mutated_dump_history_never_traces_back(tmp_path: Path) -> None:
    """40 value mutations of the last dumps of a stopped-then-SIGTERMed job (its hang dumps
    kept beside them): clocks, stops, world_ops included; never a traceback."""
    d = tmp_path / "job.prof.partial"
    _stopped_job(d, resumed=True)
    ops = [{"coll_seq": 6, "function": "MPI_Bcast", "root": 0},
           {"coll_seq": 7, "function": "MPI_Allreduce", "root": None}]
    text = (d / "rank-0").read_text().splitlines()
    head = json.loads(text[0])
    head["world_ops"] = ops
    (d / "rank-0").write_text(json.dumps(head) + "\n" + text[1] + "\n")
    base = {r: (d / f"rank-{r}").read_text() for r in range(4)}
    outcomes = _mutate_all(d, base, 40, 20261207, 0.1, tmp_path)
    assert outcomes["left out"] >= 10 and outcomes["report"] >= 5, outcomes


def test_mutated_real_dumps_never_trace_back(build: Path, tmp_path: Path) -> None:
    """50 value mutations of a real job's dumps (mostly their rank lines: functions, peers,
    call sites, time line, communicators -- 13 of 120 such mutations once traced back)."""
    res = run_one(SCENARIOS["colls"], FLAVOUR, build, 1.0, keep=tmp_path)
    assert res["verdict"] in HEALTHY_OK, res
    (d,) = tmp_path.glob("*/job.prof.partial")
    base = {r: (d / f"rank-{r}").read_text() for r in range(4)}
    assert all('"timeline"' in t and '"callsites"' in t and '"comms"' in t
               for t in base.values())
    outcomes = _mutate_all(d, base, 50, 20261127, 0.7, tmp_path)
    assert outcomes["left out"] >= 20 and outcomes["report"] >= 5, outcomes


def test_bad_file_costs_one_line(tmp_path: Path) -> None:
    d = tmp_path / "job.prof.partial"
    d.mkdir()
    for r in range(4):
        (d / f"rank-{r}").write_text(_dump(r, 4, None))
    text = _dump(2, 4, None).replace('"threads": [{"thread": 0, "call": null}]',
                                     '"threads": ["x"]')
    (d / "rank-2").write_text(text)
    proc = mpilens_inproc("report", d)
    assert proc.returncode == 0, proc.stderr
    assert (f"Left out: {d / 'rank-2'}: corrupted profile: dump header threads[0] is 'x', "
            "expected an object") in " ".join(proc.stdout.split())
    w = json.loads(mpilens_inproc("report", d, "--format", "json").stdout)["partial"]
    assert w["missing"] == [2] and len(w["skipped"]) == 1
    one = mpilens_inproc("report", d / "rank-2")
    assert one.returncode == 2 and len(one.stderr.splitlines()) == 1


# ---- the partial directory: another job's files, a symbolic link ----

def test_finalize_keeps_another_jobs_dumps(build: Path, tmp_path: Path) -> None:
    """A hung job's dumps in <output>.partial; a second job with the same MPILENS_OUTPUT
    ends normally: its MPI_Finalize leaves the other job's rank-N and rank-N.prev."""
    d = tmp_path / "job.prof.partial"
    d.mkdir()
    theirs = {f"rank-{r}{s}": _dump(r, 4, None) for r in range(2) for s in ("", ".prev")}
    for name, text in theirs.items():
        (d / name).write_text(text)
    proc = subprocess.run(launcher(2) + [str(build / "bin" / "mpilens-exec"),
                                         str(build / "tests" / "prof_small")],
                          env=mpi_env({"MPILENS_OUTPUT": str(tmp_path / "job.prof")}),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "job.prof").exists()
    assert {p.name: p.read_text() for p in d.iterdir()} == theirs


def test_symlink_at_the_partial_path_is_refused(build: Path, tmp_path: Path) -> None:
    """MPI_Abort's dump with <output>.partial a symbolic link: one line, nothing written
    through the link, the abort goes on."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "job.prof.partial").symlink_to(elsewhere)
    res = subprocess.run(launcher(4) + [str(build / "bin" / "mpilens-exec"),
                                        str(build / "tests" / "flight_corpus"), "abort",
                                        str(tmp_path)],
                         env=mpi_env({"MPILENS_OUTPUT": str(tmp_path / "job.prof")}),
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode != 0
    assert (f"mpilens: rank 2: cannot write its partial profile in {tmp_path}/job.prof.partial: "
            "it is a symbolic link (refused)") in res.stderr
    assert list(elsewhere.iterdir()) == []


def test_healthy_scenarios_are_labelled_healthy() -> None:
    """The corpus itself: every healthy scenario accepts only verdicts that accuse no one."""
    for sc in SCENARIOS.values():
        if sc.label.startswith("healthy"):
            assert set(sc.ok) <= set(HEALTHY_OK), sc
