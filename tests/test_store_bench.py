"""The workload store's benchmark figures (docs/store.md, Benchmark): the document's
table is what bench/store/ingest.py makes of its committed results file, whose
provenance says where and how they were measured."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "bench" / "store" / "ingest.py"
RESULTS = REPO / "bench" / "store" / "results" / "store.json"


def test_store_table_is_the_benchmark_results(tmp_path) -> None:
    got = json.loads(RESULTS.read_text())
    prov = got["provenance"]
    assert {"commit", "dirty", "argv", "host", "cpu_model", "cpus", "python", "duckdb",
            "pyarrow", "loadavg_before", "loadavg_after", "real_profile", "reader_library",
            "seed", "mix"} <= set(prov)
    # the scale: 100,000 jobs really in the dataset, a 16,384-rank job, 1,000 runs
    assert got["records"]["records"] == got["records"]["jobs_in_dataset"] == 100_000
    assert got["big"]["ranks"] == 16_384 and got["small"]["jobs"] == 1_000
    assert got["records"]["history_runs"] == 1_000
    page = (REPO / "docs" / "store.md").read_text()
    doc = tmp_path / "store.md"
    doc.write_text(page.replace("| store size per job |", "| edited by hand |"))
    subprocess.run([sys.executable, str(SCRIPT), "--table-from", str(RESULTS),
                    "--doc", str(doc)], check=True, capture_output=True, timeout=60)
    assert doc.read_text() == page
    assert "| store size per job |" in page
    assert "bench/store/ingest.py " + " ".join(prov["argv"][2:]) in page


def test_table_from_unreadable_file_one_line(tmp_path) -> None:
    doc = tmp_path / "store.md"
    doc.write_text("<!-- store table: begin -->\nkept\n<!-- store table: end -->\n")
    for bad, why in ((tmp_path / "missing.json", "FileNotFoundError"),
                     (tmp_path / "other.json", "KeyError: 'small'")):
        if bad.name == "other.json":
            bad.write_text('{"provenance": {}}')
        proc = subprocess.run([sys.executable, str(SCRIPT), "--table-from", str(bad),
                               "--doc", str(doc)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert proc.stderr.startswith(f"bench/store/ingest.py: cannot read --table-from "
                                      f"{bad}: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert why in proc.stderr and "Traceback" not in proc.stderr
        assert doc.read_text().count("kept") == 1


def test_records_vary_by_a_factor_but_not_their_ratios_and_ranks() -> None:
    spec = importlib.util.spec_from_file_location("store_bench", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rec = {"nranks": 64, "nnodes": 2, "wall_s": 1.5, "mpi_pct": 40.0, "app": "lmp",
           "wall_q_s": [1.0, 1.5], "functions": [{"calls": 3, "time_s": 0.25,
                                                  "median_size_bytes": 8,
                                                  "hist_send": [0, 5]}]}
    assert mod.scaled(rec, 2.0) == {
        "nranks": 64, "nnodes": 2, "wall_s": 3.0, "mpi_pct": 40.0, "app": "lmp",
        "wall_q_s": [2.0, 3.0], "functions": [{"calls": 6, "time_s": 0.5,
                                               "median_size_bytes": 8, "hist_send": [0, 10]}]}
