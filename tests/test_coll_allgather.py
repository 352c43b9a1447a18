"""Node-aware MPI_Allgather (MPILENS_COLL_ALLGATHER, docs/collectives.md): exact results.

tests/progs/coll_allgather.c checks every element of every rank against its block's value
(computed by every rank, bit for bit), with MPI_INT, MPI_DOUBLE, MPI_CHAR and
MPI_SHORT on 1, 7 and 10007 elements a rank and 1 MiB in all, each with a send buffer
and MPI_IN_PLACE, on MPI_COMM_WORLD, a reversed communicator and an interleaved one (even
world ranks first: a node's ranks not consecutive, as placed round-robin); here on the node
layouts of test_coll_allreduce.py (one node, 2,2, 1,3,3,1 (MPICH 1,2,1), 2,1), each
algorithm forced (multileader takes twolevel on unequal nodes) and adaptive (every case twice in a row: racing and chosen calls, the choices the
same on every rank), and the profile's coll section must count every call: the served
ones, the ones left to the MPI (count 0, a derived datatype on both sides or on either,
MPI_DOUBLE_INT with and without MPI_IN_PLACE, an intercommunicator), none at all by
default.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FLAVOUR, read_profile, run_mpi
from test_coll_allreduce import LAYOUTS, _layout, _uniform

ALGS = ["mpi", "twolevel", "multileader"]
TYPES, COUNTS, COMMS = 4, 3, 3
# count 0, 3 x derived datatypes, 2 x MPI_DOUBLE_INT, intercommunicator (2 ranks or more)
DECLINED = 7
SIZES = (4, 8, 1, 2)  # MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_SHORT


def _classes(np_: int) -> int:
    """Size classes (count x type size, a power of two): 1, 7, 10007 elements of the four
    types, and 1 MiB / np_ of doubles."""
    big = (1 << 20) // 8 // np_ * 8
    return len({(n * b).bit_length() for n in (1, 7, 10007) for b in SIZES}
               | {big.bit_length()})


def _calls(reps: int = 1) -> int:
    """MPI_Allgather calls per rank the engine serves: 3 communicators x (types x counts + 1
    MiB) x (send buffer, in place), each reps times."""
    return COMMS * (TYPES * COUNTS + 1) * 2 * reps


def _run(build: Path, tmp: Path, np_: int, env: dict[str, str], reps: int = 1) -> dict:
    prof = tmp / "g.prof"
    proc = run_mpi(np_, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allgather",
                         str(reps)], env={"MPILENS_OUTPUT": str(prof), **env}, cwd=tmp)
    assert f"calls={_calls(reps)} declined={DECLINED} agree=1" in proc.stdout, \
        proc.stdout + proc.stderr
    header, _ = read_profile(prof)
    return header


@pytest.mark.parametrize("alg", ALGS[1:])
@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_forced_algorithm_exact(alg: str, np_: int, nodes: str | None, build: Path,
                                tmp_path: Path) -> None:
    header = _run(build, tmp_path, np_, {"MPILENS_COLL_ALLGATHER": alg, **_layout(nodes)})
    served = "twolevel" if alg == "multileader" and not _uniform(nodes) else alg
    assert header["sections"]["coll"] == 1 and list(header["coll"]) == ["allgather"]
    sec = header["coll"]["allgather"]
    assert sec["forced"] == sec["mode"] == alg
    assert sec["calls"] == {a: _calls() * np_ if a == served else 0 for a in ALGS}
    assert sec["declined"] == DECLINED * np_
    assert [(r["choice"], r["source"], r["communicators"], r["learning_calls"])
            for r in sec["choices"]] == [(served, "forced", COMMS, 0)] * _classes(np_)
    assert sum(r["calls"] for r in sec["choices"]) == _calls()
    fn = header["functions"]["MPI_Allgather"]
    assert fn["calls"] == (_calls() + DECLINED) * np_
    assert fn["repro_calls"] == _calls() * np_


@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_adaptive_exact(np_: int, nodes: str | None, build: Path, tmp_path: Path) -> None:
    env = {"MPILENS_COLL_ALLGATHER": "adaptive", "MPILENS_COLL_LEARN": "3", **_layout(nodes)}
    header = _run(build, tmp_path, np_, env, reps=2)
    assert list(header["coll"]) == ["allgather"]
    sec = header["coll"]["allgather"]
    assert sec["mode"] == "adaptive" and sec["rounds"] == 3 and "forced" not in sec
    calls = _calls(2)
    assert sum(sec["calls"].values()) == calls * np_
    assert sec["declined"] == DECLINED * np_
    one = nodes is None or "," not in nodes
    source = "one node" if one else "learned"  # no layout of 1,1,...: 2 ranks on some node
    if one:
        assert sec["calls"] == {"mpi": calls * np_, "twolevel": 0, "multileader": 0}
    ncand = 3 if _uniform(nodes) else 2  # multileader on equal nodes only
    recs = sec["choices"]
    assert sum(r["calls"] for r in recs) == calls
    assert sum(r["communicators"] for r in recs) == COMMS * _classes(np_)
    for r in recs:
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
    if not one:  # classes of two cases: 8 calls a communicator, races of 6 or 9
        assert {r["source"] for r in recs} >= {"learning"}
        assert sec["calls"]["twolevel"] >= 3 * COMMS * np_
        assert (sec["calls"]["multileader"] > 0) == (ncand == 3)
    assert header["functions"]["MPI_Allgather"]["repro_calls"] == (
        sec["calls"]["twolevel"] + sec["calls"]["multileader"])


@pytest.mark.parametrize("env", [{}, {"MPILENS_COLL_ALLGATHER": "mpi"},
                                 {"MPILENS_COLL": "adaptive", "MPILENS_COLL_ALLGATHER": "mpi"}],
                         ids=["unset", "mpi", "mpi-over-adaptive"])
def test_mpi_serves_everything(env: dict[str, str], build: Path, tmp_path: Path) -> None:
    header = _run(build, tmp_path, 4, {"MPILENS_COLL_NODES": "2,2", **env})
    assert "allgather" not in header.get("coll", {})
    assert header["functions"]["MPI_Allgather"].get("repro_calls", 0) == 0
    assert header["functions"]["MPI_Allgather"]["calls"] == (_calls() + DECLINED) * 4
    if "MPILENS_COLL" not in env:
        assert "coll" not in header and "coll" not in header.get("sections", {})


def test_bad_setting_stops(build: Path, tmp_path: Path) -> None:
    proc = run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allgather"],
                   env={"MPILENS_COLL_ALLGATHER": "scatterallgather"}, cwd=tmp_path,
                   check=False)
    assert proc.returncode == 2
    assert ("mpilens: MPILENS_COLL_ALLGATHER='scatterallgather' is invalid: expected one of "
            "mpi, twolevel, multileader, adaptive") in proc.stderr
    assert "calls=" not in proc.stdout
