"""Node-aware MPI_Allreduce (MPILENS_COLL_ALLREDUCE, docs/collectives.md): exact results.

tests/progs/coll_allreduce.c checks every result itself (exact types against the value
it computes from every rank's inputs, fractional sums against PMPI_Allreduce, the same
bits on every rank); here each algorithm runs on several node layouts declared with
MPILENS_COLL_NODES (one host), and the profile's coll section must count every call:
the forced algorithm's (multileader takes twolevel where nodes have unequal ranks),
the user-defined operation's calls declined, none at all by default, and the
reproducible engine's MPI_SUM double calls left out under MPILENS_REPRO=1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FLAVOUR, read_profile, run_mpi

# calls per rank: 2 communicators x 5 cases x 2 (in place or not) x 4 counts
CALLS = 80
DOUBLE_SUM_CALLS = 32   # of which MPI_DOUBLE MPI_SUM (the reproducible engine's)
USER_CALLS = 2

# (ranks, MPILENS_COLL_NODES or None: the real layout, one node).  MPICH busy-polls:
# at most 4 ranks there, 1,2,1 for the uneven layout.
UNEVEN = (8, "1,3,3,1") if FLAVOUR != "mpich" else (4, "1,2,1")
LAYOUTS = [(4, None), (4, "2,2"), UNEVEN, (3, "2,1")]


def _uniform(nodes: str | None) -> bool:
    return nodes is None or len(set(nodes.split(","))) == 1


def _layout(nodes: str | None) -> dict[str, str]:
    """MPILENS_COLL_NODES for a declared layout, nothing for the real one (one node)."""
    return {"MPILENS_COLL_NODES": nodes} if nodes else {}


def _run(build: Path, tmp: Path, np_: int, env: dict[str, str]) -> dict:
    prof = tmp / "coll.prof"
    proc = run_mpi(np_, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allreduce"],
                   env={"MPILENS_OUTPUT": str(prof), **env}, cwd=tmp)
    assert f"calls={CALLS} user={USER_CALLS}" in proc.stdout, proc.stdout + proc.stderr
    header, _ = read_profile(prof)
    return header


@pytest.mark.parametrize("alg", ["twolevel", "multileader"])
@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_forced_algorithm_exact(alg: str, np_: int, nodes: str | None, build: Path,
                                tmp_path: Path) -> None:
    env = {"MPILENS_COLL_ALLREDUCE": alg}
    if nodes:
        env["MPILENS_COLL_NODES"] = nodes
    header = _run(build, tmp_path, np_, env)
    served = "multileader" if alg == "multileader" and _uniform(nodes) else "twolevel"
    other = "twolevel" if served == "multileader" else "multileader"
    assert header["sections"]["coll"] == 1
    sec = header["coll"]["allreduce"]
    assert sec["forced"] == sec["mode"] == alg
    assert sec["calls"][served] == CALLS * np_
    assert sec["calls"][other] == sec["calls"]["mpi"] == 0
    # one record per size class (7) over both communicators: forced, no race
    assert [(r["choice"], r["source"], r["communicators"], r["learning_calls"])
            for r in sec["choices"]] == [(served, "forced", 2, 0)] * 7
    assert sum(r["calls"] for r in sec["choices"]) == CALLS
    assert sec["declined"] == USER_CALLS * np_
    fn = header["functions"]["MPI_Allreduce"]
    assert fn["calls"] == (CALLS + USER_CALLS) * np_
    assert fn["repro_calls"] == CALLS * np_


def test_repro_takes_precedence(build: Path, tmp_path: Path) -> None:
    header = _run(build, tmp_path, 4, {"MPILENS_COLL_ALLREDUCE": "multileader",
                                       "MPILENS_COLL_NODES": "2,2", "MPILENS_REPRO": "1"})
    sec = header["coll"]["allreduce"]
    assert sec["calls"] == {"mpi": 0, "twolevel": 0,
                            "multileader": (CALLS - DOUBLE_SUM_CALLS) * 4}
    assert sec["declined"] == USER_CALLS * 4
    # both engines' calls are served calls of MPI_Allreduce
    assert header["functions"]["MPI_Allreduce"]["repro_calls"] == CALLS * 4


@pytest.mark.parametrize("setting", [None, "mpi"])
def test_default_serves_nothing(setting: str | None, build: Path, tmp_path: Path) -> None:
    env = {"MPILENS_COLL_NODES": "2,2"}
    if setting:
        env["MPILENS_COLL_ALLREDUCE"] = setting
    header = _run(build, tmp_path, 4, env)
    assert "coll" not in header and "coll" not in header.get("sections", {})
    assert header["functions"]["MPI_Allreduce"].get("repro_calls", 0) == 0


def test_layout_of_another_size_stops_the_job(build: Path, tmp_path: Path) -> None:
    proc = run_mpi(3, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allreduce"],
                   env={"MPILENS_COLL_ALLREDUCE": "twolevel", "MPILENS_COLL_NODES": "2,2",
                        "MPILENS_OUTPUT": str(tmp_path / "x.prof")}, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert "mpilens: MPILENS_COLL_NODES declares 4 ranks, the job has 3" in proc.stderr


@pytest.mark.parametrize("value", ["", "0", "2,", ",2", "2,,2", "-1", "2;2", " 2"])
def test_bad_layout_one_line(value: str, build: Path, tmp_path: Path) -> None:
    proc = run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allreduce"],
                   env={"MPILENS_COLL_NODES": value,
                        "MPILENS_OUTPUT": str(tmp_path / "x.prof")}, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert f"mpilens: MPILENS_COLL_NODES='{value}' is invalid: expected positive integers" \
        in proc.stderr
