"""`mpilens demo`: build what is missing, profile the bundled heat-equation example
on 4 ranks, print the report and write the HTML report.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .. import paths
from ..report import terminal
from ..errors import UserError
from ..report.profile import load
from . import html as html_cmd
from . import run as run_cmd

NEEDED = ("lib/libmpilens.so", "bin/mpilens-exec", "examples/heat2d", "examples/heat2d_f")
EXAMPLE_ARGS = ["64", "100", "25"]  # N, steps, transpose every (see examples/heat2d.c)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="profile the bundled MPI example and show the reports",
                       description=__doc__)
    p.add_argument("-np", "--ranks", type=int, default=4, help="ranks (default 4)")
    p.add_argument("--fortran", action="store_true",
                   help="run the Fortran example (heat2d_f) instead of the C one")
    p.add_argument("--out-dir", default=None,
                   help="where to write the profile and the HTML report "
                        "(default <build>/demo, rewritten on every demo)")
    p.add_argument("--force", action="store_true", help="overwrite files in --out-dir")
    p.set_defaults(func=run)


def ensure_built(build: Path, flavour: str) -> None:
    """Run `make build` (or cmake) for this MPI when an artifact is missing."""
    missing = [rel for rel in NEEDED if not (build / rel).exists()]
    if not missing:
        return
    print(f"mpilens demo: building ({', '.join(missing)} missing) in {build}", file=sys.stderr)
    if (paths.REPO / "Makefile").exists() and shutil.which("make"):
        cmd = ["make", "-C", str(paths.REPO), "build", f"MPI={flavour}", f"BUILD={build}"]
    else:
        cc, fc = {"openmpi": ("mpicc.openmpi", "mpifort.openmpi"),
                  "mpich": ("mpicc.mpich", "mpifort.mpich")}.get(flavour, ("mpicc", "mpifort"))
        script = (f"cmake -S '{paths.REPO}' -B '{build}' -DCMAKE_C_COMPILER={cc} "
                  f"-DCMAKE_Fortran_COMPILER={fc} && cmake --build '{build}' -j 2")
        cmd = ["sh", "-c", script]
    if subprocess.run(cmd, check=False).returncode != 0:
        raise UserError(f"the build failed ({' '.join(cmd)}): see the messages above")
    still = [rel for rel in NEEDED if not (build / rel).exists()]
    if still:
        raise UserError(f"the build did not produce {', '.join(still)} in {build}")


def launcher_line(flavour: str, ranks: int) -> list[str]:
    """mpirun/mpiexec of the selected MPI, allowed to oversubscribe and to run as root."""
    if flavour == "openmpi":
        prog = shutil.which("mpirun.openmpi") or "mpirun"
        extra = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        return [prog, *extra, "-np", str(ranks)]
    prog = shutil.which("mpiexec.mpich") if flavour == "mpich" else None
    return [prog or "mpiexec", "-n", str(ranks)]


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.ranks <= 64:
        raise UserError(f"--ranks {args.ranks} is invalid: give 1 to 64 ranks")
    if 64 % args.ranks:
        raise UserError(f"--ranks {args.ranks} is invalid: the example needs a divisor "
                        f"of 64 (1, 2, 4, 8, 16, 32, 64)")
    flavour, build = paths.mpi_flavour(), paths.build_dir().resolve()
    ensure_built(build, flavour)
    name = "heat2d_f" if args.fortran else "heat2d"
    out_dir = Path(args.out_dir) if args.out_dir else build / "demo"
    out_dir.mkdir(parents=True, exist_ok=True)
    prof_path = out_dir / f"{name}-{args.ranks}ranks.prof"
    html_path = prof_path.with_suffix(".html")
    force = args.force or args.out_dir is None  # <build>/demo holds only demo output
    for p in (prof_path, html_path):
        if p.exists() and not force:
            raise UserError(f"{p} exists: choose another --out-dir or add --force")
    os.environ.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    command = launcher_line(flavour, args.ranks) + [str(build / "examples" / name),
                                                    *EXAMPLE_ARGS]
    print(f"mpilens demo: mpilens run --output {prof_path} -- {' '.join(command)}",
          file=sys.stderr)
    rc = run_cmd.run(argparse.Namespace(output=str(prof_path), force=True, env=[],
                                        launcher=None, quiet=True, command=command))
    if rc != 0:
        print(f"mpilens demo: the example failed (exit status {rc})", file=sys.stderr)
        return rc
    from ..report.html import histogram_functions  # matplotlib: import only when needed

    prof = load(prof_path)
    hist = histogram_functions(prof)
    terminal.render(prof, top=10, function=hist[0] if hist else None)
    html_cmd.write_html(prof_path, html_path, force=True)
    print(f"\nmpilens demo: profile      {prof_path}\n"
          f"mpilens demo: HTML report  {html_path}\n"
          f"mpilens demo: open it with a browser: file://{html_path}")
    return 0
