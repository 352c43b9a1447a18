"""Find the mpilens runtime: libmpilens.so, mpilens-exec, the benchmarks, the examples.

Lookup order (docs/install.md):
1. ``MPILENS_PREFIX``: an install prefix (``cmake --install ... --prefix P``, or a
   modulefile that sets it) or a build directory;
2. the ``mpilens-exec`` first on ``PATH``: its ``bin/`` directory's parent;
3. the build tree of this checkout: ``MPILENS_BUILD``, else
   ``<checkout>/build/<mpi>`` for the MPI selected (mpi_env.detect).

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

REPO = Path(__file__).resolve().parents[2]
EXEC = "bin/mpilens-exec"


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


def build_dir() -> Path:
    """This checkout's build directory for the selected MPI (MPILENS_BUILD overrides)."""
    env = os.environ.get("MPILENS_BUILD")
    if env:
        return Path(env)
    return REPO / "build" / mpi_env.detect()


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
    on_path = shutil.which("mpilens-exec")
    if on_path:
        return Runtime(Path(on_path).resolve().parent.parent, "PATH")
    if os.environ.get("MPILENS_BUILD"):
        return Runtime(build_dir(), "MPILENS_BUILD")
    if checkout() is not None:
        b = build_dir()
        if (b / EXEC).exists():
            return Runtime(b, "build tree")
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
