"""Per-rank figures (`report --ranks`, JSON `ranks`, CSV `--ranks`) and the shortest and
longest single call of each function, checked against the profile of a real run of the
bundled example (heat2d, 4 ranks) and against what the example does."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import read_profile
from mpilens.report.analysis import OUTSIDE
from mpilens.units import fmt_bytes, fmt_pct, fmt_time, fmt_times
from test_cli_support import EVERY, STEPS, N, mpilens_inproc, per_rank_calls, real_profile

P = 4


@pytest.fixture(scope="module")
def prof4(build):
    return real_profile(P)


def report(path, *extra: str) -> str:
    proc = mpilens_inproc("report", path, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def expected_bytes_sent(rank: int) -> int:
    """What heat2d rank `rank` sends (examples/heat2d.c): halo rows, residuals, transposes,
    and at rank 0 the broadcast parameters (3 ints)."""
    halo = 2 * STEPS * N * 8
    allreduce = 8 * STEPS + 16
    alltoall = (STEPS // EVERY) * (N // P) ** 2 * 8 * P
    return halo + allreduce + alltoall + (12 if rank == 0 else 0)


def test_rank_rows_are_the_profile_numbers(prof4) -> None:
    _, lines = read_profile(prof4)
    rows = json.loads(report(prof4, "--format", "json"))["ranks"]
    assert [r["rank"] for r in rows] == list(range(P))
    calls = sum(per_rank_calls().values()) + 2  # and one MPI_Comm_rank, one MPI_Comm_size
    for row, line in zip(rows, lines, strict=True):
        fs = line["functions"]
        assert (row["host"], row["wall_s"], row["mpi_s"]) == (line["host"], line["wall_s"],
                                                               line["mpi_s"])
        assert row["mpi_pct"] == 100.0 * line["mpi_s"] / line["wall_s"]
        assert row["calls"] == calls == sum(f["calls"] for n, f in fs.items() if n not in OUTSIDE)
        assert row["bytes_sent"] == expected_bytes_sent(row["rank"])
        # one host: every halo byte (the point-to-point sends) stays on node 0
        assert (row["node"], row["p2p_intra_bytes"], row["p2p_inter_bytes"]) == \
            (0, 2 * STEPS * N * 8, 0)
        assert row["bytes_sent"] == sum(f.get("bytes_sent", 0) for f in fs.values())
        assert row["bytes_recv"] == sum(f.get("bytes_recv", 0) for f in fs.values())
        comm = {n: f["time_s"] for n, f in fs.items() if n not in OUTSIDE}
        top = max(comm.values())
        assert row["top_function"] == min(n for n, t in comm.items() if t == top)
        assert row["top_function_s"] == top
        assert row["top_function_pct"] == 100.0 * top / line["mpi_s"]


def test_rank_table_csv_and_text(prof4) -> None:
    rows = json.loads(report(prof4, "--format", "json"))["ranks"]
    got = list(csv.DictReader(io.StringIO(report(prof4, "--format", "csv", "--ranks"))))
    assert len(got) == P
    for g, r in zip(got, rows, strict=True):
        assert {k: str(v) for k, v in r.items()} == g
    text = report(prof4, "--ranks", "--width", "250")  # every column (80 leaves some out)
    assert "Per rank (time in MPI and calls without MPI_Init/Finalize)" in text
    for r in rows:
        cells = [str(r["rank"]), r["host"], str(r["node"]), fmt_time(r["wall_s"]),
                 fmt_time(r["mpi_s"]), fmt_pct(r["mpi_pct"]), f"{r['calls']:,}",
                 fmt_bytes(r["bytes_sent"]), fmt_bytes(r["bytes_recv"]),
                 fmt_bytes(r["p2p_intra_bytes"]), fmt_bytes(r["p2p_inter_bytes"]),
                 (f"{r['top_function']} {fmt_time(r['top_function_s'])} "
                  f"({fmt_pct(r['top_function_pct'])})")]
        line = next(ln for ln in text.splitlines() if ln.split("│")[1:2] == [f" {r['rank']:>4} "])
        assert [c.strip() for c in line.split("│")[1:-1]] == cells
    assert "Per rank" not in report(prof4)  # only on request


def test_per_rank_csv_needs_rank_lines_and_one_table(prof4, tmp_path) -> None:
    lines = prof4.read_text().splitlines()
    header = json.loads(lines[0])
    header["detail"] = False
    off = tmp_path / "off.prof"
    off.write_text(json.dumps(header) + "\n")
    proc = mpilens_inproc("report", off, "--format", "csv", "--ranks")
    assert proc.returncode == 2 and proc.stderr == (
        f"mpilens: {off}: the profile has no rank lines (written with MPILENS_DETAIL=off): "
        "no per-rank table\n")
    assert json.loads(report(off, "--format", "json"))["ranks"] is None
    assert "the profile has no rank lines" in report(off, "--ranks")
    proc = mpilens_inproc("report", prof4, "--format", "csv", "--ranks", "--function", "bcast")
    assert proc.returncode == 2 and proc.stderr == (
        "mpilens: --ranks and --function select different CSV tables: give one of them\n")


def test_shortest_and_longest_call_per_function(prof4) -> None:
    header, lines = read_profile(prof4)
    data = json.loads(report(prof4, "--format", "json"))
    text = report(prof4, "--top", "50")
    assert "call min/max" in text
    for r in data["functions"]:
        f = header["functions"][r["function"]]
        assert (r["time_min_s"], r["time_max_s"]) == (f["time_min_s"], f["time_max_s"])
        per = [ln["functions"][r["function"]] for ln in lines if r["function"] in ln["functions"]]
        assert f["time_min_s"] == min(p["time_min_s"] for p in per)
        assert f["time_max_s"] == max(p["time_max_s"] for p in per)
        row = next(ln for ln in text.splitlines() if ln.startswith(f"│ {r['function']} "))
        assert fmt_times([r["time_min_s"], r["time_max_s"]]) in row


def test_html_has_the_rank_table_and_call_extremes(prof4) -> None:
    from mpilens.report.html import render
    from mpilens.report.profile import load

    prof = load(prof4)
    page = render(prof)
    rows = json.loads(report(prof4, "--format", "json"))
    for r in rows["ranks"]:
        cells = [str(r["rank"]), r["host"], fmt_time(r["wall_s"]), fmt_time(r["mpi_s"]),
                 fmt_pct(r["mpi_pct"]), f"{r['calls']:,}", fmt_bytes(r["bytes_sent"]),
                 fmt_bytes(r["bytes_recv"])]
        assert "<tr>" + "".join(f"<td>{c}</td>" for c in cells) in page
    for f in rows["functions"]:
        assert f"<td>{fmt_times([f['time_min_s'], f['time_max_s']])}</td>" in page
