"""Learning across runs, measured on an application with few Alltoalls per run.

    python bench/alltoall/fft_runs.py [--np 4] [--n 128] [--iters 4] [--runs 10]
                                      [--repeat 3] [--skip ALG,...] [--json FILE] [-- launcher]

Runs the bundled example fft2d (2-D FFT by transposes, 2 MPI_Alltoall per iteration,
results checked: a failed check stops the benchmark) RUNS times in a row, as a user
re-running a job.  Each round r = 1..RUNS runs, interleaved (the order rotates from
round to round): adaptive with a learning cache that starts empty and carries over
from round to round, native MPI_Alltoall, and each algorithm forced.  Every job runs
under mpilens-exec (same profiler overhead for all).  Per job: the iterations' wall
time (slowest rank, printed by fft2d) and the time in MPI_Alltoall (profile, mean over
ranks).  --repeat R does the whole sequence R times, each with a fresh cache; the
ratios per run are the medians over the sequences (one 8-call job is at the mercy of this
machine's noise).  Native runs twice per round (native_aa: a second, identical job), the
A/A control: its ratio to native, with its interval, is the noise floor of the others.
Prints one JSON document on stdout (sequences, medians per run, run 1 against run RUNS)
and a table on stderr.  docs/alltoall.md, "Learning cache", gives figures.

Intervals (`after_choice`): over every round in which adaptive started from a final
choice (source reused: runs 4 and later, once few-calls mode has decided), adaptive's
time in MPI_Alltoall over native's and over the best forced algorithm's in the same
round: the ratio of the times summed over those rounds, with a 95 % bootstrap interval
over the rounds (and the same for the wall time); "within 5 %" of the best forced algorithm is claimed only when the whole
interval lies below 1.05.  --skip leaves forced algorithms out (a slow network).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from mpilens import paths
from mpilens.bench.alltoall import ratio_interval, verdict
from mpilens.bench.launch import launcher_for, run_program

ALGOS = ["spread", "bruck", "recdbl", "pair", "pair_lb", "pair_barrier", "ring", "mpi"]
LINE = re.compile(r"fft2d: n=(\d+) ranks=(\d+) alltoalls=(\d+) block_bytes=(\d+) "
                  r"time_s=(\S+) max_err=(\S+) (ok|FAILED)")


def job(launcher: list[str], n: int, iters: int, env: dict[str, str], prof: Path) -> dict[str, Any]:
    argv = [str(paths.artifact("bin/mpilens-exec")), str(paths.artifact("examples/fft2d")),
            str(n), str(iters)]
    proc = run_program(launcher, argv, env={**env, "MPILENS_OUTPUT": str(prof)})
    m = LINE.search(proc.stdout)
    if proc.returncode != 0 or not m or m[7] != "ok":
        raise SystemExit(f"fft2d failed ({proc.returncode}) with {env}: {proc.stdout[-300:]} "
                         f"{proc.stderr[-500:]}")
    header = json.loads(prof.read_text().splitlines()[0])
    prof.unlink()
    out: dict[str, Any] = {"time_s": float(m[5]), "block_bytes": int(m[4]),
                           "alltoall_s": header["functions"]["MPI_Alltoall"]["rank_time_s"]["mean"]}
    for rec in header.get("alltoall", []):
        if rec["source"] != "forced":
            out.update({k: rec[k] for k in ("source", "algorithm", "learning_calls",
                                            "carried_calls")})
    return out


def sequence(launcher: list[str], args: argparse.Namespace, variants: list[str],
             seq: int) -> tuple[list[dict[str, Any]], Any]:
    """RUNS rounds with one cache that starts empty."""
    rounds = []
    with tempfile.TemporaryDirectory(prefix="mpilens-fft-runs-") as tmp:
        cache = Path(tmp) / "cache.json"
        for r in range(1, args.runs + 1):
            k = (r - 1 + seq) % len(variants)
            res: dict[str, dict[str, Any]] = {}
            for v in variants[k:] + variants[:k]:
                mode = "native" if v == "native_aa" else v
                env = {"MPILENS_ALLTOALL": mode, "MPILENS_ALLTOALL_CACHE": str(cache)}
                res[v] = job(launcher, args.n, args.iters, env, Path(tmp) / f"{v}.prof")
            a = res["adaptive"]
            rounds.append({"run": r, "adaptive": a, "native": res["native"],
                           "native_aa": res["native_aa"],
                           "forced": {x: res[x] for x in args.algos}})
            print(f"seq {seq} run {r:2}: adaptive {a['time_s'] * 1e3:7.2f} ms "
                  f"(alltoall {a['alltoall_s'] * 1e3:6.2f} ms, {a.get('source')}, "
                  f"{a.get('algorithm')}, learning {a.get('learning_calls')}, carried "
                  f"{a.get('carried_calls')})  native {res['native']['time_s'] * 1e3:7.2f} ms "
                  f"({res['native']['alltoall_s'] * 1e3:6.2f})", file=sys.stderr)
        final = json.loads(cache.read_text()) if cache.exists() else None
    return rounds, final


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--n", type=int, default=128, help="grid size N (power of two)")
    ap.add_argument("--iters", type=int, default=4, help="FFT round trips per run (2 Alltoalls each)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="sequences, each with a fresh cache")
    ap.add_argument("--skip", default="", help="forced algorithms not run, comma list")
    ap.add_argument("--json", type=Path, help="also write the JSON document here")
    ap.add_argument("launcher", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    user = args.launcher[1:] if args.launcher[:1] == ["--"] else args.launcher
    launcher = launcher_for(user, args.np)
    skip = {x for x in args.skip.split(",") if x}
    if skip - set(ALGOS) or not set(ALGOS) - skip:
        raise SystemExit(f"fft_runs: --skip {args.skip}: expected names of {', '.join(ALGOS)}, "
                         "leaving at least one")
    args.algos = [x for x in ALGOS if x not in skip]
    variants = ["adaptive", "native", "native_aa"] + args.algos
    sequences = []
    for seq in range(1, args.repeat + 1):
        rounds, final = sequence(launcher, args, variants, seq)
        sequences.append({"rounds": rounds, "cache_after": final})
    # the best forced algorithm: the lowest median time over every job of the benchmark
    # (the fastest of 8 noisy jobs in each round would be biased low); each round's
    # adaptive job is compared with that algorithm's job of the same round
    med = {x: statistics.median(r["forced"][x]["time_s"] for sq in sequences for r in sq["rounds"])
           for x in args.algos}
    best = min(args.algos, key=med.__getitem__)
    for sq in sequences:
        for r in sq["rounds"]:
            a, nat, bf = r["adaptive"], r["native"], r["forced"][best]
            r.update({"time_over_native": a["time_s"] / nat["time_s"],
                      "time_over_best_forced": a["time_s"] / bf["time_s"],
                      "alltoall_over_native": a["alltoall_s"] / nat["alltoall_s"],
                      "alltoall_over_best_forced": a["alltoall_s"] / bf["alltoall_s"]})
    keys = ("time_over_native", "time_over_best_forced", "alltoall_over_native",
            "alltoall_over_best_forced")
    per_run: list[dict[str, Any]] = [{k: statistics.median(sq["rounds"][r][k] for sq in sequences) for k in keys}
               for r in range(args.runs)]
    for r, x in enumerate(per_run):
        x["run"] = r + 1
        x["sources"] = [sq["rounds"][r]["adaptive"].get("source") for sq in sequences]
        x["algorithms"] = [sq["rounds"][r]["adaptive"].get("algorithm") for sq in sequences]
    # after the choice is final: rounds whose adaptive job started from it (reused)
    after = [r for sq in sequences for r in sq["rounds"] if r["adaptive"].get("source") == "reused"]
    ivs: dict[str, Any] = {"rounds": len(after)}
    for k in keys:  # a ratio of summed times over those rounds, paired by round
        what = "time_s" if k.startswith("time") else "alltoall_s"
        ivs[k] = ratio_interval([(r["adaptive"][what],
                                  (r["native"] if k.endswith("native") else r["forced"][best])[what])
                                 for r in after])
    # the A/A control: native's second job of the same round over native, in the rounds
    # after the choice and in all rounds: how far two identical jobs land apart
    every = [r for sq in sequences for r in sq["rounds"]]
    for name, rs in (("aa_alltoall_after", after), ("aa_alltoall_all", every)):
        ivs[name] = ratio_interval([(r["native_aa"]["alltoall_s"], r["native"]["alltoall_s"])
                                    for r in rs])
    ivs["alltoall_within_5pct"] = verdict(ivs["alltoall_over_best_forced"], 1.05, "within 5 %",
                                          "not within 5 %")
    ivs["alltoall_vs_native"] = verdict(ivs["alltoall_over_native"], 1.0, "faster", "slower")
    ivs["choices"] = sorted({r["adaptive"].get("algorithm") for r in after} - {None})
    doc = {"np": args.np, "n": args.n, "iters": args.iters, "alltoalls_per_run": 2 * args.iters,
           "block_bytes": sequences[0]["rounds"][0]["adaptive"]["block_bytes"],
           "mpi": paths.mpi_flavour(), "repeat": args.repeat, "best_forced": best,
           "median_time_s": {**med, **{v: statistics.median(r[v]["time_s"] for sq in sequences
                                                             for r in sq["rounds"])
                                       for v in ("adaptive", "native")}},
           "median_per_run": per_run,
           "first_vs_last": {k: [per_run[0][k], per_run[-1][k]] for k in keys},
           "after_choice": ivs,
           "sequences": sequences}
    for x in per_run:
        print(f"median run {x['run']:2}: adaptive/native time {x['time_over_native']:.3f} "
              f"alltoall {x['alltoall_over_native']:.3f}; adaptive/best forced time "
              f"{x['time_over_best_forced']:.3f} alltoall {x['alltoall_over_best_forced']:.3f}; "
              f"{x['sources']} {x['algorithms']}", file=sys.stderr)
    for k in (*keys, "aa_alltoall_after", "aa_alltoall_all"):
        iv = ivs[k]
        if iv:
            print(f"after the choice ({ivs['rounds']} rounds, {ivs['choices']}): {k} "
                  f"{iv['ratio']:.3f} [{iv['lo']:.3f}, {iv['hi']:.3f}]", file=sys.stderr)
    print(f"alltoall vs best forced ({best}): {ivs['alltoall_within_5pct']}; vs native: "
          f"{ivs['alltoall_vs_native']}", file=sys.stderr)
    text = json.dumps(doc, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
