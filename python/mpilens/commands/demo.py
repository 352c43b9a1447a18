"""`mpilens demo`: profile the bundled heat-equation example on 4 ranks, print the
report and write the HTML report.

The runtime is found as for every command (docs/install.md); in a source
checkout whose build is missing, it is built first (make build).  The job is
launched with the mpirun/mpiexec of the MPI the runtime was built for, with the
flags that MPI needs here (mpi_env.launcher_line); the command is printed
exactly as it runs, so it can be copied.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from .. import mpi_env, outfile, paths, profiled
from ..cli import command_name
from ..errors import UserError
from ..report import terminal
from ..report.profile import load
from . import html as html_cmd
from .report import add_width

EXAMPLE_ARGS = ["64", "100", "25"]  # N, steps, transpose every (see examples/heat2d.c)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="profile the bundled MPI example and show the reports",
                       description=__doc__)
    p.add_argument("-np", "--ranks", type=int, default=4, help="ranks (default 4)")
    p.add_argument("--fortran", action="store_true",
                   help="run the Fortran example (heat2d_f) instead of the C one")
    p.add_argument("--out-dir", default=None,
                   help="where to write the profile and the HTML report (default "
                        "<build>/demo in a build directory, rewritten on every demo; "
                        "./mpilens-demo with an installed runtime)")
    p.add_argument("--force", action="store_true", help="overwrite files in --out-dir")
    add_width(p)
    p.set_defaults(func=run)


def find_or_build(name: str) -> tuple[paths.Runtime, Path]:
    """The runtime and the example program; in a checkout, `make build` what is missing."""
    try:
        rt = paths.runtime()
        return rt, rt.example(name)
    except UserError:
        src = paths.checkout()
        if src is None:
            raise
    build = paths.build_dir().resolve()
    flavour = mpi_env.detect()
    print(f"mpilens demo: building mpilens for {flavour} in {build}", file=sys.stderr)
    cmd = ["make", "-C", str(src), "_build", f"MPI={flavour}", f"BUILD={build}"]
    if subprocess.run(cmd, check=False).returncode != 0:
        raise UserError(f"the build failed ({' '.join(cmd)}): see the messages above")
    rt = paths.Runtime(build, "build tree")
    return rt, rt.example(name)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.ranks <= 64:
        raise UserError(f"--ranks {args.ranks} is invalid: give 1 to 64 ranks")
    if 64 % args.ranks:
        raise UserError(f"--ranks {args.ranks} is invalid: the example needs a divisor "
                        f"of 64 (1, 2, 4, 8, 16, 32, 64)")
    name = "heat2d_f" if args.fortran else "heat2d"
    rt, example = find_or_build(name)
    if args.out_dir:
        out_dir = Path(args.out_dir)
    else:
        out_dir = rt.root / "demo" if rt.is_build_tree else Path("mpilens-demo")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create {out_dir}: {e.strerror} (give --out-dir)") from None
    # compressed, as the library's default output (plain with MPILENS_COMPRESS=off)
    suffix = ".prof" if profiled.default_output() == profiled.DEFAULT_OUTPUT_PLAIN else ".prof.gz"
    prof_path = (out_dir / f"{name}-{args.ranks}ranks{suffix}").resolve()
    html_path = prof_path.with_name(f"{name}-{args.ranks}ranks.html")
    force = args.force or (args.out_dir is None and rt.is_build_tree)  # <build>/demo: demo only
    for p in (prof_path, html_path):
        outfile.check_output(p, force, "demo output")
    flavour = rt.info().get("mpi") or paths.mpi_flavour()
    command = mpi_env.launcher_line(args.ranks, flavour) + [str(example), *EXAMPLE_ARGS]
    env = mpi_env.job_env(flavour)
    added = [f"{k}={shlex.quote(v)}" for k, v in env.items() if os.environ.get(k) != v]
    print(f"mpilens demo: {' '.join([*added, command_name()])} run --force --output "
          f"{shlex.quote(str(prof_path))} -- {shlex.join(command)}", file=sys.stderr)
    job = profiled.run_profiled(command, str(prof_path), force=True, env=env)
    if job.status != 0 or job.profile is None:
        print(f"mpilens demo: the example failed ({job.why_none()})", file=sys.stderr)
        return job.status or 1
    from ..report.html import histogram_functions  # matplotlib: import only when needed

    prof = load(prof_path)
    hist = histogram_functions(prof)
    terminal.render(prof, top=10, function=hist[0] if hist else None, width=args.width)
    html_cmd.write_html(prof_path, html_path, force=True)
    me = command_name()
    print(f"\nmpilens demo: profile      {prof_path}\n"
          f"mpilens demo: HTML report  {html_path}\n"
          f"mpilens demo: open it with a browser: file://{html_path}\n"
          f"mpilens demo: again, by hand: {me} report {shlex.quote(str(prof_path))}")
    return 0
