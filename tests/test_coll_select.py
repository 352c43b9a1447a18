"""The adaptive MPI_Allreduce (MPILENS_COLL_ALLREDUCE=adaptive, docs/collectives.md), and
the selection as every collective uses it.

Exact results while racing and after the choice (tests/progs/coll_allreduce.c, every case
twice in a row, on the node layouts of test_coll_allreduce.py, in place and not; MPI_Bcast's,
MPI_Allgather's and MPI_Reduce_scatter_block's: test_coll_bcast.py, test_coll_allgather.py,
test_coll_reduce_scatter.py); the race call by call, MPI_Allreduce, MPI_Bcast,
MPI_Allgather and MPI_Reduce_scatter_block (tests/progs/coll_select.c: R x C race calls,
then the choice, the same on every rank; none on one node or with one rank per node) and
the profile's record of it; the report's table; the
decision rule on given times (tests/progs/sel_decide.c).  Which algorithm is faster on this
machine is never assumed: the choice is only checked to be a candidate, the same everywhere.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import FLAVOUR, read_profile, run_mpi
from test_cli_support import mpilens
from test_coll_allreduce import CALLS, DOUBLE_SUM_CALLS, LAYOUTS, USER_CALLS, _uniform

REPS = 2  # coll_allreduce runs every case twice


def _keys(nodes: str | None) -> tuple[int, str]:
    """Candidates and source for a layout: (1, 'one node' ...) or (C, 'learned')."""
    if nodes is None or "," not in nodes:
        return 1, "one node"
    if set(nodes.split(",")) == {"1"}:
        return 1, "one rank per node"
    return (3 if _uniform(nodes) else 2), "learned"


@pytest.mark.parametrize("np_,nodes", LAYOUTS, ids=lambda v: str(v))
def test_adaptive_exact(np_: int, nodes: str | None, build: Path, tmp_path: Path) -> None:
    env = {"MPILENS_COLL_ALLREDUCE": "adaptive", "MPILENS_COLL_LEARN": "3",
           "MPILENS_OUTPUT": str(tmp_path / "a.prof")}
    if nodes:
        env["MPILENS_COLL_NODES"] = nodes
    proc = run_mpi(np_, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allreduce",
                         str(REPS)], env=env, cwd=tmp_path)
    assert f"calls={CALLS * REPS} user={USER_CALLS}" in proc.stdout, proc.stdout + proc.stderr
    header, _ = read_profile(tmp_path / "a.prof")
    sec = header["coll"]["allreduce"]
    assert sec["mode"] == "adaptive" and sec["rounds"] == 3 and "forced" not in sec
    assert sum(sec["calls"].values()) == CALLS * REPS * np_
    assert sec["declined"] == USER_CALLS * np_
    ncand, source = _keys(nodes)
    if ncand < 3:
        assert sec["calls"]["multileader"] == 0
    if ncand == 1:
        assert sec["calls"] == {"mpi": CALLS * REPS * np_, "twolevel": 0, "multileader": 0}
    # 2 communicators (world, reversed) of np_ ranks, 7 size classes each
    recs = sec["choices"]
    assert sum(r["calls"] for r in recs) == CALLS * REPS
    assert sum(r["communicators"] for r in recs) == 2 * 7
    assert {r["comm_size"] for r in recs} == {np_}
    for r in recs:
        assert r["source"] in (source, "learning"), r
        if r["source"] == "learning":  # fewer calls there than a race: all of them racing
            assert r["choice"] is None
            assert r["learning_calls"] == r["calls"] < 3 * ncand * r["communicators"]
        elif ncand == 1:
            assert r["choice"] == "mpi" and r["learning_calls"] == r["lost_calls"] == 0
            assert "ratio" not in r
        else:
            assert r["learning_calls"] == 3 * ncand * r["communicators"]
            assert r["lost_calls"] == 3 * (ncand - 1) * r["communicators"]
            assert r["ratio_lo"] <= r["ratio"] <= r["ratio_hi"]
    # the 1 MiB class: 10 cases x 2 per communicator, more than a race of 3 x ncand
    big = [r for r in recs if r["bytes"] == 1 << 20]
    assert sum(r["communicators"] for r in big) == 2
    assert all(r["source"] == source for r in big)
    fn = header["functions"]["MPI_Allreduce"]
    assert fn["repro_calls"] == sec["calls"]["twolevel"] + sec["calls"]["multileader"]


# (ranks, layout, candidates, source)
@pytest.fixture(autouse=True)
def _intel_pt2pt_colls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under Intel MPI an adaptive MPI_Bcast races only with its point-to-point
    intra-node collectives (docs/collectives.md, Intel MPI; test_coll_bcast.py has the
    guard's own test): these tests race both collectives."""
    if FLAVOUR == "intelmpi":
        monkeypatch.setenv("I_MPI_COLL_INTRANODE", "pt2pt")


