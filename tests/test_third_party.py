"""Codes mpilens did not write, linked to Debian's Open MPI, on 4 ranks, profiled by
`mpilens run`, reported, and kept in the workload store (docs/store.md).

HPC Challenge (`hpcc`: HPL, PTRANS, RandomAccess, FFT, STREAM, DGEMM, b_eff): its own
summary says it finished and verified its results (Success=1, HPL N=300 on a 2 x 2
grid: tests/data/hpccinf.txt); the profile's job totals are the sums of its rank
lines, function by function; the store's record holds those totals exactly.  hpcc's
call counts depend on its timed loops (b_eff, RandomAccess), so they are read from the
rank lines, not foretold; MPI_Init and MPI_Finalize are once per rank.

LAMMPS (`lmp`, its Lennard-Jones melt: tests/data/lammps-melt.in): profiled, it
prints the same thermodynamics, digit for digit, as without mpilens (the profiler
changes no result), 4000 atoms, 100 steps, 5 neighbour list builds; its profile's
totals are the sums of its rank lines, and the store holds them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FLAVOUR, REPO, launcher, mpi_env, read_profile
from test_cli_support import mpilens, mpilens_inproc

HPCC = shutil.which("hpcc")
LMP = shutil.which("lmp")
pytestmark = pytest.mark.skipif(FLAVOUR != "openmpi",
                                reason="Debian's hpcc and lmp are linked to Debian's Open MPI")
# .ci/setup --test installs both, so CI runs every test here
needs_hpcc = pytest.mark.skipif(HPCC is None, reason="hpcc is not installed (.ci/setup --test)")
needs_lmp = pytest.mark.skipif(LMP is None, reason="lammps is not installed (.ci/setup --test)")


@pytest.fixture(scope="module")
def hpcc(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """hpcc's profile and its output file (hpcc reads hpccinf.txt in its directory)."""
    d = tmp_path_factory.mktemp("hpcc")
    shutil.copy(REPO / "tests" / "data" / "hpccinf.txt", d / "hpccinf.txt")
    prof = d / "hpcc.prof"
    proc = mpilens("run", "--quiet", "-o", prof, "--", *launcher(4), str(HPCC), cwd=d,
                   timeout=600)
    assert proc.returncode == 0 and prof.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return prof, d / "hpccoutf.txt"


def _summary(out: Path) -> dict[str, str]:
    text = out.read_text(errors="replace")
    assert "End of HPC Challenge tests." in text, text[-2000:]
    body = text.split("Begin of Summary section.", 1)[1].split("End of Summary section.", 1)[0]
    return dict(ln.split("=", 1) for ln in body.splitlines() if "=" in ln)


@needs_hpcc
def test_hpcc_profile_is_the_sum_of_its_ranks(hpcc: tuple[Path, Path]) -> None:
    prof, out = hpcc
    summary = _summary(out)
    assert (summary["Success"], summary["CommWorldProcs"], summary["HPL_N"],
            summary["HPL_nprow"], summary["HPL_npcol"]) == ("1", "4", "300", "2", "2")
    header, lines = _sums_of_ranks(prof, "hpcc")
    fns = header["functions"]
    # HPL, PTRANS and b_eff talk point to point; the FFT's transposes are MPI_Alltoall
    assert fns["MPI_Sendrecv"]["calls"] > 0 and fns["MPI_Alltoall"]["calls"] > 0
    rep = mpilens("report", prof, "--format", "json")
    assert rep.returncode == 0, rep.stderr
    doc = json.loads(rep.stdout)
    assert doc["header_check"]["ok"] and doc["summary"]["nranks"] == 4
    assert {f["function"]: f["calls"] for f in doc["functions"]} == \
        {n: f["calls"] for n, f in fns.items()}
    # a rank's calls in the report: inside the wall-time window (MPI_Init and
    # MPI_Finalize are outside it)
    outside = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"}
    assert [r["calls"] for r in sorted(doc["ranks"], key=lambda r: r["rank"])] == \
        [sum(f.get("calls", 0) for n, f in ln["functions"].items() if n not in outside)
         for ln in sorted(lines, key=lambda ln: ln["rank"])]


