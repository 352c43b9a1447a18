"""Time line (MPILENS_TIMELINE_BINS): a long run (10^7 MPI_Comm_rank, 10^4 MPI_Allreduce
per rank, tests/progs/timeline_long.c) outgrows the bins, which merge in pairs; the
bins still sum exactly to the calls and bytes of each class."""

from __future__ import annotations

import json

import pytest
from conftest import BUILD, read_profile, run_mpi
from test_cli_support import mpilens_inproc

EXEC = BUILD / "bin" / "mpilens-exec"
PROGS = BUILD / "tests"
P = 2
N = 10_000_000
CLASSES = ["p2p", "coll", "rma", "io", "other"]


@pytest.fixture(scope="module")
def long_run(build, tmp_path_factory):
    out = tmp_path_factory.mktemp("timeline") / "long.prof"
    run_mpi(P, [EXEC, PROGS / "timeline_long", N],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"}, timeout=300)
    return out


def test_long_run_merges_and_sums_exactly(long_run):
    header, ranks = read_profile(long_run)
    assert header["timeline_bins"] == 64
    for r in ranks:
        tl = r["timeline"]
        assert tl["classes"] == CLASSES
        assert 1 <= len(tl["calls"]) <= 64
        assert tl["merges"] >= 1                    # the run outgrew the first bins
        assert tl["bin_s"] * 64 >= r["wall_s"] > tl["bin_s"] * 64 / 2 - tl["bin_s"]
        calls = [sum(b[c] for b in tl["calls"]) for c in range(5)]
        nbytes = [sum(b[c] for b in tl["bytes"]) for c in range(5)]
        assert calls == [0, N // 1000 + 1, 0, 0, N]  # Allreduce and the Barrier; Comm_rank
        assert nbytes == [0, (N // 1000) * 32, 0, 0, 0]
        f = r["functions"]
        assert f["MPI_Comm_rank"]["calls"] == N and f["MPI_Allreduce"]["calls"] == N // 1000
        # the calls spread over more than one bin (how many depends on the scheduler:
        # on a loaded machine a rank may wait long in MPI_Init's neighbourhood)
        assert sum(1 for b in tl["calls"] if b[4]) >= 2


def test_report_sparklines_and_html(long_run, tmp_path):
    text = mpilens_inproc("report", long_run).stdout
    assert "Time line" in text and "other" in text and "coll" in text
    data = json.loads(mpilens_inproc("report", long_run, "--format", "json").stdout)
    tl = data["timeline"]
    assert [c["class"] for c in tl["classes"]] == CLASSES
    assert sum(tl["classes"][4]["calls"]) == P * N
    assert sum(tl["classes"][1]["bytes"]) == P * (N // 1000) * 32
    page = tmp_path / "t.html"
    assert mpilens_inproc("html", long_run, "-o", page).returncode == 0
    html = page.read_text()
    assert 'id="timeline"' in html and html.count("<img") >= 2


def test_off(build, tmp_path):
    out = tmp_path / "off.prof"
    run_mpi(P, [EXEC, PROGS / "timeline_long", 2000],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", "MPILENS_TIMELINE_BINS": "0"})
    _, ranks = read_profile(out)
    assert all("timeline" not in r for r in ranks)


def test_one_bin_keeps_every_call(build, tmp_path):
    """MPILENS_TIMELINE_BINS=1 (a power of two): the one bin widens as the run goes on
    and keeps every call (it was cleared at each widening)."""
    out = tmp_path / "one.prof"
    n = 200_000
    run_mpi(P, [EXEC, PROGS / "timeline_long", n],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", "MPILENS_TIMELINE_BINS": "1"})
    _, ranks = read_profile(out)
    for r in ranks:
        tl = r["timeline"]
        assert len(tl["calls"]) == 1 and tl["merges"] >= 1 and tl["bin_s"] >= r["wall_s"]
        assert tl["calls"][0] == [0, n // 1000 + 1, 0, 0, n]
        assert tl["bytes"][0] == [0, (n // 1000) * 32, 0, 0, 0]
