"""Node-aware MPI_Bcast (MPILENS_COLL_BCAST, docs/collectives.md): exact results.

tests/progs/coll_bcast.c checks every element of every rank against the root's value
(computed by every rank, bit for bit), from every rank as the root, with MPI_INT,
MPI_DOUBLE, MPI_CHAR and MPI_DOUBLE_INT on 1, 7 and 10007 elements and 1 MiB, on
MPI_COMM_WORLD and a reversed communicator; here on the node layouts of
test_coll_allreduce.py (one node, 2,2, 1,3,3,1 (MPICH 1,2,1), 2,1), each algorithm forced
and adaptive (every case twice in a row: racing and chosen calls), and the profile's coll
section must count every call: the served ones, the ones left to the MPI (count 0, a
derived datatype, an intercommunicator), none at all by default.  The race call by call
is test_coll_select.py's (test_race_count_and_agreement, bcast).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FLAVOUR, read_profile, run_mpi
from test_coll_allreduce import LAYOUTS, _layout

ALGS = ["mpi", "twolevel", "scatterallgather"]
TYPES, COUNTS = 4, 3
DECLINED = 3  # count 0, derived datatype, intercommunicator (2 ranks or more)
# size classes: 1, 7, 10007 elements of 4, 8, 1 and 12 bytes (MPI_DOUBLE_INT's size; its
# extent is 16), and 1 MiB: 10
CLASSES = len({(n * b).bit_length() for n in (1, 7, 10007) for b in (4, 8, 1, 12)} | {21})


def _calls(np_: int, reps: int = 1) -> int:
    """MPI_Bcast calls per rank the engine serves: 2 communicators x (every root x types x
    counts + 1 MiB), each reps times."""
    return 2 * (np_ * TYPES * COUNTS + 1) * reps


def _run(build: Path, tmp: Path, np_: int, env: dict[str, str], reps: int = 1) -> dict:
    prof = tmp / "b.prof"
    proc = run_mpi(np_, [build / "bin" / "mpilens-exec", build / "tests" / "coll_bcast",
                         str(reps)], env={"MPILENS_OUTPUT": str(prof), **env}, cwd=tmp)
    assert f"calls={_calls(np_, reps)} declined={DECLINED}" in proc.stdout, \
        proc.stdout + proc.stderr
    header, _ = read_profile(prof)
    return header


@pytest.mark.parametrize("alg", ALGS[1:])
@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_forced_algorithm_exact(alg: str, np_: int, nodes: str | None, build: Path,
                                tmp_path: Path) -> None:
    header = _run(build, tmp_path, np_, {"MPILENS_COLL_BCAST": alg, **_layout(nodes)})
    assert header["sections"]["coll"] == 1 and list(header["coll"]) == ["bcast"]
    sec = header["coll"]["bcast"]
    assert sec["forced"] == sec["mode"] == alg
    assert sec["calls"] == {a: _calls(np_) * np_ if a == alg else 0 for a in ALGS}
    assert sec["declined"] == DECLINED * np_
    assert [(r["choice"], r["source"], r["communicators"], r["learning_calls"])
            for r in sec["choices"]] == [(alg, "forced", 2, 0)] * CLASSES
    assert sum(r["calls"] for r in sec["choices"]) == _calls(np_)
    fn = header["functions"]["MPI_Bcast"]
    assert fn["calls"] == (_calls(np_) + DECLINED) * np_
    assert fn["repro_calls"] == _calls(np_) * np_


@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_adaptive_exact(np_: int, nodes: str | None, build: Path, tmp_path: Path) -> None:
    env = {"MPILENS_COLL_BCAST": "adaptive", "MPILENS_COLL_LEARN": "3", **_layout(nodes)}
    if FLAVOUR == "intelmpi":
        # Intel MPI 2021.18's shared-memory collectives return zeros past 32 KiB when large
        # MPI_Bcast calls on MPI_COMM_WORLD alternate with ones on its sub-communicators
        # (reproduced without mpilens: docs/notes/coll-select-rounds.md); a race does that.
        env["I_MPI_COLL_INTRANODE"] = "pt2pt"
    header = _run(build, tmp_path, np_, env, reps=2)
    assert list(header["coll"]) == ["bcast"]
    sec = header["coll"]["bcast"]
    assert sec["mode"] == "adaptive" and sec["rounds"] == 3 and "forced" not in sec
    calls = _calls(np_, 2)
    assert sum(sec["calls"].values()) == calls * np_
    assert sec["declined"] == DECLINED * np_
    one = nodes is None or "," not in nodes
    source = "one node" if one else "learned"  # no layout of 1,1,...: 2 ranks on some node
    if one:
        assert sec["calls"] == {"mpi": calls * np_, "twolevel": 0, "scatterallgather": 0}
    recs = sec["choices"]
    assert sum(r["calls"] for r in recs) == calls
    assert sum(r["communicators"] for r in recs) == 2 * CLASSES
    for r in recs:
        ncand = 3 if r["bytes"] >= 1 << 16 else 2  # scatterallgather from 64 KiB
        assert r["source"] in (source, "learning"), r
        if r["source"] == "learning":  # fewer calls there than a race: all of them racing
            assert r["choice"] is None
            assert r["learning_calls"] == r["calls"] < 3 * ncand * r["communicators"]
        elif one:
            assert r["choice"] == "mpi" and r["learning_calls"] == r["lost_calls"] == 0
        else:
            assert r["choice"] in ALGS[:ncand]
            assert r["learning_calls"] == 3 * ncand * r["communicators"]
            assert r["lost_calls"] == 3 * (ncand - 1) * r["communicators"]
            assert r["ratio_lo"] <= r["ratio"] <= r["ratio_hi"]
    if not one:  # 6 calls of 1 MiB: still racing, every candidate twice on every rank
        assert [r["learning_calls"] for r in recs if r["bytes"] == 1 << 20] == [2 * 2]
        big = [r for r in recs if r["bytes"] == 1 << 16]  # 80056 and 120084 bytes, 24 calls
        assert sum(r["learning_calls"] for r in big) == 3 * 3 * 2
        assert sec["calls"]["scatterallgather"] > 0
    assert header["functions"]["MPI_Bcast"]["repro_calls"] == (
        sec["calls"]["twolevel"] + sec["calls"]["scatterallgather"])


# the guard is Intel MPI's alone: elsewhere adaptive races (test_adaptive_exact)
@pytest.mark.skipif(FLAVOUR != "intelmpi", reason="Intel MPI's shared-memory collectives")
@pytest.mark.parametrize("env", [{"MPILENS_COLL_BCAST": "adaptive"},
                                 {"MPILENS_COLL": "adaptive"},
                                 {"MPILENS_COLL_BCAST": "adaptive",
                                  "I_MPI_COLL_INTRANODE": "shm"}], ids=str)
def test_intel_shm_collectives_keep_their_bcast(env: dict[str, str], build: Path,
                                                tmp_path: Path) -> None:
    """Intel MPI 2021.18's shared-memory collectives gave wrong MPI_Bcast data when a
    race alternated communicators: adaptive MPI_Bcast stays the MPI's own there, said
    once; MPI_Allreduce's adaptive is untouched."""
    prof = tmp_path / "b.prof"
    proc = run_mpi(4, [build / "bin" / "mpilens-exec", build / "tests" / "coll_bcast", "1"],
                   env={"MPILENS_OUTPUT": str(prof), "MPILENS_COLL_NODES": "2,2",
                        "MPILENS_COLL_LEARN": "3", **env}, cwd=tmp_path)
    assert f"calls={_calls(4)} declined={DECLINED}" in proc.stdout, proc.stdout + proc.stderr
    line = "mpilens: MPI_Bcast stays Intel MPI's own (docs/collectives.md, Intel MPI)"
    assert proc.stderr.splitlines().count(line) == 1, proc.stderr
    header, _ = read_profile(prof)
    assert "bcast" not in header.get("coll", {})
    assert header["functions"]["MPI_Bcast"].get("repro_calls", 0) == 0
    assert ("allreduce" in header.get("coll", {})) == ("MPILENS_COLL" in env)


