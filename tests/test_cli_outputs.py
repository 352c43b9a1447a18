"""Consistent outputs of `mpilens report`: one column-naming scheme across the CSV and
JSON tables (units and percentages as suffixes: time_s, bytes_sent, mpi_pct), size
classes with numeric bounds, --callsite N printing only its detail (test_callsites.py),
and the same exit status for a closed pipe (`report | head`) in every format."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from typing import Any

import pytest
from test_cli_support import EVERY, STEPS, N, cli_env, mpilens_inproc, real_profile


def _keys(doc: Any) -> set[str]:
    if isinstance(doc, dict):
        return set(doc) | {k for v in doc.values() for k in _keys(v)}
    if isinstance(doc, list):
        return {k for v in doc for k in _keys(v)}
    return set()


def test_one_naming_scheme() -> None:
    prof = real_profile(4)
    doc = json.loads(mpilens_inproc("report", prof, "--format", "json").stdout)
    keys = _keys(doc)
    assert not [k for k in keys if k.startswith("pct_")], sorted(keys)
    assert {"mpi_pct", "wall_pct", "sites_pct"} <= keys
    assert {"mpi_pct", "wall_pct"} <= set(doc["functions"][0])
    assert "sites_pct" in doc["callsites"][0]
    head = mpilens_inproc("report", prof, "--format", "csv").stdout.splitlines()[0].split(",")
    ranks = mpilens_inproc("report", prof, "--format", "csv", "--ranks").stdout.splitlines()[0]
    assert "mpi_pct" in head and "wall_pct" in head and "mpi_pct" in ranks.split(",")


def test_histogram_classes_have_numeric_bounds() -> None:
    prof = real_profile(4)
    proc = mpilens_inproc("report", prof, "--format", "csv", "--function", "MPI_Isend")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert list(rows[0]) == ["function", "direction", "bin", "size_class", "min_bytes",
                             "max_bytes", "messages"]
    k = (N * 8).bit_length()  # a halo row of N doubles: class k holds [2^(k-1), 2^k)
    for r in rows:
        b = int(r["bin"])
        lo, hi = int(r["min_bytes"]), (None if r["max_bytes"] == "" else int(r["max_bytes"]))
        assert (lo, hi) == ((0, 0) if b == 0 else (1 << (b - 1), None if b == 24
                                                   else (1 << b) - 1)), r
        assert int(r["messages"]) == (4 * 2 * STEPS if b == k else 0)
        assert lo <= N * 8 <= hi if b == k else True
    js = json.loads(mpilens_inproc("report", prof, "--format", "json", "--function",
                            "MPI_Isend").stdout)["histogram"]
    assert js["bounds"][k] == [1 << (k - 1), (1 << k) - 1] and js["bounds"][-1][1] is None
    assert EVERY  # the profile's run: N, STEPS, EVERY of test_cli_support


@pytest.mark.parametrize("fmt", ["text", "json", "csv"])
def test_closed_pipe_same_status(fmt: str) -> None:
    """The reader goes away before the first byte (`report | head -0`): exit 141, as a
    process that SIGPIPE ends, in every format; nothing on stderr."""
    prof = real_profile(4)
    proc = subprocess.Popen([sys.executable, "-m", "mpilens.cli", "report", str(prof),
                             "--format", fmt], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=cli_env(), text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == "", err