@needs_hpcc
def test_hpcc_in_the_workload_store(hpcc: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("duckdb", reason="duckdb is in the test extra (.ci/setup --test)")
    pytest.importorskip("pyarrow", reason="pyarrow is in the test extra (.ci/setup --test)")
    _in_the_store(hpcc[0], "hpcc", tmp_path / "st")


def _sums_of_ranks(prof: Path, app: str) -> tuple[dict, list[dict]]:
    """The profile of 4 ranks whose job totals are the sums of its rank lines."""
    header, lines = read_profile(prof)
    assert header["nranks"] == 4 and sorted(ln["rank"] for ln in lines) == [0, 1, 2, 3]
    assert header["command"].split()[0].endswith(app)
    fns = header["functions"]
    assert fns["MPI_Init"]["calls"] == fns["MPI_Finalize"]["calls"] == 4
    for name, f in fns.items():
        per_rank = [ln["functions"].get(name, {}) for ln in lines]
        assert f["calls"] == sum(r.get("calls", 0) for r in per_rank), name
        for key in ("bytes_sent", "bytes_recv"):
            assert f.get(key, 0) == sum(r.get(key, 0) for r in per_rank), (name, key)
    return header, lines


def _in_the_store(prof: Path, app: str, st: Path) -> None:
    """The profile added and ingested: one job of `app`, its totals exactly."""
    import mpilens.store

    for args in (("add", st, prof), ("ingest", st)):
        proc = mpilens_inproc("store", *args)
        assert proc.returncode == 0, proc.stderr
    s = mpilens.store.open(st)
    [job] = s.rows("SELECT * FROM jobs")
    header, _ = read_profile(prof)
    assert (job["app"], job["nranks"], job["ending"]) == (app, 4, "completed")
    got = {f["function"]: f for f in s.rows("SELECT * FROM functions WHERE job_key = ?",
                                             [job["job_key"]])}
    assert set(got) == set(header["functions"])
    for name, f in header["functions"].items():
        assert (got[name]["calls"], got[name]["bytes_sent"], got[name]["bytes_recv"]) == \
            (f["calls"], f.get("bytes_sent", 0), f.get("bytes_recv", 0)), name
    proc = mpilens_inproc("store", "apps", st)
    assert proc.returncode == 0 and proc.stdout.splitlines()[1].split()[:2] == [app, "1"], \
        proc.stdout


def _thermo(text: str) -> list[str]:
    """LAMMPS's thermodynamic table: the header line to the line before "Loop time"."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["Step", "Temp"])
    end = next(i for i, ln in enumerate(lines) if ln.startswith("Loop time of"))
    return lines[start:end]


@pytest.fixture(scope="module")
def lammps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """LAMMPS's melt profiled, and its output with and without mpilens."""
    d = tmp_path_factory.mktemp("lammps")
    inp = REPO / "tests" / "data" / "lammps-melt.in"
    line = [*launcher(4), str(LMP), "-in", str(inp), "-log", "none"]
    plain = subprocess.run(line, cwd=d, env=mpi_env(), capture_output=True, text=True,
                           timeout=600, check=False)
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
    prof = d / "lmp.prof"
    proc = mpilens("run", "--quiet", "-o", prof, "--", *line, cwd=d, timeout=600)
    assert proc.returncode == 0 and prof.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return prof, plain.stdout, proc.stdout


@needs_lmp
def test_lammps_same_results_and_exact_profile(lammps: tuple[Path, str, str]) -> None:
    prof, plain, profiled = lammps
    thermo = _thermo(profiled)
    assert thermo == _thermo(plain)  # the profiler changes no result
    assert [ln.split()[0] for ln in thermo] == ["Step", "0", "50", "100"]
    assert thermo[1].split()[1:3] == ["3", "-6.7733681"]  # the melt's start: T=3
    assert "Loop time of" in profiled and "on 4 procs for 100 steps with 4000 atoms" in profiled
    assert "Neighbor list builds = 5" in profiled  # every 20 steps, unchecked
    header, _ = _sums_of_ranks(prof, "lmp")
    fns = header["functions"]
    # the thermodynamics are sums over ranks: MPI_Allreduce at least once per output
    assert fns["MPI_Allreduce"]["calls"] >= 4 * 3


@needs_lmp
def test_lammps_in_the_workload_store(lammps: tuple[Path, str, str], tmp_path: Path) -> None:
    pytest.importorskip("duckdb", reason="duckdb is in the test extra (.ci/setup --test)")
    pytest.importorskip("pyarrow", reason="pyarrow is in the test extra (.ci/setup --test)")
    _in_the_store(lammps[0], "lmp", tmp_path / "st")
