"""`mpilens run [options] -- <launcher> <launcher args> <app> <args>`: run under
the profiler.

Inserts mpilens-exec before the application (mpirun/mpiexec of Open MPI or
MPICH hydra, srun; anything else is run as a single process), runs the job with
the application's own stdout/stderr, then says where the profile went.  The exit
status is the job's own; SIGTERM, SIGINT, SIGHUP, SIGUSR1/2, SIGQUIT, SIGCONT
and SIGTSTP are passed on to the launcher.
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import os
import sys
from pathlib import Path

from .. import launch, profiled
from ..cli import command_name
from ..errors import UserError
from ..report import analysis
from ..report.profile import load
from ..units import fmt_pct, fmt_time

DEFAULT_OUTPUT = profiled.DEFAULT_OUTPUT
DEFAULT_OUTPUT_PLAIN = profiled.DEFAULT_OUTPUT_PLAIN


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run an MPI job under the profiler",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default=None,
                   help=f"profile path (MPILENS_OUTPUT; %%j job id, %%t time, %%p pid of "
                        f"rank 0; default {DEFAULT_OUTPUT.replace('%', '%%')}, gzip-compressed; "
                        f"{DEFAULT_OUTPUT_PLAIN.replace('%', '%%')} with MPILENS_COMPRESS=off)")
    p.add_argument("--force", action="store_true",
                   help="allow overwriting an existing profile at --output")
    p.add_argument("-e", "--env", action="append", default=[], metavar="MPILENS_VAR=VALUE",
                   help="set a profiler variable for the job (repeatable; see "
                        "docs/configuration.md)")
    p.add_argument("--launcher", choices=launch.KINDS, default=None,
                   help="the launcher's option syntax when its name does not tell "
                        "(a wrapper script around mpirun, ...)")
    p.add_argument("--quiet", action="store_true", help="no summary after the run")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="launcher line: mpirun -np 4 ./app args (after --)")
    p.set_defaults(func=run, remainder="command")


def print_summary(path: Path) -> None:
    prof = load(path)
    s = analysis.summary(prof)
    rows = analysis.function_rows(prof)[:3]
    top = ", ".join(f"{r['function']} {fmt_pct(r['mpi_pct'])}" for r in rows)
    print(f"mpilens: profile {path}: {s['nranks']} ranks, wall {fmt_time(s['wall_s']['max'])}, "
          f"MPI {fmt_pct(s['mpi_pct']['mean'])} of wall time (mean over ranks); "
          f"top: {top}", file=sys.stderr)
    if s["caution_functions"]:
        print(f"mpilens: caution (mean time near the profiler overhead): "
              f"{', '.join(s['caution_functions'])}", file=sys.stderr)
    print(f"mpilens: see it with: {command_name()} report {path}", file=sys.stderr)


def settings_from(items: list[str]) -> dict[str, str]:
    """--env MPILENS_VAR=VALUE items as a dict; one line for a malformed item."""
    env: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not profiled.SETTING.fullmatch(name):
            raise UserError(f"--env '{item}' is invalid: expected MPILENS_NAME=VALUE")
        env[name] = value
    return env


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    settings = settings_from(args.env)
    output = args.output or os.environ.get("MPILENS_OUTPUT") or profiled.default_output(settings)
    job = profiled.run_profiled(command, output, settings=settings,
                                force=args.force, launcher_kind=args.launcher)
    rc = job.status
    if job.profile is None:
        if job.told:  # rank 0 said why (its own line above says it too)
            print(f"mpilens: no profile: {job.why_none()}", file=sys.stderr)
        else:
            print(f"mpilens: no profile ({job.why_none()}; rank 0 did not say it wrote one: "
                  f"a profile is written at MPI_Finalize)", file=sys.stderr)
        if job.partial:
            print(f"mpilens: the ranks left a partial profile: see it with: {command_name()} "
                  f"report {job.partial}", file=sys.stderr)
        return rc
    wanted = Path(output).resolve()
    if not fnmatch.fnmatchcase(str(job.profile.resolve()),
                               profiled.PLACEHOLDER.sub("*", glob.escape(str(wanted)))):
        print(f"mpilens: the profile is {job.profile}, not {output} (the runtime's line above "
              f"says why)", file=sys.stderr)
    elif job.profile.parent == wanted.parent:  # where asked: named as the output was
        job.profile = Path(output).parent / job.profile.name
    try:
        if args.quiet:
            load(job.profile)  # still say so when the profile is unusable
            print(f"mpilens: profile {job.profile}", file=sys.stderr)
        else:
            print_summary(job.profile)
    except UserError as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return rc
    return rc
