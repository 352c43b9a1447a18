"""`mpilens run`: real jobs under the profiler, launcher-line parsing, exit status."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import launcher, read_profile
from test_cli_support import (
    BUILD,
    EVERY,
    REPO,
    STEPS,
    N,
    example,
    mpilens,
    per_rank_calls,
    real_profile,
)

sys.path.insert(0, str(REPO / "python"))
from mpilens.errors import UserError
from mpilens.launch import wrap


def test_run_keeps_output_and_writes_profile(build, tmp_path: Path) -> None:
    out = tmp_path / "job.prof"
    proc = mpilens("run", "--output", out, "--", *launcher(2), example("heat2d"),
                   N, STEPS, EVERY)
    assert proc.returncode == 0, proc.stderr
    # the application's own output is untouched, on its own stream
    assert f"heat2d: N={N} ranks=2 steps={STEPS} transposes={STEPS // EVERY}" in proc.stdout
    assert proc.stdout.rstrip().endswith("OK")
    assert f"mpilens: profile {out}: 2 ranks" in proc.stderr
    header, ranks = read_profile(out)
    assert header["nranks"] == 2 and [r["rank"] for r in ranks] == [0, 1]
    assert header["command"].split()[0].endswith("heat2d")
    for r in ranks:
        for name, calls in per_rank_calls().items():
            assert r["functions"][name]["calls"] == calls


def test_run_force_replaces_the_profile(build, tmp_path: Path) -> None:
    out = tmp_path / "job.prof"
    first = mpilens("run", "--quiet", "--output", out, "--", *launcher(2), example("heat2d"),
                    16, 4, 2)
    assert first.returncode == 0, first.stderr
    refused = mpilens("run", "--quiet", "--output", out, "--", *launcher(4), example("heat2d"),
                      16, 4, 2)
    assert refused.returncode == 2
    assert f"--output {out} exists: choose another file or add --force" in refused.stderr
    again = mpilens("run", "--quiet", "--force", "--output", out, "--", *launcher(4),
                    example("heat2d"), 16, 4, 2)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.prof"]  # no job.prof.1
    assert read_profile(out)[0]["nranks"] == 4


def test_run_default_output_name(build, tmp_path: Path) -> None:
    """The default output is compressed, mpilens-<job>.prof.gz (gzip members that
    decompress to the JSON Lines); MPILENS_COMPRESS=off: plain, mpilens-<job>.prof."""
    proc = mpilens("run", "--quiet", "--", *launcher(2), example("heat2d"), 16, 4, 2,
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = list(tmp_path.iterdir())
    assert len(found) == 1
    assert found[0].read_bytes()[:2] == b"\x1f\x8b"  # gzip
    header, ranks = read_profile(found[0])
    assert found[0].name == f"mpilens-{header['job_id']}.prof.gz"
    assert header["nranks"] == 2 and [r["rank"] for r in ranks] == [0, 1]
    assert f"mpilens: profile {found[0].name}" in proc.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = mpilens("run", "--quiet", "-e", "MPILENS_COMPRESS=off", "--", *launcher(2),
                   example("heat2d"), 16, 4, 2, cwd=plain)
    assert proc.returncode == 0, proc.stderr
    [prof] = plain.iterdir()
    header, ranks = read_profile(prof)
    assert prof.name == f"mpilens-{header['job_id']}.prof"
    assert prof.read_bytes()[:1] == b"{" and header["nranks"] == 2 and len(ranks) == 2


def test_run_returns_the_application_status(build, tmp_path: Path) -> None:
    # N=30 is not divisible by 4 ranks: heat2d says so and exits with status 2
    proc = mpilens("run", "--quiet", "--output", tmp_path / "f.prof", "--", *launcher(4),
                   example("heat2d"), 30, 4, 2)
    assert proc.returncode == 2
    assert "heat2d: N=30 must be a positive multiple of the 4 ranks" in proc.stderr


def test_fortran_example_through_mpilens_exec(build) -> None:
    """`<launcher> -np 2 mpilens-exec heat2d_f`: the Fortran bindings are profiled."""
    header, ranks = read_profile(real_profile(2, "heat2d_f", via="exec"))
    assert header["nranks"] == 2
    for r in ranks:
        for name, calls in per_rank_calls().items():
            assert r["functions"][name]["calls"] == calls, name
        assert r["functions"]["MPI_Isend"]["bytes_sent"] == 2 * STEPS * N * 8
    proc = mpilens("report", real_profile(2, "heat2d_f", via="exec"), "--format", "json")
    assert proc.returncode == 0, proc.stderr


# --- launcher-line parsing (pure Python: where does the application start?) ---

@pytest.mark.parametrize("argv, expected", [
    (["mpirun.openmpi", "--allow-run-as-root", "-np", "4", "--map-by", "core", "-x", "A=1",
      "--mca", "btl", "self,vader", "--host", "a,b", "./app", "-np", "3"],
     ["mpirun.openmpi", "-x", "MPILENS_OUTPUT", "--allow-run-as-root", "-np", "4", "--map-by",
      "core", "-x", "A=1", "--mca", "btl", "self,vader", "--host", "a,b", "EXEC", "./app",
      "-np", "3"]),
    (["mpiexec.mpich", "-n", "2", "-genv", "A", "B", "-ppn", "2", "-f", "hosts", "./a", "x",
      ":", "-n", "2", "./b"],
     ["mpiexec.mpich", "-n", "2", "-genv", "A", "B", "-ppn", "2", "-f", "hosts", "EXEC",
      "./a", "x", ":", "-n", "2", "EXEC", "./b"]),
    (["srun", "-N", "2", "--ntasks=4", "-p", "debug", "--cpu-bind", "cores", "./app", "-n", "1"],
     ["srun", "-N", "2", "--ntasks=4", "-p", "debug", "--cpu-bind", "cores", "EXEC", "./app",
      "-n", "1"]),
    (["./app", "arg"], ["EXEC", "./app", "arg"]),
])
def test_launcher_parsing(argv: list[str], expected: list[str]) -> None:
    assert wrap(argv, "EXEC", ["MPILENS_OUTPUT"]).argv == expected


def test_launcher_parsing_needs_an_application() -> None:
    with pytest.raises(UserError, match="no application found"):
        wrap(["mpiexec.mpich", "-n", "4", "-genv", "A", "B"], "EXEC")


def test_exec_prefix_is_built(build) -> None:
    assert (BUILD / "bin" / "mpilens-exec").exists()
