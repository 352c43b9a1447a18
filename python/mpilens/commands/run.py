"""`mpilens run [options] -- <launcher> <launcher args> <app> <args>`: run under the profiler.

Inserts mpilens-exec before the application (mpirun/mpiexec of Open MPI or
MPICH hydra, srun; anything else is run as a single process), runs the job with
the application's own stdout/stderr, then says where the profile went.  The exit
status is the job's own.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import launch, paths
from ..report import analysis
from ..errors import UserError
from ..report.profile import load
from ..units import fmt_pct, fmt_time

DEFAULT_OUTPUT = "mpilens-%j.prof"
_PLACEHOLDER = re.compile(r"%[jtp]")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run an MPI job under the profiler",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default=None,
                   help=f"profile path (MPILENS_OUTPUT; %%j job id, %%t time, %%p pid of "
                        f"rank 0; default {DEFAULT_OUTPUT})")
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
    p.set_defaults(func=run)


def _profiler_env(args: argparse.Namespace) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in args.env:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"MPILENS_[A-Z0-9_]+", name):
            raise UserError(f"--env '{item}' is invalid: expected MPILENS_NAME=VALUE")
        env[name] = value
    output = args.output or os.environ.get("MPILENS_OUTPUT") or DEFAULT_OUTPUT
    if not _PLACEHOLDER.search(output) and Path(output).exists():
        if not args.force:
            raise UserError(f"{output} exists: choose another --output or add --force "
                            f"to overwrite it")
        # The library never overwrites (it would write OUTPUT.1): --force is the user's
        # explicit request, so the old profile goes before the job starts.
        try:
            Path(output).unlink()
        except OSError as e:
            raise UserError(f"--force: cannot remove the old profile {output}: "
                            f"{e.strerror}") from None
    env["MPILENS_OUTPUT"] = output
    return env


def find_profile(pattern: str, since: float) -> Path | None:
    """The newest file matching the output pattern written after `since`."""
    if not _PLACEHOLDER.search(pattern):
        p = Path(pattern)
        return p if p.exists() and p.stat().st_mtime >= since - 1 else None
    found = [Path(f) for f in glob.glob(glob.escape(pattern).replace("%j", "*")
                                        .replace("%t", "*").replace("%p", "*"))]
    found = [f for f in found if ".tmp-" not in f.name and f.stat().st_mtime >= since - 1]
    return max(found, key=lambda f: f.stat().st_mtime) if found else None


def print_summary(path: Path) -> None:
    prof = load(path)
    s = analysis.summary(prof)
    rows = analysis.function_rows(prof)[:3]
    top = ", ".join(f"{r['function']} {fmt_pct(r['pct_mpi'])}" for r in rows)
    print(f"mpilens: profile {path}: {s['nranks']} ranks, wall {fmt_time(s['wall_s']['max'])}, "
          f"MPI {fmt_pct(s['mpi_pct']['mean'])} of wall time (mean over ranks); "
          f"top: {top}", file=sys.stderr)
    if s["caution_functions"]:
        print(f"mpilens: caution (mean time near the profiler overhead): "
              f"{', '.join(s['caution_functions'])}", file=sys.stderr)
    print(f"mpilens: see it with: mpilens report {path}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command or not command[0].strip():
        raise UserError("nothing to run: give the launcher line after --, "
                        "e.g. mpilens run -- mpirun -np 4 ./app")
    if shutil.which(command[0]) is None:
        raise UserError(f"{command[0]}: command not found")
    penv = _profiler_env(args)
    exec_path = str(paths.artifact("bin/mpilens-exec").resolve())
    wrapped = launch.wrap(command, exec_path, sorted(penv), args.launcher)
    env = dict(os.environ)
    env.update(penv)
    start = time.time()
    try:
        proc = subprocess.run(wrapped.argv, check=False, env=env)
    except FileNotFoundError:
        raise UserError(f"{wrapped.argv[0]}: command not found") from None
    except PermissionError:
        raise UserError(f"{wrapped.argv[0]}: permission denied") from None
    rc = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    profile = find_profile(penv["MPILENS_OUTPUT"], start)
    if profile is None:
        why = f"the job exited with status {rc}" if rc else "the job exited normally"
        if proc.returncode < 0:
            why = f"the job was killed by {signal.Signals(-proc.returncode).name}"
        print(f"mpilens: no profile found at {penv['MPILENS_OUTPUT']} ({why}; "
              f"a profile is written at MPI_Finalize)", file=sys.stderr)
        return rc if rc else 1
    try:
        if args.quiet:
            load(profile)  # still say so when the profile is unusable
            print(f"mpilens: profile {profile}", file=sys.stderr)
        else:
            print_summary(profile)
    except UserError as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return rc if rc else 1
    return rc
