"""`mpilens advise PROFILE [--model NETMODEL.json]`: what to change, with a
predicted gain.

A ranked list of findings (docs/advise.md): what was seen, why it costs time (a
P-LogP prediction from the network model of `mpilens bench logp --model FILE`,
or the model kept for this host, measured once), the change for the profile's
MPI, and the predicted gain in seconds and % of wall time, each with how sure it
is.

When the model is more than 3x off a collective's measured time per call, the
candidates are measured instead (mpilens-bench coll at the profile's size and
communicator size, on the launcher line given after --, else the one the profile
recorded), kept beside the model, and the finding says so (--no-measure: scale).

`--check -- LAUNCHER LINE` applies the top finding whose change needs no code
edit, runs the job as it is and with the change under the profiler, alternately,
and decides on the changed functions' time per call: confirmed (exit status 0),
refuted (1) or not resolved (3), with the interval of the measured gain; the
wall time is shown beside it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .. import launch
from ..advise import check as checking
from ..advise import engine, measure, render
from ..advise.ranks import load
from ..report import fastread, limits
from .diff import render as render_diff
from .report import positive_int


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v > 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number of seconds")
    return v


DEVICE = re.compile(r"[A-Za-z0-9_.:-]+")


def _devices(text: str) -> list[str]:
    names = text.split(",")
    if len(names) < 2 or len(set(names)) != len(names) \
            or not all(DEVICE.fullmatch(n) for n in names):
        raise argparse.ArgumentTypeError(
            f"'{text}' is invalid (accepted: two or more distinct network device names, "
            f"comma-separated, such as eth0,eth1)")
    return names


def _options(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--model", metavar="NETMODEL.json",
                   help="network model of `mpilens bench logp --model FILE` (default: "
                        "the kept model of this host, measured once: --remeasure)")
    p.add_argument("--remeasure", action="store_true",
                   help="measure the kept network model of this profile's hosts, MPI and "
                        "ranks per node again, and the candidates' times rule 3 keeps; "
                        "with --model, only the candidates' times (the model is the file)")
    p.add_argument("--no-measure", action="store_true",
                   help="when the model is more than 3x off a collective's measured time, "
                        "do not run the candidates (mpilens-bench coll on the job's "
                        "launcher line) but scale the model, at low confidence")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--rail-interfaces", metavar="DEV0,DEV1[,...]", type=_devices, default=None,
                   help="the network devices of the nodes' rails: rule 1 predicts for that "
                        "many rails and names them, and --check can apply it (the job and "
                        "the model ran over one rail)")
    p.add_argument("--check", action="store_true",
                   help="apply the top finding that needs no code edit and re-run the job "
                        "given after -- (and the baseline), then compare")
    p.add_argument("--check-output", metavar="PREFIX", default=None,
                   help="--check's profiles: PREFIX-baseline.prof and PREFIX-changed.prof "
                        "(default: the profile's name without .prof, plus -check)")
    p.add_argument("--check-rule", type=positive_int, default=None, metavar="RULE",
                   help="--check: the highest-ranked finding of this rule whose change needs "
                        "no code edit, minor and withheld ones included (default: the top "
                        "finding that needs no code edit)")
    p.add_argument("--no-baseline-run", action="store_true",
                   help="--check: compare with PROFILE instead of running the baseline again")
    p.add_argument("--runs", type=positive_int, default=5,
                   help="--check: run the baseline and the changed job this many times each, "
                        "alternately; the verdict needs 5 pairs at least (default 5)")
    p.add_argument("--force", action="store_true", help="--check: overwrite its profiles")
    p.add_argument("--launcher", choices=launch.KINDS, default=None,
                   help="--check: the launcher's option syntax when its name does not tell "
                        "(as mpilens run --launcher)")
    p.add_argument("--timeout", type=_seconds, default=None,
                   help="--check: stop a run after this many seconds")
    return p


def check_prefix(profile: str | Path) -> str:
    """--check-output's default: the profile's name without .prof (or .prof.gz, the
    default output's), plus -check."""
    return str(Path(str(profile).removesuffix(".gz")).with_suffix("")) + "-check"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advise", help="what to change, with a predicted gain",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile", help="profile file written by mpilens")
    _options(p)
    p.add_argument("rest", nargs=argparse.REMAINDER,
                   help="options, then (with --check) -- and the launcher line")
    p.set_defaults(func=run, remainder="rest")


def run(args: argparse.Namespace) -> int:
    rest: list[str] = list(args.rest)
    k = rest.index("--") if "--" in rest else len(rest)
    command = rest[k + 1:]
    _options(argparse.ArgumentParser(prog="mpilens advise PROFILE", allow_abbrev=False)
             ).parse_args(rest[:k], namespace=args)
    if command and args.no_measure and not args.check:
        print(f"mpilens: a launcher line ('{' '.join(command)}') is used by --check and "
              f"to measure candidates: not with --no-measure alone", file=sys.stderr)
        return 2
    if args.check_rule is not None and not args.check:
        print("mpilens: --check-rule chooses the finding --check applies: give --check too",
              file=sys.stderr)
        return 2
    if args.check and not command:
        print("mpilens: --check needs the job's launcher line after --, e.g. "
              "mpilens advise job.prof --check -- mpirun -np 4 ./app", file=sys.stderr)
        return 2
    prof = load(args.profile)
    fastread.say_fallback(len(prof.ranks) > 0)
    engine.check_profile(prof)
    if args.remeasure and args.model and args.no_measure:
        print("mpilens: --remeasure with --model measures the candidates again (the model "
              "is the file given), which --no-measure forbids: drop one of them",
              file=sys.stderr)
        return 2
    model = engine.model_for(prof, args.model, args.remeasure)
    line = command[1:] if command[:1] == ["--"] else command
    measurer = None if args.no_measure else \
        measure.measurer_for(prof, line, args.remeasure, args.launcher)
    if args.remeasure and args.model and measurer is None:
        print(f"mpilens: --remeasure with --model measures the candidates again, on this "
              f"host: {args.profile} ran on {', '.join(map(str, prof.header.get('hosts', [])))}"
              f", not here", file=sys.stderr)
        return 2
    result = engine.advise(prof, model, args.rail_interfaces, measurer)
    if not args.check:
        if args.format == "json":
            json.dump(limits.strict(result), sys.stdout, indent=1, allow_nan=False)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(render.text(result))
        return 0
    prefix = args.check_output or check_prefix(args.profile)
    try:
        done = checking.check(result, prof, command, prefix, force=args.force,
                              rerun_baseline=not args.no_baseline_run, runs=args.runs,
                              timeout=args.timeout, launcher_kind=args.launcher,
                              rule=args.check_rule)
    except checking.JobFailed as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return exc.status
    if args.format == "json":
        json.dump(limits.strict({"advice": result, "check": done}), sys.stdout, indent=1,
                  allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render.text(result) + "\nCheck of the top finding that needs no code "
                         "edit:\n" + render.check_text(done) + "\n")
        sys.stdout.flush()
        render_diff(done["diff"], 10)
    return int(done["exit_status"])