RACES = [(4, "2,2", 3, "learned"), (4, "1,2,1", 2, "learned"), (4, None, 1, "one node"),
         (3, "1,1,1", 1, "one rank per node")]


# every collective's algorithms; MPI_Bcast's candidates below 64 KiB: mpi and twolevel
ALGS = {"allreduce": ["mpi", "twolevel", "multileader"],
        "bcast": ["mpi", "twolevel", "scatterallgather"],
        "allgather": ["mpi", "twolevel", "multileader"],
        "reduce_scatter_block": ["mpi", "twolevel", "multileader"]}
SMALL = {"allreduce": 3, "bcast": 2, "allgather": 3,
         "reduce_scatter_block": 3}  # candidates at most at 8000 bytes


@pytest.mark.parametrize("np_,nodes,ncand,source", RACES, ids=lambda v: str(v))
@pytest.mark.parametrize("rounds", [3, 5])
@pytest.mark.parametrize("coll", ["allreduce", "bcast", "allgather", "reduce_scatter_block"])
def test_race_count_and_agreement(coll: str, np_: int, nodes: str | None, ncand: int,
                                  source: str, rounds: int, build: Path,
                                  tmp_path: Path) -> None:
    env = {"MPILENS_COLL": "adaptive", "MPILENS_OUTPUT": str(tmp_path / "s.prof")}
    if rounds != 5:
        env["MPILENS_COLL_LEARN"] = str(rounds)  # 5: the default
    if nodes:
        env["MPILENS_COLL_NODES"] = nodes
    algs = ALGS[coll]
    ncand = min(ncand, SMALL[coll])
    proc = run_mpi(np_, [build / "bin" / "mpilens-exec", build / "tests" / "coll_select",
                         str(rounds), str(ncand), coll], env=env, cwd=tmp_path)
    race = rounds * ncand if ncand > 1 else 0
    assert f"race={race} choice=" in proc.stdout and "agree=1" in proc.stdout, proc.stdout
    choice = proc.stdout.split("choice=")[1].split()[0]
    header, _ = read_profile(tmp_path / "s.prof")
    sec = header["coll"][coll]
    cands = algs[:ncand]
    assert choice in cands
    calls = race + 3
    # each rank ran every candidate once per round, then the choice 3 times
    assert sec["calls"] == {a: np_ * ((rounds if ncand > 1 and a in cands else 0)
                                      + (3 if a == choice else 0))
                            for a in algs}
    for other in set(ALGS) - {coll}:  # adaptive too, never called
        assert header["coll"][other]["calls"] == {a: 0 for a in ALGS[other]}
        assert header["coll"][other]["choices"] == []
    [rec] = sec["choices"]
    assert (rec["comm_size"], rec["bytes"], rec["choice"], rec["source"], rec["communicators"],
            rec["calls"], rec["learning_calls"], rec["lost_calls"]) == (
        np_, 4096, choice, source, 1, calls, race, (ncand - 1) * rounds)
    if ncand > 1:
        assert rec["against"] in cands[1:] and rec["lost_s"] > 0
        assert rec["ratio_lo"] <= rec["ratio"] <= rec["ratio_hi"]
        assert (rec["ratio_hi"] < 1) == (choice != "mpi")
        if choice != "mpi":
            assert rec["against"] == choice
    else:
        assert "against" not in rec and rec["lost_s"] == 0


