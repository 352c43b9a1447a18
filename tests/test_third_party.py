"""A code mpilens did not write: Debian's HPC Challenge (`hpcc`, linked to Debian's Open
MPI: HPL, PTRANS, RandomAccess, FFT, STREAM, DGEMM, b_eff) on 4 ranks, profiled by
`mpilens run`, reported, and kept in the workload store (docs/store.md).

Its own summary says it finished and verified its results (Success=1, HPL N=300 on a
2 x 2 grid: tests/data/hpccinf.txt); the profile's job totals are the sums of its rank
lines, function by function; the store's record holds those totals exactly.  hpcc's
call counts depend on its timed loops (b_eff, RandomAccess), so they are read from the
rank lines, not foretold; MPI_Init and MPI_Finalize are once per rank."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FLAVOUR, REPO, launcher, read_profile
from test_cli_support import mpilens, mpilens_inproc

HPCC = shutil.which("hpcc")
pytestmark = [
    pytest.mark.skipif(FLAVOUR != "openmpi",
                       reason="Debian's hpcc is linked to Debian's Open MPI"),
    pytest.mark.skipif(HPCC is None, reason="hpcc is not installed (.ci/setup --test)")]


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


def test_hpcc_profile_is_the_sum_of_its_ranks(hpcc: tuple[Path, Path]) -> None:
    prof, out = hpcc
    summary = _summary(out)
    assert (summary["Success"], summary["CommWorldProcs"], summary["HPL_N"],
            summary["HPL_nprow"], summary["HPL_npcol"]) == ("1", "4", "300", "2", "2")
    header, lines = read_profile(prof)
    assert header["nranks"] == 4 and sorted(ln["rank"] for ln in lines) == [0, 1, 2, 3]
    assert header["command"].split()[0].endswith("hpcc")
    fns = header["functions"]
    assert fns["MPI_Init"]["calls"] == fns["MPI_Finalize"]["calls"] == 4
    for name, f in fns.items():
        per_rank = [ln["functions"].get(name, {}) for ln in lines]
        assert f["calls"] == sum(r.get("calls", 0) for r in per_rank), name
        for key in ("bytes_sent", "bytes_recv"):
            assert f.get(key, 0) == sum(r.get(key, 0) for r in per_rank), (name, key)
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


def test_hpcc_in_the_workload_store(hpcc: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("duckdb", reason="duckdb is in the test extra (.ci/setup --test)")
    pytest.importorskip("pyarrow", reason="pyarrow is in the test extra (.ci/setup --test)")
    import mpilens.store

    prof, _ = hpcc
    st = tmp_path / "st"
    for args in (("add", st, prof), ("ingest", st)):
        proc = mpilens_inproc("store", *args)
        assert proc.returncode == 0, proc.stderr
    s = mpilens.store.open(st)
    [job] = s.rows("SELECT * FROM jobs")
    header, _ = read_profile(prof)
    assert (job["app"], job["nranks"], job["ending"]) == ("hpcc", 4, "completed")
    got = {f["function"]: f for f in s.rows("SELECT * FROM functions WHERE job_key = ?",
                                             [job["job_key"]])}
    assert set(got) == set(header["functions"])
    for name, f in header["functions"].items():
        assert (got[name]["calls"], got[name]["bytes_sent"], got[name]["bytes_recv"]) == \
            (f["calls"], f.get("bytes_sent", 0), f.get("bytes_recv", 0)), name
    proc = mpilens_inproc("store", "apps", st)
    assert proc.returncode == 0 and proc.stdout.splitlines()[1].split()[:2] == ["hpcc", "1"], \
        proc.stdout
