"""`mpilens tune [--from PROFILE | --np N --sizes ...] [--output FILE] [--cache
PATH|off] [-- launcher]`: learn the Alltoall choices offline, so that production
runs start in Running.

For each rank count and block size, the engine learns with all eight candidates
(the seven algorithms and the MPI's own, no model pruning, no race) on
MPI_COMM_WORLD.  The choices go into the learning cache that every adaptive run
reads (default $XDG_CACHE_HOME/mpilens/tuning-<machine>.json; --cache PATH or
MPILENS_ALLTOALL_CACHE elsewhere) and, with --output, into the tuning file FILE
(existing entries for other machines, rank counts or sizes are kept;
MPILENS_TUNING_FILE=FILE reads it).

--from PROFILE sweeps what a profile shows: its adaptive Alltoall records
(communicator size and block size), or else MPI_Alltoall's message-size
histogram (one size per power-of-two class, the job's rank count).  The sweep
runs on this node with the launcher: its entries are keyed by ranks per node =
rank count.  See docs/alltoall.md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from .. import outfile, paths
from ..bench.alltoall import DEFAULT_SIZES, parse_ints, parse_size
from ..bench.launch import launcher_for, run_program
from ..errors import UserError
from ..report import profile as profile_mod


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="learn the Alltoall choices offline (cache, tuning file)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="source", type=Path, metavar="PROFILE",
                   help="sweep the rank counts and block sizes this profile shows")
    p.add_argument("--output", "-o", type=Path, help="tuning file to create or update as well")
    p.add_argument("--cache", help="learning cache to fill (a path, or off; default: the "
                                   "engine's, $XDG_CACHE_HOME/mpilens/tuning-<machine>.json)")
    p.add_argument("--np", help="rank counts, one run each (default 4)")
    p.add_argument("--sizes", help=f"block sizes (default {DEFAULT_SIZES})")
    p.add_argument("--learn", type=int, default=20, help="learning calls per algorithm (default 20)")
    p.add_argument("launcher", nargs=argparse.REMAINDER,
                   help="-- and the launcher line, '{np}' replaced by the rank count")
    p.set_defaults(func=run, remainder="launcher")


def sweep_from_profile(path: Path) -> dict[int, list[int]]:
    """Rank count -> block sizes that the profile at path shows for MPI_Alltoall."""
    prof = profile_mod.load(path)
    out: dict[int, set[int]] = {}
    for rec in prof.header.get("alltoall", []):
        if int(rec["bytes"]) > 0 and int(rec["comm_size"]) > 1:
            out.setdefault(int(rec["comm_size"]), set()).add(int(rec["bytes"]))
    fn = prof.functions.get("MPI_Alltoall")
    if not out and fn and prof.nranks > 1:
        # message-size class k >= 1 holds [2^(k-1), 2^k): the cache's key is the class
        sizes = {1 << (k - 1) for k, n in enumerate(fn.get("hist_send", [])) if n and k >= 1}
        if sizes:
            out[prof.nranks] = sizes
    if not out:
        raise UserError(f"--from {path}: the profile shows no MPI_Alltoall with more than one "
                        "rank and non-empty blocks: nothing to tune")
    return {np_: sorted(s) for np_, s in sorted(out.items())}


def run(args: argparse.Namespace) -> int:
    user = list(args.launcher)
    if user and user[0] == "--":
        user = user[1:]
    if args.learn < 1:
        raise UserError(f"--learn {args.learn} is invalid: expected a positive integer")
    if args.source is not None:
        if args.np is not None or args.sizes is not None:
            raise UserError("--from PROFILE takes the rank counts and sizes from the profile: "
                            "give either --from or --np/--sizes")
        plan = sweep_from_profile(args.source)
    else:
        sizes = [parse_size(s) for s in (args.sizes or DEFAULT_SIZES).split(",") if s.strip()]
        plan = {np_: sizes for np_ in parse_ints(args.np or "4", "--np")}
    if args.cache is not None and not args.cache.strip():
        raise UserError("--cache '' is invalid: expected a file path, or off")
    if args.cache == "off" and args.output is None:
        raise UserError("--cache off without --output: the sweep would be written nowhere")
    outfile.check_output(args.output, True, "--output")  # a tuning file is updated: no --force
    out = args.output.resolve() if args.output else None
    if args.cache not in (None, "off"):
        outfile.check_output(Path(args.cache), True, "--cache")
    env = {"MPILENS_ALLTOALL_CACHE": args.cache} if args.cache else None
    paths.use_launcher(user)
    exe = paths.artifact("bin/mpilens-bench-alltoall")
    cache = None
    with tempfile.TemporaryDirectory(prefix="mpilens-tune-") as tmp:
        tune_file = out or Path(tmp) / "discard.tune"
        for np_, sizes in plan.items():
            proc = run_program(launcher_for(user, np_),
                               [str(exe), "--sizes", ",".join(map(str, sizes)), "--calls", "1",
                                "--learn", str(args.learn), "--tune", str(tune_file)], env=env)
            for line in proc.stderr.splitlines():
                if line.startswith(("mpilens: ", "mpilens-bench-alltoall: ")):
                    raise UserError(line.split(": ", 1)[1])
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("[", '{"cache"'))]
            if proc.returncode != 0 or len(lines) != 2:
                raise UserError(f"tuning run failed ({proc.returncode}): "
                                f"{proc.stderr.strip()[-500:]}")
            for r in json.loads(lines[0]):
                print(f"{np_} ranks  {r['bytes']:>8} B  {r['algorithm']}")
            cache = json.loads(lines[1])["cache"]
    if cache:
        print(f"learning cache: {cache}")
    if out is not None:
        print(f"tuning file: {out}")
    return 0
