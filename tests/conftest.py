"""Shared fixtures: build location and a real MPI launcher for the selected MPI.

MPILENS_MPI (openmpi | mpich) selects the MPI; MPILENS_BUILD the build directory
(the Makefile sets both).  Nothing here mocks MPI: every helper launches real jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mpilens import paths  # noqa: E402

FLAVOUR = paths.mpi_flavour()
BUILD = paths.build_dir()


def _stray_profiles() -> set[str]:
    """Profiles in the repository root: a test that writes one there (a profiled job
    without MPILENS_OUTPUT, run from the root) litters the checkout."""
    return {p.name for p in REPO.glob("mpilens-*.prof")}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STRAY] = _stray_profiles()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    new = sorted(_stray_profiles() - session.config.stash.get(_STRAY, set()))
    if new:
        print(f"\nconftest: the tests wrote {len(new)} profile(s) into {REPO}: "
              f"{', '.join(new[:5])}; give their jobs MPILENS_OUTPUT or cwd=tmp_path")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_STRAY = pytest.StashKey[set]()


def launcher(np_: int) -> list[str]:
    """The launcher command line for np_ ranks, oversubscribed, runnable as root."""
    if FLAVOUR == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(np_)]
    if FLAVOUR == "mpich":
        return ["mpiexec.mpich", "-n", str(np_)]
    if FLAVOUR == "intelmpi":
        return [os.path.join(os.environ["I_MPI_ROOT"], "bin", "mpiexec.hydra"), "-n", str(np_)]
    return ["mpirun", "-np", str(np_)]


def mpi_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    # Open MPI 4.1's UCX one-sided component fails MPI_Win_create intermittently in this
    # container (3 of 6 plain runs, without mpilens); the others are reliable.
    env.setdefault("OMPI_MCA_osc", "sm,rdma,pt2pt")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if FLAVOUR == "intelmpi":  # one node, no fabric: Intel MPI's shared-memory transport
        env.setdefault("I_MPI_FABRICS", "shm")
        env.setdefault("FI_PROVIDER", "shm")
    if extra:
        env.update(extra)
    return env


def run_mpi(np_: int, argv: list[str], env: dict[str, str] | None = None,
            timeout: float = 180, check: bool = True, cwd: str | Path | None = None
            ) -> subprocess.CompletedProcess:
    """Launch argv on np_ ranks with the selected MPI; returns the completed process."""
    cmd = launcher(np_) + [str(a) for a in argv]
    proc = subprocess.run(cmd, env=mpi_env(env), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                             f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
    return proc


def read_profile(path: str | Path) -> tuple[dict, list[dict]]:
    """Header and rank lines of a profile file (JSON Lines)."""
    lines = Path(path).read_text().splitlines()
    header = json.loads(lines[0])
    return header, [json.loads(ln) for ln in lines[1:] if ln.strip()]


@pytest.fixture(scope="session")
def build() -> Path:
    lib = BUILD / "lib" / "libmpilens.so"
    if not lib.exists():
        pytest.fail(f"{lib} missing: run `make build MPI={FLAVOUR}` first (make test does)")
    return BUILD
