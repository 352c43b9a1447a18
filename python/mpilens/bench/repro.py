"""`mpilens bench repro`: native vs reproducible MPI_Allreduce, time and accuracy.

Runs bin/mpilens-bench-repro (one job: native and reproducible calls
interleaved) and prints its figures: per count (1, 16, 1 Ki, 1 Mi doubles) the
median time of both and their ratio against the targets (<= 2x for counts <= 16,
<= 4x for 1 Mi doubles on 4 ranks), then the accuracy of the native result in
significant bits lost against the correctly rounded exact sum.  Before the timed
samples it announces their expected duration (from a probe of every count) when
it is 10 s or more; the JSON records it (expected_s) beside the samples' time
(elapsed_s).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import outfile, paths
from ..errors import UserError
from . import launch as bench_launch

TARGETS = {1: 2.0, 16: 2.0, 1 << 20: 4.0}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpilens bench repro", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=4, help="ranks (default 4)")
    p.add_argument("--samples", type=int, default=11,
                   help="interleaved native/reproducible samples per count (default 11)")
    p.add_argument("--json", type=Path, help="also write the JSON document to this file")
    p.add_argument("--force", action="store_true", help="allow overwriting --json")
    p.add_argument("--no-progress", action="store_true",
                   help="do not announce the expected duration")
    p.add_argument("launcher", nargs=argparse.REMAINDER,
                   help="-- LAUNCHER ARGS ('{np}' is replaced), default: the MPI's own")
    return p


def run(np_: int, samples: int, launcher: list[str], progress: bool = True) -> dict[str, Any]:
    exe = paths.artifact("bin/mpilens-bench-repro")
    # --progress: its expected duration (MLB-ESTIMATE) after a probe, announced from 10 s
    proc, _ = bench_launch.run_streamed(bench_launch.launcher_for(launcher, np_),
                                        [str(exe), "--samples", str(samples), "--progress"],
                                        "repro", progress=progress)
    cmd = proc.args
    start = proc.stdout.find("{")
    if proc.returncode != 0 or start < 0:
        sys.stderr.write(proc.stderr[-2000:])
        raise bench_launch.BenchFailed(f"{' '.join(cmd)} failed with status {proc.returncode}")
    doc: dict[str, Any] = json.loads(proc.stdout[start:])
    doc["command"] = cmd
    return doc


def render(doc: dict[str, Any]) -> str:
    lines = [(f"reproducible MPI_Allreduce(MPI_SUM, MPI_DOUBLE) on {doc['nranks']} ranks "
              f"({doc['mpi_library'].split(',')[0]}), {doc['samples']} interleaved samples"),
             f"{'count':>9} {'native us':>11} {'repro us':>11} {'ratio':>7}  target"]
    for t in doc["timing"]:
        target = TARGETS.get(t["count"])
        verdict = "" if target is None else (
            f"<= {target:g}x " + ("met" if t["ratio_median"] <= target else "NOT met"))
        lines.append(f"{t['count']:>9} {t['native_us']['median']:>11.2f} "
                     f"{t['repro_us']['median']:>11.2f} {t['ratio_median']:>7.2f}  {verdict}")
    lines.append("native accuracy (bits lost vs the correctly rounded exact sum, of 53):")
    for a in doc["accuracy"]:
        lines.append(f"  {a['dataset']:<18} mean {a['bits_lost_mean']:6.2f}  max "
                     f"{a['bits_lost_max']:6.2f}  native exact for "
                     f"{100 * a['native_exact_fraction']:.1f}% of {a['count']} elements")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.np < 1:
        raise UserError(f"--np {args.np}: expected a positive number of ranks")
    if args.samples < 1:
        raise UserError(f"--samples {args.samples}: expected a positive number")
    outfile.check_output(args.json, args.force, "--json")
    launcher = args.launcher[1:] if args.launcher[:1] == ["--"] else args.launcher
    try:
        doc = run(args.np, args.samples, launcher, not args.no_progress)
    except bench_launch.BenchFailed as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return 1
    print(render(doc))
    if args.json:
        outfile.write_text(args.json, json.dumps(doc, indent=1) + "\n")
    return 0
