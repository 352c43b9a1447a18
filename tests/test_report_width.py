"""Reports that fit the terminal (report/layout.py): at 80 columns the summary and
the tables keep their essential columns with whole numbers — columns are left out
by priority and the caption says which — never a cell cut to `4…`; COLUMNS and
--width are honoured when the output is piped; one notation per column, with units.

check_80 is also applied to `mpilens demo`'s report (test_cli_demo.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mpilens.bench import tables as bench_tables
from mpilens.report import analysis, callsites
from mpilens.report.profile import load
from mpilens.units import fmt_bytes, fmt_pct, fmt_time, fmt_times, num
from test_cli_support import mpilens_inproc, real_profile

FUNCTION_COLUMNS = ["function", "calls", "total", "mean", "call min/max", "% MPI", "% wall",
                    "rank min/mean/max", "slowest", "bytes"]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("│").split("│")]


def _table_rows(text: str, title: str) -> tuple[list[str], list[list[str]], list[str]]:
    """Header cells, body rows and the two lines after the table whose title has `title`."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if title in ln)
    head_at = next(i for i in range(start, len(lines)) if lines[i].startswith("┃"))
    end = next(i for i in range(head_at, len(lines)) if lines[i].startswith("└"))
    head = _cells(lines[head_at].replace("┃", "│"))
    body = [_cells(ln) for ln in lines[head_at + 2:end] if ln.startswith("│")]
    return head, body, lines[end + 1:end + 3]


def check_80(text: str, prof_path: Path, width: int = 80) -> None:
    """Every line of a text report within width, no cut cell, and the function and call
    site tables' essential cells exactly the profile's numbers, whole."""
    for n, line in enumerate(text.splitlines(), 1):
        assert len(line) <= width, f"line {n} is {len(line)} columns: {line!r}"
        assert "…" not in line, f"line {n} has a cut cell: {line!r}"
    prof = load(prof_path)
    head, body, after = _table_rows(text, "MPI functions by total time")
    for col in ("function", "calls", "total", "% MPI"):
        assert col in head, head
    rows = {r["function"]: r for r in analysis.function_rows(prof)}
    for cells in body:
        cell = dict(zip(head, cells, strict=True))
        r = rows[cell["function"]]
        assert cell["calls"] == f"{r['calls']:,}"
        assert cell["total"] == fmt_time(r["time_s"])
        assert cell["% MPI"] == fmt_pct(r["mpi_pct"])
        if "bytes" in cell:
            assert cell["bytes"] == fmt_bytes(r["bytes_sent"] + r["bytes_recv"])
    missing = [c for c in FUNCTION_COLUMNS if c not in head]
    if missing:  # columns left out: the caption says which and how to see them
        caption = " ".join(" ".join(after).split())
        assert re.search(rf"left out at {width} columns: {', '.join(missing)} \(--width=\d+",
                         caption), caption
    if callsites.callsite_rows(prof):
        head, body, _ = _table_rows(text, "call sites by total time")
        assert head[:3] == ["#", "function", "call site"] and "total" in head, head
        sites = callsites.callsite_rows(prof)
        for cells in body:
            if not cells[0]:
                continue  # a wrapped call site's second line
            r = sites[int(cells[0]) - 1]
            assert cells[1] == r["function"] and r["location"].startswith(cells[2])
            assert dict(zip(head, cells, strict=True))["total"] == fmt_time(r["time_s"])


@pytest.mark.parametrize(("how", "width"), [("--width", 80), ("COLUMNS", 80),
                                            ("--width", 100), ("COLUMNS", 120)])
def test_report_fits(how: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    prof = real_profile(4)
    if how == "--width":
        proc = mpilens_inproc("report", prof, "--width", width, "--function", "MPI_Isend",
                              "--ranks")
    else:  # not a terminal, as here: COLUMNS is honoured
        monkeypatch.setenv("COLUMNS", str(width))
        proc = mpilens_inproc("report", prof, "--function", "MPI_Isend", "--ranks")
    assert proc.returncode == 0, proc.stderr
    check_80(proc.stdout, prof, width)


def test_too_narrow_a_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """--width below 40 is refused in the usage's line; COLUMNS=1 (an environment, not
    a choice) gets 40 columns.  Neither is a traceback."""
    prof = real_profile(4)
    for w in (1, 39):
        proc = mpilens_inproc("report", prof, "--width", w)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.splitlines()[-1] == (f"mpilens report: error: argument --width: {w} "
                                                f"columns are too few: give 40 or more")
    monkeypatch.setenv("COLUMNS", "1")
    proc = mpilens_inproc("report", prof, "--function", "MPI_Isend", "--ranks")
    assert proc.returncode == 0, proc.stderr
    assert max(len(ln) for ln in proc.stdout.splitlines()) == 40


def test_wide_shows_every_column(monkeypatch: pytest.MonkeyPatch) -> None:
    prof = real_profile(4)
    monkeypatch.setenv("COLUMNS", "200")
    proc = mpilens_inproc("report", prof)
    assert proc.returncode == 0, proc.stderr
    head, _, _ = _table_rows(proc.stdout, "MPI functions by total time")
    assert head[:10] == FUNCTION_COLUMNS
    assert not any("left out" in ln for ln in proc.stdout.splitlines())
    check_80(proc.stdout, prof, width=200)


def test_diff_at_80_columns_keeps_the_call_site() -> None:
    a, b = real_profile(2), real_profile(4)
    proc = mpilens_inproc("diff", a, b, "--width", "80")
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.splitlines():
        assert len(line) <= 80 and "…" not in line, line
    head, body, _ = _table_rows(proc.stdout, "Per call site")
    assert head[:2] == ["function", "call site"] and "change" in head, head
    sites = {r["location"] for r in callsites.callsite_rows(load(b))}
    assert body and all(any(s.startswith(c[1]) for s in sites) for c in body if c[0])


def test_one_notation_with_units() -> None:
    """No exponent form at any magnitude; a pair too far apart for one unit gets two."""
    assert fmt_times([1e-8, 0.011]) == "10 ns/11 ms"   # was '1e-05/11 ms'
    assert fmt_times([0.0012, 0.011]) == "1.2/11 ms"
    assert fmt_time(1234.5) == "1234 s" and fmt_time(0.99996) == "1000 ms"
    assert fmt_bytes(3 << 40) == "3 TiB" and fmt_bytes(1023) == "1023 B"
    assert bench_tables._bw(914.0) == "914 B/s" and bench_tables._bw(2.5e9) == "2.5 GB/s"
    for e in range(-12, 6):
        for m in (1.0, 1.5, 9.99):
            for s in (fmt_time(m * 10.0 ** e), fmt_times([m * 10.0 ** e, 1e-9]),
                      fmt_bytes(m * 10.0 ** (e + 12)), num(m * 10.0 ** e)):
                assert "e" not in s.replace("GiB", "").replace("TiB", ""), s
