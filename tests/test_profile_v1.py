"""The reader still reads profile format version 1 (written by mpilens before call
sites and regions): tests/data/profile_v1.prof was written by the version 1 writer
for tests/progs/prof_small.c on 2 ranks (3 MPI_Barrier, 2 MPI_Allreduce of one int,
1 MPI_Comm_rank per rank).  Every view works; the version 2 parts are empty."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO
from mpilens.report import profile, schema
from test_cli_support import mpilens_inproc

V1 = REPO / "tests" / "data" / "profile_v1.prof"


def test_reads_version_1() -> None:
    assert schema.VERSION == 2
    p = profile.load(V1)
    assert p.header["version"] == 1 and p.nranks == 2
    f = p.functions
    assert (f["MPI_Barrier"]["calls"], f["MPI_Allreduce"]["calls"], f["MPI_Comm_rank"]["calls"]) == (6, 4, 2)
    assert f["MPI_Allreduce"]["bytes_sent"] == f["MPI_Allreduce"]["bytes_recv"] == 4 * 2 * 2


def test_every_view_of_a_version_1_profile(tmp_path: Path) -> None:
    data = json.loads(mpilens_inproc("report", V1, "--format", "json").stdout)
    assert {r["function"]: r["calls"] for r in data["functions"]}["MPI_Barrier"] == 6
    assert data["callsites"] == [] and data["regions"] == []
    assert data["callsites_dropped"]["calls"] == 0
    assert mpilens_inproc("report", V1).returncode == 0
    bad = mpilens_inproc("report", V1, "--callsite", "1")
    assert bad.returncode == 2 and "by a version 1 mpilens" in bad.stderr
    assert mpilens_inproc("diff", V1, V1).returncode == 0
    out = tmp_path / "v1.html"
    assert mpilens_inproc("html", V1, "-o", out).returncode == 0
    assert "MPI_Barrier" in out.read_text()
