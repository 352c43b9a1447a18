"""Launch `mpilens-bench FAMILY ...` under an MPI launcher with a progress bar.

The C program writes its JSON document to a temporary file (--out) and reports
progress on stderr as `MLB-PROGRESS <done> <total>` lines (--progress).  A bad
option makes it print one line `mpilens-bench: <what was wrong>` and exit 2:
that line becomes a UserError here (the launcher's own banners are dropped).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from .. import paths
from ..errors import UserError

PROGRESS = "MLB-PROGRESS "
ERROR = "mpilens-bench: "


class BenchFailed(Exception):
    """The benchmark job crashed or produced no result (not the user's input)."""


def default_launcher(np_: int) -> list[str]:
    """The launcher of the MPI mpilens was built with, for np_ ranks on this host."""
    flavour = paths.mpi_flavour()
    if flavour == "openmpi" and shutil.which("mpirun.openmpi"):
        cmd = ["mpirun.openmpi", "--oversubscribe"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        return cmd + ["-np", str(np_)]
    if flavour == "mpich" and shutil.which("mpiexec.mpich"):
        return ["mpiexec.mpich", "-n", str(np_)]
    for prog in ("mpiexec", "mpirun"):
        if shutil.which(prog):
            return [prog, "-n", str(np_)]
    raise UserError("no MPI launcher found: give one after --, e.g. -- mpirun -np 2")


def launcher_for(user: list[str], np_: int) -> list[str]:
    """The user's launcher line ('{np}' replaced by np_) or the default one."""
    if not user:
        return default_launcher(np_)
    return [a.replace("{np}", str(np_)) for a in user]


def run_bench(launcher: list[str], family: str, options: list[str], *,
              progress: bool = True, label: str = "", timeout: float | None = None
              ) -> dict[str, Any]:
    """Run mpilens-bench and return its JSON document.

    The overhead family runs under the profiler (mpilens-exec prefix); its
    profile goes to a temporary file unless MPILENS_OUTPUT is set."""
    exe = paths.artifact("bin/mpilens-bench")
    with tempfile.TemporaryDirectory(prefix="mpilens-bench-") as tmp:
        out = Path(tmp) / "result.json"
        prefix = [str(paths.artifact("bin/mpilens-exec"))] if family == "overhead" else []
        cmd = [*launcher, *prefix, str(exe), family, *options, "--out", str(out), "--progress"]
        env = dict(os.environ)
        if prefix:
            env.setdefault("MPILENS_OUTPUT", str(Path(tmp) / "overhead.prof"))
        if os.geteuid() == 0:
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True, env=env)
        except FileNotFoundError:
            raise UserError(f"launcher '{launcher[0]}' not found") from None
        other: list[str] = []
        console = Console(stderr=True)
        bar = Progress(TextColumn(f"[bold]{family}[/] {label}"), BarColumn(),
                       TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                       console=console, transient=True, disable=not progress)
        assert proc.stderr is not None
        with bar:
            task = bar.add_task(family, total=None)
            for line in proc.stderr:
                if line.startswith(PROGRESS):
                    done, total = (int(v) for v in line.split()[1:3])
                    bar.update(task, completed=done, total=total)
                else:
                    other.append(line)
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise UserError(f"benchmark did not finish within {timeout} s") from None
        usage = [ln[len(ERROR):].strip() for ln in other if ln.startswith(ERROR)]
        if rc == 2 and usage:
            raise UserError(usage[0])
        if rc not in (0, 1) or not out.exists():
            sys.stderr.write("".join(other[-40:]))
            raise BenchFailed(f"{' '.join(cmd)} failed with exit status {rc}")
        for ln in other:        # warnings the program printed on success
            sys.stderr.write(ln)
        doc: dict[str, Any] = json.loads(out.read_text())
        return doc