@pytest.mark.parametrize("env", [{}, {"MPILENS_COLL_BCAST": "mpi"},
                                 {"MPILENS_COLL": "adaptive", "MPILENS_COLL_BCAST": "mpi"}],
                         ids=["unset", "mpi", "mpi-over-adaptive"])
def test_mpi_serves_everything(env: dict[str, str], build: Path, tmp_path: Path) -> None:
    header = _run(build, tmp_path, 4, {"MPILENS_COLL_NODES": "2,2", **env})
    assert "bcast" not in header.get("coll", {})
    assert header["functions"]["MPI_Bcast"].get("repro_calls", 0) == 0
    if "MPILENS_COLL" not in env:
        assert "coll" not in header and "coll" not in header.get("sections", {})


def test_repro_has_no_bcast_meaning(build: Path, tmp_path: Path) -> None:
    """MPILENS_REPRO=1 changes nothing for MPI_Bcast: twolevel serves every eligible call."""
    header = _run(build, tmp_path, 4, {"MPILENS_COLL_BCAST": "twolevel", "MPILENS_REPRO": "1",
                                       "MPILENS_COLL_NODES": "2,2"})
    assert header["coll"]["bcast"]["calls"] == {"mpi": 0, "twolevel": _calls(4) * 4,
                                                "scatterallgather": 0}
