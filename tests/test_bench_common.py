"""Helpers shared by the mpilens-bench tests: run a family, reproduce its data patterns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import BUILD, REPO, launcher, mpi_env, run_mpi

BENCH = BUILD / "bin" / "mpilens-bench"


def bench_exe() -> Path:
    if not BENCH.exists():
        pytest.fail(f"{BENCH} missing: run `make build` first")
    return BENCH


def run_family(np_: int, family: str, args: list[str], tmp: Path,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `mpilens-bench family args` on np_ ranks; its JSON document."""
    out = tmp / f"{family}.json"
    proc = run_mpi(np_, [bench_exe(), family, *args, "--out", out], env=env)
    text = out.read_text()
    try:
        doc: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"{exc}: {text[:300]!r}... stderr {proc.stderr[-2000:]}") from None
    assert doc["format"] == "mpilens-bench" and doc["version"] == 1
    assert doc["family"] == family
    assert doc["errors"] == 0 and doc["validated"] is True
    return doc


def cli(args: list[str], np_: int = 2, cwd: Path | None = None,
        launch: bool = True) -> subprocess.CompletedProcess[str]:
    """`mpilens bench ...` with this MPI's launcher after --."""
    env = mpi_env({"PYTHONPATH": str(REPO / "python"), "MPILENS_BUILD": str(BUILD),
                   "COLUMNS": "200"})
    env.pop("MPILENS_OUTPUT", None)
    cmd = [sys.executable, "-m", "mpilens.cli", "bench", *args]
    if launch:
        cmd += ["--", *launcher(np_)]
    return subprocess.run(cmd, check=False, env=env, capture_output=True, text=True,
                          timeout=180,
                          cwd=cwd or os.getcwd())


def pat(off: int, seed: int) -> int:
    """ml_pat(): the byte every family writes at global offset `off`."""
    return ((((off * 2654435761) & 0xFFFFFFFF) >> 24) + seed) & 0xFF


def pattern(off0: int, n: int, seed: int) -> bytes:
    return bytes(pat(off0 + i, seed) for i in range(n))


def fnv1a(h: int, data: bytes) -> int:
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


STATS_KEYS = {"n", "median", "p2_5", "p97_5", "median_ci95", "min", "max", "mean", "stddev",
              "outliers", "outlier_samples"}


def check_stats(st: dict[str, Any], n: int) -> None:
    assert set(st) == STATS_KEYS
    assert st["n"] == n
    assert st["min"] <= st["median"] <= st["max"]
    assert st["median_ci95"][0] <= st["median"] <= st["median_ci95"][1]
    assert st["outliers"] == len(st["outlier_samples"])


def check_env(doc: dict[str, Any], nranks: int, flavour: str) -> None:
    env = doc["env"]
    assert env["nranks"] == nranks
    assert [p["rank"] for p in env["placement"]] == list(range(nranks))
    assert env["hosts"] and all(p["host"] in env["hosts"] for p in env["placement"])
    name = {"openmpi": "Open MPI", "mpich": "MPICH"}.get(flavour, "")
    assert name in env["mpi_library"]
    assert isinstance(env["variables"], dict)
    assert 0 < doc["clock"]["resolution_s"] < 1e-3
    assert doc["clock"]["timer"] == "MPI_Wtime"


def estimate_first(stderr: str, progress_lines: int) -> float:
    """A family run with --progress sent its expected duration (MLB-ESTIMATE, shown by
    `mpilens bench` from 10 s on) before its first progress line, then exactly
    progress_lines progress lines: the estimate's seconds (> 0)."""
    lines = [ln for ln in stderr.splitlines() if ln.startswith("MLB-")]
    assert lines and lines[0].startswith("MLB-ESTIMATE "), lines
    seconds = float(lines[0].split()[1])
    assert seconds > 0
    assert all(ln.startswith("MLB-PROGRESS ") for ln in lines[1:]), lines
    assert len(lines) == 1 + progress_lines, lines
    return seconds
