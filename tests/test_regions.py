"""Regions: MPI_Pcontrol(1/-1, "label") (IPM), mpilens_region_begin/end (C macros of
mpilens.h, Fortran through runtime/include/mpilens_regions_f.c), MPI_Pcontrol(0/1)
switching recording off and on (mpiP), MPILENS_REGIONS.  tests/progs/region_c.c
and region_f.F90 say what each region holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BUILD, read_profile, run_mpi
from test_cli_support import mpilens_inproc

EXEC = BUILD / "bin" / "mpilens-exec"
PROGS = BUILD / "tests"
P = 2
A, B = 16, 64  # bytes of one MPI_Allreduce (4 ints), one MPI_Bcast (16 ints)


def run_prog(tmp_path: Path, prog: str, **env: str) -> Path:
    if not (PROGS / prog).exists():
        # the Fortran program is not built where the MPI's Fortran module does not fit gfortran (Intel MPI)
        pytest.skip(f"{prog} not built with this MPI and compiler")
    out = tmp_path / f"{prog}-{len(list(tmp_path.glob('*.prof')))}.prof"
    run_mpi(P, [EXEC, PROGS / prog], env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", **env})
    return out


def expected(rank: int) -> dict[str, dict]:
    bc = {"calls": 5, "bytes_sent": 5 * B if rank == 0 else 0, "bytes_recv": 0 if rank == 0 else 5 * B}
    return {
        "outer": {"parent": None, "entries": 1,
                  "functions": {"MPI_Allreduce": {"calls": 4, "bytes_sent": 4 * A, "bytes_recv": 4 * A}}},
        "inner": {"parent": "outer", "entries": 2,
                  "functions": {"MPI_Bcast": bc,
                                "MPI_Allreduce": {"calls": 2, "bytes_sent": 2 * A, "bytes_recv": 2 * A}}},
        "deep": {"parent": "inner", "entries": 1,
                 "functions": {"MPI_Barrier": {"calls": 2, "bytes_sent": 0, "bytes_recv": 0}}},
    }


def strip(g: dict) -> dict:
    return {"parent": g["parent"], "entries": g["entries"],
            "functions": {f: {k: v for k, v in r.items() if k != "time_s"}
                          for f, r in g["functions"].items()}}


@pytest.mark.parametrize("prog", ["region_c", "region_f"])
def test_nested_regions_exact(build, tmp_path, prog):
    out = run_prog(tmp_path, prog)
    header, ranks = read_profile(out)
    assert header["regions_max"] == 16
    for r in ranks:
        got = {g["name"]: strip(g) for g in r["regions"]}
        assert got == expected(r["rank"])
        assert r["regions_dropped"] == {"labels": 0, "calls": 0, "unmatched": 0}
        # MPI_Pcontrol(0): the 4 barriers between off and on are not recorded
        assert r["functions"]["MPI_Barrier"]["calls"] == 3
        walls = {g["name"]: g["wall_s"] for g in r["regions"]}
        assert walls["outer"] >= walls["deep"] > 0  # nested regions' time is inside
        for g in r["regions"]:
            assert sum(f["time_s"] for f in g["functions"].values()) <= g["wall_s"] * 1.01 + 1e-6
    # the report: regions table and --region on the function table
    data = json.loads(mpilens_inproc("report", out, "--format", "json").stdout)
    rows = {g["name"]: g for g in data["regions"]}
    assert rows["inner"]["calls"] == P * 7 and rows["inner"]["entries"] == P * 2
    assert rows["inner"]["bytes_sent"] == 5 * B + P * 2 * A
    inner = json.loads(mpilens_inproc("report", out, "--format", "json", "--region", "inner").stdout)
    assert {f["function"]: f["calls"] for f in inner["functions"]} == {"MPI_Bcast": P * 5,
                                                                       "MPI_Allreduce": P * 2}
    text = mpilens_inproc("report", out, "--region", "deep").stdout
    assert "Region deep" in text and "MPI_Barrier" in text and "MPI_Bcast" not in text.split("Regions")[0]
    bad = mpilens_inproc("report", out, "--region", "nowhere")
    assert bad.returncode == 2 and "region 'nowhere' is not in this profile (regions: deep, inner, outer)" in bad.stderr


def test_labels_beyond_the_limit_share_other(build, tmp_path):
    out = run_prog(tmp_path, "region_c", MPILENS_REGIONS="1")
    _, ranks = read_profile(out)
    for r in ranks:
        got = {g["name"]: strip(g) for g in r["regions"]}
        assert set(got) == {"outer", "(other)"}
        other = got["(other)"]
        assert other["entries"] == 3  # inner twice, deep once
        assert {f: v["calls"] for f, v in other["functions"].items()} == {
            "MPI_Bcast": 5, "MPI_Barrier": 2, "MPI_Allreduce": 2}
        assert r["regions_dropped"]["labels"] == 3


def test_runs_without_mpilens(build):
    """The region calls are no-ops when the library is not loaded."""
    for prog in ("region_c", "region_f"):
        if (PROGS / prog).exists():
            run_mpi(P, [PROGS / prog])


def test_names_cut_or_not_utf8_keep_the_profile_readable(build, tmp_path):
    """A region label cut inside a character and a communicator named in Latin-1: the
    profile is UTF-8 text (the bad bytes as U+FFFD) that report reads; the counts stay."""
    out = run_prog(tmp_path, "region_utf8")
    text = out.read_bytes().decode("utf-8")  # raises if the profile is not UTF-8
    assert "\\ufffd" in text  # escaped in the JSON text
    _, ranks = read_profile(out)
    for r in ranks:
        [g] = r["regions"]
        assert g["name"] == "é" * 31 + "\ufffd"
        assert g["functions"]["MPI_Barrier"]["calls"] == 1 and g["entries"] == 1
        names = [c["name"] for c in r["comms"] if c["kind"] == "dup"]
        assert names == ["caf\ufffd"]
    assert mpilens_inproc("report", out).returncode == 0


def test_snapshot_leaves_open_regions_open(build, tmp_path):
    """A SIGUSR1 snapshot (flight recorder) while "phase" is open: the dump shows the
    region as it is then (1 MPI_Barrier), and the program's region goes on to its end
    (tests/progs/region_dump.c: 11 MPI_Barrier in all, open for at least 0.3 s)."""
    out = tmp_path / "job.prof"
    partial = tmp_path / "job.prof.partial"
    run_mpi(P, [EXEC, PROGS / "region_dump", partial, tmp_path],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    snap_wall = {}
    for r in range(P):
        head, line = read_profile(tmp_path / f"snap-rank-{r}")
        assert (head["format"], head["rank"], head["reason"], head["signal"], head["dump"]) == \
            ("mpilens-partial", r, "signal", "SIGUSR1", 1)
        (g,) = line[0]["regions"]
        assert (g["name"], g["entries"], {f: v["calls"] for f, v in g["functions"].items()}) == \
            ("phase", 1, {"MPI_Barrier": 1})
        assert g["wall_s"] > 0
        snap_wall[r] = g["wall_s"]
        assert line[0]["regions_dropped"] == {"labels": 0, "calls": 0, "unmatched": 0}
    _, ranks = read_profile(out)
    assert not partial.exists()  # the complete profile removed the partial files
    for r in ranks:
        (g,) = r["regions"]
        assert (g["name"], g["parent"], g["entries"]) == ("phase", None, 1)
        assert {f: v["calls"] for f, v in g["functions"].items()} == {"MPI_Barrier": 11}
        assert g["wall_s"] >= snap_wall[r["rank"]] + 0.3  # open until the dump, then 0.3 s of sleep
        assert r["regions_dropped"] == {"labels": 0, "calls": 0, "unmatched": 0}
        assert r["functions"]["MPI_Barrier"]["calls"] == 11
