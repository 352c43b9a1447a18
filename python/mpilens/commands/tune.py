"""`mpilens tune --output FILE [--np N] [--sizes ...] [-- launcher]`: build the
Alltoall tuning file offline.

For each rank count and block size, the engine learns with all eight candidates (the seven
algorithms and the MPI's own)
(no model pruning) on MPI_COMM_WORLD and the choices are merged into FILE
(existing entries for other machines, rank counts or sizes are kept).  A run
with MPILENS_ALLTOALL=adaptive MPILENS_TUNING_FILE=FILE then starts directly in
the Running phase for matching calls.  See docs/alltoall.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import paths
from ..bench.alltoall import DEFAULT_SIZES, parse_ints, parse_size
from ..bench.launch import launcher_for, run_program
from ..errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="build the Alltoall tuning file by a sweep",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output", "-o", type=Path, required=True, help="tuning file to create or update")
    p.add_argument("--np", default="4", help="rank counts, one run each (default 4)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"block sizes (default {DEFAULT_SIZES})")
    p.add_argument("--learn", type=int, default=20, help="learning calls per algorithm (default 20)")
    p.add_argument("launcher", nargs=argparse.REMAINDER,
                   help="-- and the launcher line, '{np}' replaced by the rank count")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    user = list(args.launcher)
    if user and user[0] == "--":
        user = user[1:]
    nps = parse_ints(args.np, "--np")
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if args.learn < 1:
        raise UserError(f"--learn {args.learn} is invalid: expected a positive integer")
    out = args.output.resolve()
    if not out.parent.is_dir():
        raise UserError(f"--output {args.output}: directory {out.parent} does not exist")
    exe = paths.artifact("bin/mpilens-bench-alltoall")
    for np_ in nps:
        proc = run_program(launcher_for(user, np_),
                           [str(exe), "--sizes", ",".join(map(str, sizes)), "--calls", "1",
                            "--learn", str(args.learn), "--tune", str(out)])
        for line in proc.stderr.splitlines():
            if line.startswith(("mpilens: ", "mpilens-bench-alltoall: ")):
                raise UserError(line.split(": ", 1)[1])
        start = proc.stdout.find("[")
        if proc.returncode != 0 or start < 0:
            raise UserError(f"tuning run failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        for r in json.loads(proc.stdout[start:]):
            print(f"{np_} ranks  {r['bytes']:>8} B  {r['algorithm']}")
    print(f"tuning file: {out}")
    return 0
