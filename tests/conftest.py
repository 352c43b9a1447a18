"""Shared fixtures: build location and a real MPI launcher for the selected MPI.

MPILENS_MPI (openmpi | mpich) selects the MPI; MPILENS_BUILD the build directory
(the Makefile sets both).  Nothing here mocks MPI: every helper launches real jobs.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mpilens import mpi_env as _menv
from mpilens import paths
from mpilens.errors import UserError

FLAVOUR = paths.mpi_flavour()
try:  # make test sets MPILENS_PREFIX to build/<mpi>
    BUILD = paths.runtime().root
except UserError:
    BUILD = paths.build_dir()


def _stray_profiles() -> set[str]:
    """Profiles in the repository root: a test that writes one there (a profiled job
    without MPILENS_OUTPUT, run from the root) litters the checkout; so does a partial
    profile (docs/flight-recorder.md) of such a job that a test ended."""
    return {p.name for pattern in ("mpilens-*.prof", "mpilens-*.prof.gz", "mpilens-*.prof.partial",
                                   "mpilens-*.prof.gz.partial") for p in REPO.glob(pattern)}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STRAY] = _stray_profiles()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    new = sorted(_stray_profiles() - session.config.stash.get(_STRAY, set()))
    if new:
        print(f"\nconftest: the tests wrote {len(new)} profile(s) into {REPO}: "
              f"{', '.join(new[:5])}; give their jobs MPILENS_OUTPUT or cwd=tmp_path")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_STRAY = pytest.StashKey[set]()

# Tests marked `reader_only` exercise the Python readers alone on a canonical profile
# (fuzzing: the same corpus whatever the MPI that made the profile), so one MPI's run
# covers them.  .ci/run sets MPILENS_TEST_READER_ONLY_DONE=1 for its second and third
# MPI; a plain `make test` (any MPI) runs them.
READER_ONLY_DONE = os.environ.get("MPILENS_TEST_READER_ONLY_DONE") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "reader_only: the Python readers alone, "
                            "MPI-independent (skipped when MPILENS_TEST_READER_ONLY_DONE=1)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not READER_ONLY_DONE:
        return
    # the readers do not depend on the MPI: .ci/run runs them under its first MPI only
    skip = pytest.mark.skip(reason="MPI-independent reader test, already run under this CI "
                            "run's first MPI (MPILENS_TEST_READER_ONLY_DONE=1, .ci/run)")
    for item in items:
        if "reader_only" in item.keywords:
            item.add_marker(skip)


def launcher(np_: int) -> list[str]:
    """The launcher command line for np_ ranks, oversubscribed, runnable as root
    (the same line mpilens demo uses: mpilens.mpi_env.launcher_line)."""
    return _menv.launcher_line(np_, FLAVOUR)


def mpi_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = _menv.job_env(FLAVOUR, allow_root=True)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    # Open MPI 4.1's UCX one-sided component fails MPI_Win_create intermittently in this
    # container (3 of 6 plain runs, without mpilens); the others are reliable.
    env.setdefault("OMPI_MCA_osc", "sm,rdma,pt2pt")
    if FLAVOUR == "intelmpi":  # one node, no fabric: Intel MPI's shared-memory transport
        env.setdefault("I_MPI_FABRICS", "shm")
        env.setdefault("FI_PROVIDER", "shm")
    if extra:
        env.update(extra)
    return env


def run_mpi(np_: int, argv: list[str], env: dict[str, str] | None = None,
            timeout: float = 180, check: bool = True, cwd: str | Path | None = None
            ) -> subprocess.CompletedProcess:
    """Launch argv on np_ ranks with the selected MPI; returns the completed process
    (returncode 128 + N when killed by signal N).  A job past its timeout is stopped
    with SIGTERM, then SIGKILL, so that no rank is left behind."""
    return run_line(launcher(np_) + [str(a) for a in argv], env, timeout, check, cwd)


def run_line(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 180,
             check: bool = True, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """run_mpi for a complete command line (launcher included)."""
    proc = _menv.run_job(cmd, env=mpi_env(env), capture_output=True, text=True,
                         timeout=timeout, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                             f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
    return proc


def read_profile(path: str | Path) -> tuple[dict, list[dict]]:
    """Header and rank lines of a profile file (JSON Lines), plain or gzip-compressed
    (the default output: docs/profile-format.md, Compression)."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    lines = data.decode().splitlines()
    header = json.loads(lines[0])
    return header, [json.loads(ln) for ln in lines[1:] if ln.strip()]


@pytest.fixture(autouse=True)
def _private_learning_cache(tmp_path_factory: pytest.TempPathFactory,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's jobs get a cache directory of their own (XDG_CACHE_HOME): the
    adaptive Alltoall keeps learning across runs there by default (docs/alltoall.md,
    learning cache), so the suite never touches the user's ~/.cache and no test
    starts from another test's learning."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(scope="session")
def build() -> Path:
    lib = BUILD / "lib" / "libmpilens.so"
    if not lib.exists():
        pytest.fail(f"{lib} missing: run `make build MPI={FLAVOUR}` first (make test does)")
    return BUILD
