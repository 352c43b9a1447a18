"""Which build of a checkout the CLI uses (paths.build_dir, docs/install.md): the MPI
MPILENS_MPI names; else the MPI of the launcher line the command runs
(`mpiexec.mpich ...` -> build/mpich); else the MPI whose mpirun is first on PATH;
else the only build present; else one line naming the builds and how to choose.

The selection is checked on checkout trees laid out in tmp_path (the files the
lookup looks for); one real job checks the end result: `mpilens run --
mpiexec.mpich ...` with both MPIs built and no MPILENS_* variable set profiles the
job with the MPICH build (a library of the other MPI would crash in MPI_Init)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FLAVOUR, REPO, read_profile
from mpilens import mpi_env, paths
from mpilens.errors import UserError

LAUNCHERS = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A checkout with the builds given to make(...) (their mpilens-exec only)."""
    for var in ("MPILENS_MPI", "MPILENS_BUILD", "MPILENS_PREFIX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(paths, "REPO", tmp_path)
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "mpilens-exec.in").touch()
    monkeypatch.setattr(paths, "_launcher_mpi", None)

    def make(*flavours: str) -> Path:
        for f in flavours:
            exe = tmp_path / "build" / f / paths.EXEC
            exe.parent.mkdir(parents=True, exist_ok=True)
            exe.touch()
        return tmp_path
    return make


# justified: choosing between two MPIs' builds can only be shown where both launchers exist
needs_both = pytest.mark.skipif(
    not all(shutil.which(p) for p in LAUNCHERS.values()),
    reason="needs the Debian launchers of both Open MPI and MPICH (mpirun.openmpi, "
           "mpiexec.mpich); Intel MPI's CI image has them too")


@needs_both
def test_the_launcher_names_the_build(tree, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tree("openmpi", "mpich")
    for flavour, prog in LAUNCHERS.items():
        assert paths.use_launcher([prog, "-n", "2", "./app"]) == flavour
        assert paths.build_dir() == repo / "build" / flavour
    # an application is never asked (--version) what it is: no launcher, no preference
    assert paths.use_launcher(["./app", "x"]) is None
    # MPILENS_MPI wins over the launcher line (the runtime then says they differ)
    paths.use_launcher([LAUNCHERS["mpich"]])
    monkeypatch.setenv("MPILENS_MPI", "openmpi")
    assert paths.build_dir() == repo / "build" / "openmpi"


def test_first_on_path_else_the_only_build(tree) -> None:
    first = mpi_env.detect()
    other = "mpich" if first != "mpich" else "openmpi"
    repo = tree(other)  # only the build of the MPI that is not first on PATH
    assert paths.build_dir() == repo / "build" / other
    assert paths.runtime().root == repo / "build" / other
    tree(first)  # both: the first on PATH
    assert paths.build_dir() == repo / "build" / first


def test_several_builds_none_chosen(tree) -> None:
    first = mpi_env.detect()
    others = [f for f in mpi_env.FLAVOURS if f != first][:2]
    tree(*others)
    with pytest.raises(UserError) as e:
        paths.runtime()
    msg = str(e.value)
    assert f"no build of mpilens for {first}" in msg
    for f in others:
        assert f"build/{f}" in msg and f"MPILENS_MPI={f}" in msg
    assert f"make build MPI={first}" in msg


@needs_both
# justified: the real job needs both builds, which exist only in the last MPI's pass
@pytest.mark.skipif(FLAVOUR != "mpich", reason="one real job is enough: run under MPICH's "
                    "pass, when the CI has built both MPIs")
def test_run_with_mpiexec_mpich_uses_the_mpich_build(tmp_path: Path) -> None:
    builds = {f: REPO / "build" / f for f in LAUNCHERS}
    if not all((b / paths.EXEC).exists() for b in builds.values()):
        # justified: make test builds one MPI at a time; the check runs once both builds exist
        pytest.skip("needs build/openmpi and build/mpich in this checkout (make test builds "
                    "each MPI's in turn; this runs once both exist)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPILENS_")}
    env["PYTHONPATH"] = str(REPO / "python")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not (Path(p) / "mpilens-exec").exists())
    app = builds["mpich"] / "examples" / "heat2d"
    proc = subprocess.run([sys.executable, "-m", "mpilens.cli", "run", "--", "mpiexec.mpich",
                           "-n", "2", str(app), "16", "4", "2"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (prof,) = tmp_path.glob("mpilens-*.prof.gz")  # the default output: compressed
    header, ranks = read_profile(prof)
    assert len(ranks) == 2 and header["nranks"] == 2 and header["mpi_flavour"] == "mpich"
    assert header["functions"]["MPI_Alltoall"]["calls"] == 2 * 2
