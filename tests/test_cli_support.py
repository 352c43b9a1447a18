"""Helpers (no tests) for the CLI tests: the mpilens command and real profiles.

Profiles are produced once per test session by real runs of examples/heat2d
(C) and examples/heat2d_f (Fortran) under the selected MPI, through
`mpilens run -- <launcher> -np N <example>` or `<launcher> -np N mpilens-exec <example>`.
The calls each rank makes are known from the examples' source (per_rank_calls).
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from conftest import BUILD, REPO, launcher, mpi_env

N, STEPS, EVERY = 32, 20, 5  # small: MPICH busy-polls when oversubscribed


def per_rank_calls(steps: int = STEPS, every: int = EVERY) -> dict[str, int]:
    """MPI calls each rank of heat2d / heat2d_f makes (from the example's source)."""
    return {"MPI_Bcast": 1, "MPI_Isend": 2 * steps, "MPI_Irecv": 2 * steps,
            "MPI_Waitall": steps, "MPI_Allreduce": steps + 1, "MPI_Alltoall": steps // every}


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = mpi_env()
    env.pop("MPILENS_OUTPUT", None)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    env["MPILENS_BUILD"] = str(BUILD)
    env.update(extra or {})
    return env


def mpilens(*args: str | Path, cwd: str | Path | None = None, timeout: float = 180,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the mpilens CLI (this checkout's python package) and capture its output."""
    return subprocess.run([sys.executable, "-m", "mpilens.cli", *map(str, args)],
                          env=cli_env(env), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def mpilens_inproc(*args: str | Path) -> subprocess.CompletedProcess:
    """The same CLI entry point (mpilens.cli.main) run in this process: no interpreter
    start-up per call.  Output and exit status are captured as from a process."""
    from mpilens import cli

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in args])
        except SystemExit as exc:  # argparse errors
            rc = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(list(args), rc, out.getvalue(), err.getvalue())


def example(name: str) -> Path:
    return BUILD / "examples" / name


@functools.cache
def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="mpilens-cli-tests-"))


@functools.cache
def real_profile(nranks: int, name: str = "heat2d", via: str = "run") -> Path:
    """Profile of a real run of an example (cached for the session).

    via="run": `mpilens run --output F -- <launcher> -np N <example> N STEPS EVERY`;
    via="exec": `<launcher> -np N <build>/bin/mpilens-exec <example> ...` with MPILENS_OUTPUT.
    """
    out = workdir() / f"{name}-{nranks}-{via}.prof"
    app = [str(example(name)), str(N), str(STEPS), str(EVERY)]
    if via == "run":
        proc = mpilens("run", "--output", out, "--", *launcher(nranks), *app)
    else:
        proc = subprocess.run(launcher(nranks) + [str(BUILD / "bin" / "mpilens-exec"), *app],
                              env=cli_env({"MPILENS_OUTPUT": str(out)}), capture_output=True,
                              text=True, timeout=180, check=False)
    if proc.returncode != 0 or not out.exists():
        raise AssertionError(f"profiling {name} on {nranks} ranks failed ({proc.returncode}):"
                             f"\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return out