@pytest.mark.parametrize("coll", ["allreduce", "bcast", "allgather"])
def test_report_shows_the_choices(coll: str, build: Path, tmp_path: Path) -> None:
    """`mpilens report`: a short table of the choices at 80 columns, one per collective
    with choices (all adaptive, one called), none without them."""
    prof = tmp_path / "s.prof"
    ncand = SMALL[coll]
    proc = run_mpi(4, [build / "bin" / "mpilens-exec", build / "tests" / "coll_select", "3",
                       str(ncand), coll],
                   env={"MPILENS_COLL": "adaptive", "MPILENS_COLL_LEARN": "3",
                        "MPILENS_COLL_NODES": "2,2", "MPILENS_OUTPUT": str(prof)}, cwd=tmp_path)
    choice = proc.stdout.split("choice=")[1].split()[0]
    rep = mpilens("report", prof, env={"COLUMNS": "80"})
    assert rep.returncode == 0, rep.stderr
    lines = rep.stdout.splitlines()
    assert all(len(ln) <= 80 for ln in lines)
    title = {"allreduce": "MPI_Allreduce", "bcast": "MPI_Bcast", "allgather": "MPI_Allgather"}
    assert [ln.split()[0] for ln in lines if "(node-aware" in ln] == [title[coll]]
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"{title[coll]} (node-aware"))
    [row] = [ln for ln in lines[start:] if ln.startswith("│")]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[:4] == ["4", "4 KiB", choice, "learned"]
    assert set(ALGS[coll][1:]) & set(cells[4:])  # the candidate compared
    plain = tmp_path / "p.prof"
    run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "coll_select", "3", "1"],
            env={"MPILENS_OUTPUT": str(plain)}, cwd=tmp_path, check=False)
    rep = mpilens("report", plain, env={"COLUMNS": "80"})
    assert rep.returncode == 0 and "node-aware" not in rep.stdout


def test_forced_records_its_choices(build: Path, tmp_path: Path) -> None:
    """A forced algorithm: every size class's record says 'forced', no race."""
    prof = tmp_path / "f.prof"
    run_mpi(4, [build / "bin" / "mpilens-exec", build / "tests" / "coll_select", "5", "1"],
            env={"MPILENS_COLL_ALLREDUCE": "multileader", "MPILENS_COLL": "adaptive",
                 "MPILENS_COLL_NODES": "2,2", "MPILENS_OUTPUT": str(prof)}, cwd=tmp_path)
    header, _ = read_profile(prof)
    sec = header["coll"]["allreduce"]
    assert sec["mode"] == "multileader" and sec["forced"] == "multileader"
    assert sec["calls"] == {"mpi": 0, "twolevel": 0, "multileader": 4 * 3}
    assert [(r["choice"], r["source"], r["calls"], r["learning_calls"])
            for r in sec["choices"]] == [("multileader", "forced", 3, 0)]


def test_per_collective_setting_overrides(build: Path, tmp_path: Path) -> None:
    """MPILENS_COLL_ALLREDUCE=mpi under MPILENS_COLL=adaptive: MPI_Allreduce left to the MPI
    (no allreduce section), the other collectives still adaptive."""
    prof = tmp_path / "m.prof"
    run_mpi(4, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allreduce"],
            env={"MPILENS_COLL": "adaptive", "MPILENS_COLL_ALLREDUCE": "mpi",
                 "MPILENS_COLL_NODES": "2,2", "MPILENS_OUTPUT": str(prof)}, cwd=tmp_path)
    header, _ = read_profile(prof)
    assert list(header["coll"]) == ["bcast", "allgather", "reduce_scatter_block"]
    assert {sec["mode"] for sec in header["coll"].values()} == {"adaptive"}
    assert header["functions"]["MPI_Allreduce"].get("repro_calls", 0) == 0


def test_repro_keeps_precedence(build: Path, tmp_path: Path) -> None:
    """MPILENS_REPRO=1: its calls (MPI_SUM on doubles) never reach the selection."""
    prof = tmp_path / "r.prof"
    proc = run_mpi(4, [build / "bin" / "mpilens-exec", build / "tests" / "coll_allreduce"],
                   env={"MPILENS_COLL": "adaptive", "MPILENS_REPRO": "1",
                        "MPILENS_COLL_NODES": "2,2", "MPILENS_OUTPUT": str(prof)}, cwd=tmp_path)
    assert f"calls={CALLS} user={USER_CALLS}" in proc.stdout
    header, _ = read_profile(prof)
    sec = header["coll"]["allreduce"]
    assert sum(sec["calls"].values()) == (CALLS - DOUBLE_SUM_CALLS) * 4
    assert sum(r["calls"] for r in sec["choices"]) == CALLS - DOUBLE_SUM_CALLS
    assert header["functions"]["MPI_Allreduce"]["repro_calls"] == (
        DOUBLE_SUM_CALLS * 4 + sec["calls"]["twolevel"] + sec["calls"]["multileader"])


