"""`mpilens demo`, the README's main job: builds what is missing, profiles the C
example on 4 ranks, prints the report and writes the HTML report."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import read_profile
from test_cli_support import mpilens, per_rank_calls
from test_report_width import check_80


def test_demo(build, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = mpilens("demo", "--out-dir", out, timeout=300, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the example ran, checked its answer and its output was shown
    assert re.search(r"heat2d: N=64 ranks=4 steps=100 transposes=4 .* OK", proc.stdout)
    prof, html = out / "heat2d-4ranks.prof.gz", out / "heat2d-4ranks.html"
    assert prof.read_bytes()[:2] == b"\x1f\x8b"  # compressed, as the default output
    header, ranks = read_profile(prof)
    assert header["nranks"] == 4 and len(ranks) == 4
    for name, calls in per_rank_calls(100, 25).items():
        assert header["functions"][name]["calls"] == 4 * calls
    # the report was printed, and the user is told where the HTML is
    assert "mpilens report" in proc.stdout and "MPI_Alltoall" in proc.stdout
    assert "1-D stencil on a ring of 4 ranks" in proc.stdout
    assert f"file://{html}" in proc.stdout
    # piped with COLUMNS=80: every line of the report fits, no number cut (report/layout.py)
    # (the example's own output before it, the demo's file names after it)
    report = proc.stdout[proc.stdout.index("╭"):].split("\nmpilens demo: profile")[0]
    check_80(report, prof)
    assert html.stat().st_size > 10_000 and "data:image/png;base64," in html.read_text()
    # a second demo into the same directory does not overwrite without --force
    again = mpilens("demo", "--out-dir", out)
    assert again.returncode == 2 and "exists" in again.stderr
