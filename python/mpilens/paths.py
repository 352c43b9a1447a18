"""Locate the built runtime (libmpilens.so, mpilens-exec, mpilens-bench, examples)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import UserError

REPO = Path(__file__).resolve().parents[2]


def mpi_flavour() -> str:
    """The MPI the user selected (MPILENS_MPI), else guessed from the default mpicc."""
    flav = os.environ.get("MPILENS_MPI")
    if flav:
        return flav
    mpicc = shutil.which("mpicc")
    if mpicc:
        real = os.path.realpath(mpicc)
        if "openmpi" in real or os.path.basename(real) == "opal_wrapper":
            return "openmpi"
        if "mpich" in real:
            return "mpich"
    # the Makefile's default order (MPI ?= openmpi if mpicc.openmpi exists, else mpich)
    for name in ("openmpi", "mpich"):
        if shutil.which(f"mpicc.{name}"):
            return name
    return "default"


def build_dir() -> Path:
    """Build directory: MPILENS_BUILD, else <repo>/build/<flavour>."""
    env = os.environ.get("MPILENS_BUILD")
    return Path(env) if env else REPO / "build" / mpi_flavour()


def artifact(rel: str) -> Path:
    """Path of a built artifact such as 'lib/libmpilens.so' or 'bin/mpilens-exec'."""
    p = build_dir() / rel
    if not p.exists():
        raise UserError(f"{p} not found: build mpilens first (make build MPI={mpi_flavour()})")
    return p