def _decide(build: Path, rows: list[list[float]]) -> dict[str, float]:
    argv = [str(build / "tests" / "sel_decide"), str(len(rows)), str(len(rows[0]))]
    argv += [repr(v) for row in rows for v in row]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in (f.split("=") for f in out.split())}


# labelled cases: rounds x [mpi, twolevel, multileader] times (seconds)
DECISIONS = [
    ("faster in every round: chosen",
     [[1.0, 0.5, 0.9], [1.1, 0.6, 1.0], [0.9, 0.5, 0.95], [1.0, 0.4, 1.2], [1.2, 0.7, 1.1]],
     1, 1, 0.6 / 1.1, 0.4, 0.7 / 1.2),
    ("lower median, slower in one round: mpi",
     [[1.0, 0.5, 1.5], [1.0, 0.5, 1.5], [1.0, 1.2, 1.5], [1.0, 0.5, 1.5], [1.0, 0.5, 1.5]],
     0, 1, 0.5, 0.5, 1.2),
    ("noisy, no difference: mpi",
     [[1.0, 0.9, 1.1], [1.0, 1.1, 0.9], [1.0, 1.05, 1.2], [1.0, 0.95, 1.0], [1.0, 1.0, 1.3]],
     0, 1, 1.0, 0.9, 1.1),
    ("mpi fastest: mpi, the runner-up compared",
     [[1.0, 2.0, 1.5], [1.0, 2.0, 1.6], [1.0, 2.0, 1.4], [1.0, 2.0, 1.5], [1.0, 2.0, 1.5]],
     0, 2, 1.5, 1.4, 1.6),
    ("the lowest median wins among two faster ones",
     [[1.0, 0.8, 0.5], [1.0, 0.8, 0.5], [1.0, 0.8, 0.5]],
     2, 2, 0.5, 0.5, 0.5),
    ("a tie with mpi: mpi",
     [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]],
     0, 1, 1.0, 1.0, 1.0),
]


@pytest.mark.parametrize("case,rows,choice,against,ratio,lo,hi", DECISIONS,
                         ids=[c[0] for c in DECISIONS])
def test_decision_rule(case: str, rows: list[list[float]], choice: int, against: int,
                       ratio: float, lo: float, hi: float, build: Path) -> None:
    d = _decide(build, rows)
    assert (d["choice"], d["against"]) == (choice, against), case
    assert (d["ratio"], d["lo"], d["hi"]) == pytest.approx((ratio, lo, hi), rel=1e-6), case


def test_decision_one_candidate(build: Path) -> None:
    assert _decide(build, [[1.0], [2.0], [3.0]]) == {"choice": 0, "against": -1, "ratio": 0,
                                                     "lo": 0, "hi": 0}


@pytest.mark.parametrize("value", ["2", "0", "65", "x"])
def test_bad_rounds_one_line(value: str, build: Path, tmp_path: Path) -> None:
    proc = run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "coll_select"],
                   env={"MPILENS_COLL": "adaptive", "MPILENS_COLL_LEARN": value,
                        "MPILENS_OUTPUT": str(tmp_path / "x.prof")}, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert f"mpilens: MPILENS_COLL_LEARN='{value}' is invalid: expected" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("var,value,algs", [
    ("MPILENS_COLL_ALLREDUCE", "fastest", "mpi, twolevel, multileader, adaptive"),
    ("MPILENS_COLL_BCAST", "multileader", "mpi, twolevel, scatterallgather, adaptive"),
    ("MPILENS_COLL_BCAST", "Adaptive", "mpi, twolevel, scatterallgather, adaptive")])
def test_bad_mode_one_line(var: str, value: str, algs: str, build: Path,
                           tmp_path: Path) -> None:
    proc = run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "coll_select"],
                   env={var: value, "MPILENS_OUTPUT": str(tmp_path / "x.prof")}, cwd=tmp_path,
                   check=False)
    assert proc.returncode == 2
    assert f"mpilens: {var}='{value}' is invalid: expected one of {algs}\n" in proc.stderr
    assert "Traceback" not in proc.stderr
