"""Node-aware MPI_Reduce_scatter_block (MPILENS_COLL_REDUCE_SCATTER_BLOCK,
docs/collectives.md): exact results.

tests/progs/coll_rsb.c checks every element of every rank's block against the reduction
of every rank's values it computes itself (MPI_INT and MPI_DOUBLE sums whose every order
gives the same bits, MPI_FLOAT maxima, MPI_LONG_LONG bitwise exclusive or; 1, 7 and 1001
elements a block, in place and not, and about 1 MiB of doubles), on MPI_COMM_WORLD, a
reversed communicator and one of the even ranks then the odd ones (the blocks of a node
not consecutive); here on the node layouts of test_coll_allreduce.py (one node, 2,2,
1,3,3,1 (MPICH 1,2,1), 2,1), each algorithm forced (multileader takes twolevel where
nodes have unequal ranks) and adaptive (every case twice in a row:
racing and chosen calls), and the profile's coll section must count every call: the
served ones, the ones left to the MPI (recvcount 0, user-defined operations commutative
or not, a derived datatype), none at all by default, and the reproducible engine's
MPI_DOUBLE sums left out under MPILENS_REPRO=1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import read_profile, run_mpi
from test_coll_allreduce import LAYOUTS, _layout, _uniform

ALGS = ["mpi", "twolevel", "multileader"]
DECLINED = 4  # recvcount 0, two user-defined operations, a derived datatype
DOUBLE_SUMS = 3 * (3 * 2 + 1)  # a rank's MPI_DOUBLE MPI_SUM calls (the reproducible engine's)


def _calls(reps: int = 1) -> int:
    """Calls per rank the engine serves: 3 communicators x (4 types x 3 counts x in place
    or not + about 1 MiB), each reps times."""
    return 3 * (4 * 3 * 2 + 1) * reps


def _classes(np_: int) -> int:
    """Size classes (recvcount x type size) of the calls: 1, 7 and 1001 elements of 4 and
    8 bytes, and (2^17 / np_) doubles."""
    return len({(n * b).bit_length() for n in (1, 7, 1001) for b in (4, 8)}
               | {((1 << 17) // np_ * 8).bit_length()})


def _run(build: Path, tmp: Path, np_: int, env: dict[str, str], reps: int = 1,
         calls: int | None = None) -> dict:
    prof = tmp / "r.prof"
    proc = run_mpi(np_, [build / "bin" / "mpilens-exec", build / "tests" / "coll_rsb",
                         str(reps)], env={"MPILENS_OUTPUT": str(prof), **env}, cwd=tmp)
    assert f"calls={_calls(reps)} declined={DECLINED}" in proc.stdout, \
        proc.stdout + proc.stderr
    header, _ = read_profile(prof)
    # the profiler counts every call once, whoever serves it
    assert header["functions"]["MPI_Reduce_scatter_block"]["calls"] == \
        (_calls(reps) + DECLINED) * np_
    return header


@pytest.mark.parametrize("alg", ALGS[1:])
@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_forced_algorithm_exact(alg: str, np_: int, nodes: str | None, build: Path,
                                tmp_path: Path) -> None:
    header = _run(build, tmp_path, np_, {"MPILENS_COLL_REDUCE_SCATTER_BLOCK": alg,
                                         **_layout(nodes)})
    assert header["sections"]["coll"] == 1 and list(header["coll"]) == ["reduce_scatter_block"]
    sec = header["coll"]["reduce_scatter_block"]
    assert sec["forced"] == sec["mode"] == alg
    served = "twolevel" if alg == "multileader" and not _uniform(nodes) else alg
    assert sec["calls"] == {a: _calls() * np_ if a == served else 0 for a in ALGS}
    assert sec["declined"] == DECLINED * np_
    assert [(r["choice"], r["source"], r["communicators"], r["learning_calls"])
            for r in sec["choices"]] == [(served, "forced", 3, 0)] * _classes(np_)
    assert sum(r["calls"] for r in sec["choices"]) == _calls()
    assert header["functions"]["MPI_Reduce_scatter_block"]["repro_calls"] == _calls() * np_


@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_adaptive_exact(np_: int, nodes: str | None, build: Path, tmp_path: Path) -> None:
    env = {"MPILENS_COLL_REDUCE_SCATTER_BLOCK": "adaptive", "MPILENS_COLL_LEARN": "3",
           **_layout(nodes)}
    header = _run(build, tmp_path, np_, env, reps=2)
    assert list(header["coll"]) == ["reduce_scatter_block"]
    sec = header["coll"]["reduce_scatter_block"]
    assert sec["mode"] == "adaptive" and sec["rounds"] == 3 and "forced" not in sec
    calls = _calls(2)
    assert sum(sec["calls"].values()) == calls * np_
    assert sec["declined"] == DECLINED * np_
    one = nodes is None or "," not in nodes
    ncand = 3 if _uniform(nodes) else 2
    if one:
        assert sec["calls"] == {"mpi": calls * np_, "twolevel": 0, "multileader": 0}
    else:  # every race runs them
        assert sec["calls"]["twolevel"] > 0
        assert (sec["calls"]["multileader"] > 0) == (ncand == 3)
    recs = sec["choices"]
    assert sum(r["calls"] for r in recs) == calls
    assert sum(r["communicators"] for r in recs) == 3 * _classes(np_)
    for r in recs:
        if one:
            assert (r["choice"], r["source"], r["learning_calls"]) == ("mpi", "one node", 0)
        elif r["source"] == "learning":  # fewer calls than a race: all of them racing
            assert r["choice"] is None
            assert r["learning_calls"] == r["calls"] < 3 * ncand * r["communicators"]
        else:
            assert r["source"] == "learned" and r["choice"] in ALGS[:ncand]
            assert r["learning_calls"] == 3 * ncand * r["communicators"]
            assert r["lost_calls"] == 3 * (ncand - 1) * r["communicators"]
            assert r["ratio_lo"] <= r["ratio"] <= r["ratio_hi"]
    assert header["functions"]["MPI_Reduce_scatter_block"]["repro_calls"] == \
        sec["calls"]["twolevel"] + sec["calls"]["multileader"]


@pytest.mark.parametrize("env", [{}, {"MPILENS_COLL_REDUCE_SCATTER_BLOCK": "mpi"},
                                 {"MPILENS_COLL": "adaptive",
                                  "MPILENS_COLL_REDUCE_SCATTER_BLOCK": "mpi"}],
                         ids=["unset", "mpi", "mpi-over-adaptive"])
def test_mpi_serves_everything(env: dict[str, str], build: Path, tmp_path: Path) -> None:
    header = _run(build, tmp_path, 4, {"MPILENS_COLL_NODES": "2,2", **env})
    assert "reduce_scatter_block" not in header.get("coll", {})
    assert header["functions"]["MPI_Reduce_scatter_block"].get("repro_calls", 0) == 0
    if "MPILENS_COLL" not in env:
        assert "coll" not in header and "coll" not in header.get("sections", {})


def test_repro_takes_precedence(build: Path, tmp_path: Path) -> None:
    """MPILENS_REPRO=1: the MPI_DOUBLE sums are the reproducible engine's; twolevel serves
    the other eligible calls; every call is counted once, as served."""
    header = _run(build, tmp_path, 4, {"MPILENS_COLL_REDUCE_SCATTER_BLOCK": "twolevel",
                                       "MPILENS_REPRO": "1", "MPILENS_COLL_NODES": "2,2"})
    sec = header["coll"]["reduce_scatter_block"]
    assert sec["calls"] == {"mpi": 0, "twolevel": (_calls() - DOUBLE_SUMS) * 4,
                            "multileader": 0}
    assert sec["declined"] == DECLINED * 4
    assert header["functions"]["MPI_Reduce_scatter_block"]["repro_calls"] == _calls() * 4


def test_bad_value_one_line(build: Path, tmp_path: Path) -> None:
    proc = run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "coll_rsb"],
                   env={"MPILENS_COLL_REDUCE_SCATTER_BLOCK": "scatterallgather",
                        "MPILENS_OUTPUT": str(tmp_path / "x.prof")}, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert ("mpilens: MPILENS_COLL_REDUCE_SCATTER_BLOCK='scatterallgather' is invalid: "
            "expected one of mpi, twolevel, multileader, adaptive") in proc.stderr
