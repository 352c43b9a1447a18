"""Find the mpilens runtime: libmpilens.so, mpilens-exec, the benchmarks, the examples.

Lookup order (docs/install.md):
1. ``MPILENS_PREFIX``: an install prefix (``cmake --install ... --prefix P``, or a
   modulefile that sets it) or a build directory;
2. the prefix of the ``P/bin/mpilens`` this command was started from (it sets
   ``_MPILENS_LAUNCHER``; a prefix moved elsewhere still finds itself);
3. the ``mpilens-exec`` first on ``PATH``: its ``bin/`` directory's parent;
4. the build tree of this checkout: ``MPILENS_BUILD``, else
   ``<checkout>/build/<mpi>`` for: the MPI ``MPILENS_MPI`` names; else the MPI
   of the launcher line the command runs (``mpiexec.mpich ...``: set with
   ``use_launcher``); else the MPI whose mpirun/mpiexec is first on ``PATH``;
   else the only build present.  With several builds and none of these, the
   message names the builds and how to choose.

A prefix and a build directory share one layout: ``lib/libmpilens.so``,
``bin/mpilens-exec``, ``bin/mpilens-bench*``, ``share/mpilens/runtime.json``
(version and MPI of the build); the example programs are in ``examples/`` of a
build directory and ``libexec/mpilens/`` of a prefix.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import mpi_env
from .errors import UserError
from .launch import launcher_kind

REPO = Path(__file__).resolve().parents[2]
EXEC = "bin/mpilens-exec"
LAUNCHER_VAR = "_MPILENS_LAUNCHER"  # set by P/bin/mpilens to its own path


def checkout() -> Path | None:
    """The source checkout this package runs from, None for an installed package."""
    return REPO if (REPO / "runtime" / "mpilens-exec.in").exists() else None


@dataclass(frozen=True)
class Runtime:
    root: Path    # prefix or build directory
    found_by: str  # "MPILENS_PREFIX", "PATH", "MPILENS_BUILD", "build tree"

    def path(self, rel: str) -> Path:
        """A file of the runtime ('lib/libmpilens.so', 'bin/mpilens-bench'); one line if missing."""
        p = self.root / rel
        if not p.exists():
            raise UserError(f"{p} not found: the mpilens runtime at {self.root} "
                            f"(found by {self.found_by}) is incomplete; {_HOW}")
        return p

    def example(self, name: str) -> Path:
        for rel in (f"examples/{name}", f"libexec/mpilens/{name}"):
            if (self.root / rel).exists():
                return self.root / rel
        raise UserError(f"example program {name} not found in {self.root}/examples or "
                        f"{self.root}/libexec/mpilens (found by {self.found_by}); {_HOW}")

    def info(self) -> dict[str, Any]:
        """share/mpilens/runtime.json: {"version", "mpi", "mpi_library"}; {} if unreadable."""
        try:
            doc = json.loads((self.root / "share/mpilens/runtime.json").read_text())
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    @property
    def is_build_tree(self) -> bool:
        return (self.root / "CMakeCache.txt").exists()


_HOW = ("set MPILENS_PREFIX to the prefix mpilens was installed to, put its bin/ on PATH, "
        "or build it in the checkout (make build)")


# The MPI the launcher line of the running command names (use_launcher), if any.
_launcher_mpi: str | None = None


def use_launcher(argv: list[str]) -> str | None:
    """Prefer the build of the MPI this launcher line names (mpiexec.mpich, an mpirun of
    Open MPI, ...) for the rest of this command; returns that MPI, None if it names none.
    Only launchers are asked (an application is never run to find out)."""
    global _launcher_mpi
    prog = argv[0] if argv else ""
    kind = launcher_kind(prog) if prog else None
    _launcher_mpi = mpi_env.flavour_of(prog) if kind not in (None, "srun") else None
    return _launcher_mpi


def builds_present() -> list[str]:
    """The MPIs this checkout has a build of (build/<mpi>/bin/mpilens-exec)."""
    return [f for f in mpi_env.FLAVOURS if (REPO / "build" / f / EXEC).exists()]


def build_dir() -> Path:
    """This checkout's build directory for the selected MPI (MPILENS_BUILD overrides;
    the order is the module's docstring's)."""
    env = os.environ.get("MPILENS_BUILD")
    if env:
        return Path(env)
    if os.environ.get("MPILENS_MPI"):
        return REPO / "build" / mpi_env.detect()
    if _launcher_mpi:
        return REPO / "build" / _launcher_mpi
    first = mpi_env.detect()
    present = builds_present()
    if first in present or len(present) != 1:
        return REPO / "build" / first
    return REPO / "build" / present[0]


def launcher_prefix() -> Path | None:
    """The prefix whose bin/mpilens (cmake/mpilens-launcher.sh) started this command."""
    script = os.environ.get(LAUNCHER_VAR)
    return Path(script).resolve().parent.parent if script else None


def runtime() -> Runtime:
    """The runtime in lookup order; one line saying what to set when there is none."""
    pre = os.environ.get("MPILENS_PREFIX")
    if pre:
        root = Path(pre).expanduser()
        if not (root / EXEC).exists():
            raise UserError(f"MPILENS_PREFIX='{pre}' is invalid: {root / EXEC} not found "
                            f"(expected the prefix mpilens was installed to, or a build "
                            f"directory)")
        return Runtime(root.resolve(), "MPILENS_PREFIX")
    own = launcher_prefix()
    if own is not None and (own / EXEC).exists():
        return Runtime(own, "the prefix of the mpilens command")
    on_path = shutil.which("mpilens-exec")
    if on_path:
        return Runtime(Path(on_path).resolve().parent.parent, "PATH")
    if os.environ.get("MPILENS_BUILD"):
        return Runtime(build_dir(), "MPILENS_BUILD")
    if checkout() is not None:
        b = build_dir()
        if (b / EXEC).exists():
            return Runtime(b, "build tree")
        present = builds_present()
        if present:
            which = ", ".join(f"build/{f}" for f in present)
            raise UserError(
                f"no build of mpilens for {b.name} in {REPO}/build (there is {which}): "
                f"choose one with MPILENS_MPI={' or MPILENS_MPI='.join(present)}, or "
                f"build it (make build MPI={b.name})")
    raise UserError(f"the mpilens runtime (libmpilens.so, mpilens-exec) was not found: {_HOW}")


def artifact(rel: str) -> Path:
    """Path of a runtime file such as 'lib/libmpilens.so' or 'bin/mpilens-exec'."""
    return runtime().path(rel)


def mpi_flavour() -> str:
    """The MPI jobs are launched with: the runtime's own (runtime.json) when one is
    found, else the one selected on this machine (mpi_env.detect)."""
    try:
        flav = runtime().info().get("mpi")
    except UserError:
        flav = None
    if flav in mpi_env.FLAVOURS and not os.environ.get("MPILENS_MPI"):
        return str(flav)
    return mpi_env.detect()
