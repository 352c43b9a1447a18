"""A partial profile's table says why each rank's last dump was written in words: the
dump at the time limit (MPILENS_DUMP_AT, Slurm's end time) is "time limit, dump 1",
not "time_limit #1"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mpilens.report import partial
from test_cli_support import mpilens_inproc
from test_faults import NP, _wait_for, sig_wait_job


def test_dump_labels() -> None:
    assert partial.dump_label("time_limit", 1) == "time limit, dump 1"
    assert partial.dump_label("signal", 2) == "signal, dump 2"
    assert partial.dump_label("abort", 1) == "MPI_Abort, dump 1"
    assert partial.dump_label(None, None) == "-"


def test_time_limit_dump_in_words(build: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    d, snap = out / "p.prof.partial", tmp_path / "snapshot"

    def dumped() -> bool:
        try:
            return all(json.loads((d / f"rank-{r}").read_text().split("\n")[0])["reason"]
                       == "time_limit" for r in range(NP))
        except (OSError, ValueError, KeyError):
            return False

    def snapshot() -> None:  # the time-limit dumps, before the job ends and removes them
        _wait_for(dumped, "the time-limit dumps")
        shutil.copytree(d, snap)

    rc, _, err = sig_wait_job(build, tmp_path, {"MPILENS_OUTPUT": str(out / "p.prof"),
                                                "MPILENS_DUMP_AT": "0.2"}, snapshot)
    assert rc == 0, err
    text = mpilens_inproc("report", snap, "--width", 120).stdout
    rows = [ln for ln in text.splitlines() if "dump 1" in ln]
    assert len(rows) == NP and all("time limit, dump 1" in ln for ln in rows), text
    assert "time_limit #" not in text and " #1" not in text
    html = tmp_path / "p.html"
    assert mpilens_inproc("html", snap, "-o", html).returncode == 0
    assert html.read_text().count("<td>time limit, dump 1</td>") == NP

    # a rank without a dump has no figures: the summary is over the ranks that dumped
    # (was 0 % in time in MPI's min and mean), and no overhead is claimed (was 0.0 ns)
    one = tmp_path / "one"
    shutil.copytree(snap, one)
    for f in one.glob("rank-1*"):
        f.unlink()
    line = json.loads((one / "rank-0").read_text().split("\n")[1])
    pct = 100.0 * line["mpi_s"] / line["wall_s"]
    doc = json.loads(mpilens_inproc("report", one, "--format", "json").stdout)
    assert doc["summary"]["mpi_pct"] == {"min": pct, "mean": pct, "max": pct}
    assert doc["summary"]["overhead_ns"] is None
    text = mpilens_inproc("report", one, "--width", 120).stdout
    assert ("profiler overhead  not in a partial profile (measured at MPI_Init, written at "
            "MPI_Finalize)") in text
    assert "0.0 ns" not in text
