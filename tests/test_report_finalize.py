"""MPI_Finalize: what the docs say (docs/cli.md, docs/runtime.md) is what the profile and the
reports do.  Its record is one call per rank whose time is the wait for the last rank to
reach MPI_Finalize; like MPI_Init it lies outside the wall-time window, so it is left out
of the time in MPI and the % columns and listed last."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO, read_profile
from mpilens.report import analysis
from test_cli_support import mpilens_inproc, real_profile

P = 4


@pytest.fixture(scope="module")
def prof4(build):
    return real_profile(P)


def _doc(name: str) -> str:
    return " ".join((REPO / "docs" / name).read_text().split())


def _names(fragment: str) -> set[str]:
    return set(re.findall(r"`(MPI_\w+)`", fragment))


def test_docs_agree_on_what_is_outside_the_window() -> None:
    cli, runtime = _doc("cli.md"), _doc("runtime.md")
    # cli.md: "... the `% MPI` / `% wall` columns leave out `MPI_Init`, ... and `MPI_Finalize`:"
    left_out = _names(cli.split("columns leave out")[1].split(":")[0])
    # runtime.md: "`MPI_Init`, `MPI_Init_thread` and `MPI_Finalize` lie outside the ... window"
    outside = _names(runtime.split(" lie outside the wall-time window")[0].split(". ")[-1])
    assert left_out == outside == {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"} == \
        set(analysis.OUTSIDE)
    # both say that they are listed (last) and what MPI_Finalize's time is
    assert "These functions are still listed, last, with their times" in cli
    assert "the reports list them last" in runtime
    assert "the time of `MPI_Finalize` is how long the ranks waited in it for the last rank" in cli
    assert "its time is **how long the rank waited in `MPI_Finalize` for the last rank to " \
        "call it**" in runtime
    assert "not in the profile (it is written before it)" not in runtime


def test_profile_and_reports_list_mpi_finalize_last(prof4) -> None:
    header, lines = read_profile(prof4)
    fin = header["functions"]["MPI_Finalize"]
    assert fin["calls"] == P and fin["calls_per_rank"] == {"min": 1, "max": 1}
    assert fin["time_s"] == pytest.approx(sum(ln["functions"]["MPI_Finalize"]["time_s"]
                                              for ln in lines), rel=1e-7)
    for ln in lines:  # time in MPI leaves MPI_Init and MPI_Finalize out
        f = ln["functions"]
        assert f["MPI_Finalize"]["calls"] == 1 and f["MPI_Finalize"]["time_s"] >= 0
        inside = sum(v["time_s"] for n, v in f.items() if n not in analysis.OUTSIDE)
        assert ln["mpi_s"] == pytest.approx(inside, rel=1e-6)
    proc = mpilens_inproc("report", prof4, "--format", "json")
    rows = json.loads(proc.stdout)["functions"]
    names = [r["function"] for r in rows]
    assert names[-2:] == sorted(["MPI_Init", "MPI_Finalize"], key=lambda n: (
        -header["functions"][n]["time_s"], n))
    last = {r["function"]: r for r in rows[-2:]}
    assert last["MPI_Finalize"]["calls"] == P
    assert last["MPI_Finalize"]["time_s"] == fin["time_s"]
    assert last["MPI_Finalize"]["mpi_pct"] is None and last["MPI_Finalize"]["wall_pct"] is None
    text = mpilens_inproc("report", prof4, "--top", "50").stdout
    table = [ln.split("│")[1].strip() for ln in text.splitlines()
             if ln.startswith("│ MPI_") and "│" in ln[2:]]
    assert table[: len(names)] == names  # the text report lists MPI_Finalize too, last
