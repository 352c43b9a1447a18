"""`mpilens bench alltoall`: native MPI_Alltoall vs every forced algorithm vs the
adaptive engine with and without model pruning (the paper's model/nomodel
table).

Runs build/bin/mpilens-bench-alltoall --repeat times per rank count (each run a
fresh job: fresh adaptive state, learning included); all variants are
interleaved inside each run.  Every figure is the median over the runs; the
targets are checked on the medians and counted per run.  Prints a table per
rank count and whether the targets hold:
  after   adaptive (model), after learning, within 5 % of the best forced
          algorithm in the same stretch of the run (the chunks after its last
          learning call)
  total   adaptive (model), learning included, within 10 % of the best of
          native and every forced algorithm
  prune   model pruning cheaper in total than no pruning (checked from 4 KiB up)
Column decide (information, not a target): what deciding cost with the model
(Grouping + Learning) over what it cost without (Learning), from 4 KiB up:
what pruning saves, without the noise of the running calls that the total
adds (the race already drops clear losers early, so pruning saves a few per
cent of a 2000-call total, within this noise on a shared machine).
Column A/A: native MPI_Alltoall run twice in the same run, on two communicators
(max/min of the two): how far two identical variants land apart, the noise
floor of every ratio.  A miss marked "no~" is within it (ratio <= target x A/A):
this run cannot tell it from a hit.
Intervals (JSON `intervals`, columns after/best and after/native): per chunk
after the adaptive variant's last learning call, its time over the best forced
algorithm's (the lowest median over the runs) and over native's in the same
chunk (the variants of a chunk run back to back); the ratio of their times
summed over those chunks of every run, with a 95 % bootstrap interval over the
chunks.  "within 5 %" is claimed only when the whole interval lies below 1.05,
"not within" when it lies above, else "not resolved"; against native likewise
"faster", "slower", "not resolved".
--skip leaves variants out (forced algorithms, nomodel) to keep a slow sweep
short. Before its timed part the first run makes a quick first measurement (the
probe: per size, three calls of native and of each algorithm forced, after one
untimed: their median, and their fastest) and the sweep announces its expected
duration when it is 10 s or more, as a range when the fastest calls and the
median ones give figures more than 1.5x apart (a busy host):
per size the calls times every variant's probed time (adaptive: its learning
calls at the algorithms' mean, the rest at the fastest), for every run (a run at
P ranks taken to last the first's x P / the first's ranks).  The JSON records it
(expected_s, and the probe's times under probe) beside the whole sweep's time
(elapsed_s) and the estimate the first run's own time gives
(expected_first_run_s), which is announced too when the runs left take 10 s or
more.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import outfile, paths
from ..errors import UserError
from . import launch
from .launch import launcher_for

ALGOS = ["spread", "bruck", "recdbl", "pair", "pair_lb", "pair_barrier", "ring", "mpi"]
DEFAULT_SIZES = "64,256,1K,4K,16K,64K,256K,1M"


def parse_size(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    mult = 1
    if t.endswith("K"):
        mult, t = 1024, t[:-1]
    elif t.endswith("M"):
        mult, t = 1024 * 1024, t[:-1]
    if not t.isdigit():
        raise UserError(f"size '{text}' is invalid: expected bytes such as 64, 4K or 1M")
    return int(t) * mult


def parse_ints(text: str, what: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{what} '{text}' is invalid: expected a comma list of integers") from None
    if not vals or min(vals) < 1:
        raise UserError(f"{what} '{text}' is invalid: expected positive integers")
    return vals


def plan(sizes: list[int], calls: int, learn: int, scale_from: int) -> tuple[list[int], list[int]]:
    """Calls and learning calls per size: constant up to scale_from bytes, then
    shrinking in proportion to the size (keeping learn/calls fixed) so that every
    size takes a similar time."""
    cs, ls = [], []
    for s in sizes:
        f = min(1.0, scale_from / s) if s > 0 else 1.0
        ls.append(max(2, round(learn * f)))
        cs.append(max(ls[-1] * 20, round(calls * f)))
    return cs, ls


def targets(res: dict[str, Any]) -> dict[str, Any]:
    forced = res["forced_s"]
    best_alg = min(forced, key=forced.get)
    best = forced[best_alg]
    base = min(best, res["native_s"])
    model, nomodel = res["adaptive"]["model"], res["adaptive"].get("nomodel")
    # after learning: against the forced algorithms timed in the same chunks
    wf = model.get("window", {}).get("forced_s") or forced
    wbest = min(wf.values())
    out = {"best_forced": best_alg, "best_forced_s": best,
           "best_forced_after": min(wf, key=wf.get),
           "after_ratio": model["after_s"] / wbest if model["after_s"] > 0 and wbest > 0 else None,
           "total_ratio": model["total_s"] / base,
           "model_vs_nomodel": model["total_s"] / nomodel["total_s"] if nomodel else None}
    out["after_ok"] = out["after_ratio"] is not None and out["after_ratio"] <= 1.05
    out["total_ok"] = out["total_ratio"] <= 1.10
    out["prune_ok"] = None if res["bytes"] < 4096 or nomodel is None else \
        out["model_vs_nomodel"] < 1.0
    decide = model.get("grouping_s", 0) + model.get("learning_s", 0)
    out["decide_ratio"] = None if res["bytes"] < 4096 or not (nomodel or {}).get("learning_s") else \
        decide / nomodel["learning_s"]
    if "native_aa_s" in res:  # the A/A control: identical variants this far apart
        a, b = res["native_s"], res["native_aa_s"]
        aa = out["aa_spread"] = max(a, b) / min(a, b) if min(a, b) > 0 else 1.0
        out["after_within_aa"] = out["after_ratio"] is not None and out["after_ratio"] <= 1.05 * aa
        out["total_within_aa"] = out["total_ratio"] <= 1.10 * aa
        out["prune_within_aa"] = None if out["prune_ok"] is None else \
            out["model_vs_nomodel"] < aa
    return out


def ratio_interval(pairs: list[tuple[float, float]], seed: int = 1) -> dict[str, Any] | None:
    """The ratio of two variants' summed times over paired samples (a, b) (chunks, or
    rounds), sum(a) / sum(b), and its 95 % bootstrap interval over the pairs (2000
    resamples of the pairs, seeded: the same data give the same interval).  A ratio of
    sums, not a mean of ratios: with per-chunk times spread 10x by the scheduler, the
    mean of per-chunk ratios is ruled by the chunks whose denominator happened to be
    small."""
    if not pairs:
        return None
    rng = random.Random(seed)
    n = len(pairs)
    boot = []
    for _ in range(2000):
        pick = [pairs[rng.randrange(n)] for _ in range(n)]
        boot.append(sum(a for a, _ in pick) / sum(b for _, b in pick))
    boot.sort()
    return {"ratio": sum(a for a, _ in pairs) / sum(b for _, b in pairs), "lo": boot[49],
            "hi": boot[1949], "pairs": n}


def verdict(iv: dict[str, Any] | None, bound: float, below: str, above: str) -> str:
    """below when the whole interval lies below bound, above when it lies above."""
    if iv is None:
        return "no chunk after learning"
    return below if iv["hi"] < bound else above if iv["lo"] > bound else "not resolved"


def intervals(rs: list[dict[str, Any]], best: str) -> dict[str, Any]:
    """Adaptive (model) after learning over the best forced algorithm and over native,
    and native's A/A control, per chunk after the last learning call, pooled over the
    runs rs (each with chunk_s)."""
    logs: dict[str, list[tuple[float, float]]] = {"after_best": [], "after_native": [],
                                                  "aa": [], "best_native": []}
    for r in rs:
        ch = r.get("chunk_s")
        if not ch or best not in ch:
            continue
        first = r["last_learning_chunk"]["model"] + 1
        for c in range(len(r["chunk_calls"])):
            nat = ch["native"][c]
            if min(nat, ch[best][c], ch["native_aa"][c], ch["model"][c]) <= 0:
                continue
            logs["aa"].append((ch["native_aa"][c], nat))
            logs["best_native"].append((ch[best][c], nat))
            if c >= first:
                logs["after_best"].append((ch["model"][c], ch[best][c]))
                logs["after_native"].append((ch["model"][c], nat))
    out: dict[str, Any] = {"best_forced": best}
    for k, v in logs.items():
        out[k] = ratio_interval(v)
    out["after_within_5pct"] = verdict(out["after_best"], 1.05, "within 5 %", "not within 5 %")
    out["after_vs_native"] = verdict(out["after_native"], 1.0, "faster", "slower")
    return out


def fmt_iv(iv: dict[str, Any] | None) -> str:
    return "-" if iv is None else f"{iv['ratio']:.2f} [{iv['lo']:.2f},{iv['hi']:.2f}]"


def us(x: float) -> str:
    return f"{x * 1e6:.1f}"


def table(run: dict[str, Any]) -> str:
    algos = [a for a in ALGOS if a in run["results"][0]["forced_s"]]
    head = ["bytes", "native", "A/A", *algos, "model tot", "after", "choice", "nomodel tot",
            "after", "choice", "after<=5%", "tot<=10%", "prune", "decide", "after/best",
            "after/native"]
    rows = [head]
    empty = {"total_s": 0.0, "after_s": 0.0, "algorithm": "-"}
    for r in run["results"]:
        t, m = r["targets"], r["adaptive"]["model"]
        n = r["adaptive"].get("nomodel", empty)
        iv = r.get("intervals") or {}
        rm = t.get("runs_meeting")

        def runs(key: str, rm: dict[str, Any] | None = rm) -> str:
            return f" ({rm[key]}/{rm['runs']})" if rm else ""

        def verdict(key: str, ratio: float | None, t: dict[str, Any] = t) -> str:
            word = "yes" if t[f"{key}_ok"] else "no~" if t.get(f"{key}_within_aa") else "NO"
            return f"{word} {ratio or 0:.2f}{runs(key)}"
        rows.append([str(r["bytes"]), us(r["native_s"]),
                     f"{t['aa_spread']:.2f}" if "aa_spread" in t else "-",
                     *[us(r["forced_s"][a]) for a in algos],
                     us(m["total_s"]), us(m["after_s"]), m["algorithm"], us(n["total_s"]),
                     us(n["after_s"]), n["algorithm"], verdict("after", t["after_ratio"]),
                     verdict("total", t["total_ratio"]),
                     "-" if t["prune_ok"] is None else verdict("prune", t["model_vs_nomodel"]),
                     "-" if t.get("decide_ratio") is None else f"{t['decide_ratio']:.2f}",
                     f"{fmt_iv(iv.get('after_best'))} {iv.get('after_within_5pct', '')}",
                     f"{fmt_iv(iv.get('after_native'))} {iv.get('after_vs_native', '')}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [(f"{run['nranks']} ranks, microseconds per call (mean over ranks; median of "
              f"{run.get('repeat', 1)} runs, targets met in how many runs in brackets; "
              "no~: missed by less than the A/A spread; after/best and after/native: ratio "
              "[95 % interval] over the chunks after learning)")]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def run_one(launcher: list[str], sizes: list[int], calls: list[int], learn: list[int],
            chunks: int, timeout: float | None, race: str,
            network_model: Path | None = None, skip: str = "",
            progress: float | None = None, announce: bool = True) -> dict[str, Any]:
    """One job; progress: probe first and announce the expected duration x progress (the
    whole sweep's, in runs like this one) before the timed part (announce False: only
    probe, for the JSON's expected_s)."""
    exe = paths.artifact("bin/mpilens-bench-alltoall")
    argv = [str(exe), "--sizes", ",".join(map(str, sizes)),
            "--calls", ",".join(map(str, calls)), "--learn", ",".join(map(str, learn)),
            "--chunks", str(chunks), "--race", race, *(["--skip", skip] if skip else [])]
    model = str(network_model) if network_model else None
    if progress:
        proc, _ = launch.run_streamed(launcher, [*argv, "--progress", f"{progress:.9g}"],
                                      "alltoall", timeout, {"MPILENS_NETWORK_MODEL": model},
                                      announce)
    else:
        proc = launch.run_program(launcher, argv, {"MPILENS_NETWORK_MODEL": model}, timeout)
    for line in proc.stderr.splitlines():
        if line.startswith(("mpilens-bench-alltoall: ", "mpilens: ")):
            raise UserError(line.split(": ", 1)[1])
    start = proc.stdout.find("{")
    if proc.returncode != 0 or start < 0:
        raise UserError(f"benchmark failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    run: dict[str, Any] = json.loads(proc.stdout[start:])
    for r in run["results"]:
        r["targets"] = targets(r)
    return run


def median(xs: list[float]) -> float:
    v = sorted(xs)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def combine(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """One run per rank count from several: every time the median over the runs,
    the adaptive choices listed, the targets on the medians and counted per run."""
    out: dict[str, Any] = {"nranks": reps[0]["nranks"], "repeat": len(reps), "results": []}
    for k, r0 in enumerate(reps[0]["results"]):
        rs = [rep["results"][k] for rep in reps]
        res: dict[str, Any] = {
            "bytes": r0["bytes"], "calls": r0["calls"], "learn": r0["learn"],
            "native_s": median([r["native_s"] for r in rs]),
            **({"native_aa_s": median([r["native_aa_s"] for r in rs])}
               if all("native_aa_s" in r for r in rs) else {}),
            "forced_s": {a: median([r["forced_s"][a] for r in rs]) for a in r0["forced_s"]},
            "adaptive": {}}
        for v in ("model", "nomodel"):
            if v not in r0["adaptive"]:
                continue
            ad = [r["adaptive"][v] for r in rs]
            res["adaptive"][v] = {
                "total_s": median([a["total_s"] for a in ad]),
                "after_s": median([a["after_s"] for a in ad]),
                "algorithm": "/".join(a["algorithm"] for a in ad),
                "learning_calls": median([a["learning_calls"] for a in ad]),
                **({"window": {"native_s": median([a["window"]["native_s"] for a in ad]),
                               "forced_s": {k: median([a["window"]["forced_s"][k] for a in ad])
                                            for k in ad[0]["window"]["forced_s"]}}}
                   if all("window" in a for a in ad) else {}),
                **{key: median([a[key] for a in ad]) for key in ("grouping_s", "learning_s")
                   if all(key in a for a in ad)}}
        res["targets"] = targets(res)
        res["intervals"] = intervals(rs, res["targets"]["best_forced"])
        per = [r["targets"] for r in rs]
        res["targets"]["runs_meeting"] = {
            "after": sum(t["after_ok"] for t in per), "total": sum(t["total_ok"] for t in per),
            "prune": None if res["targets"]["prune_ok"] is None else
            sum(bool(t["prune_ok"]) for t in per), "runs": len(per)}
        res["runs"] = rs
        out["results"].append(res)
    return out


def sweep_factor(nps: list[int], repeat: int) -> float:
    """The whole sweep in runs like the first (nps[0] ranks): a run at P ranks taken to last
    P / nps[0] of the first's (each call moves P blocks per rank; an assumption)."""
    return sum(p / nps[0] for p in nps) * repeat


def expected_duration(first_s: float, nps: list[int], repeat: int) -> float:
    """The whole sweep's expected seconds from its first run's time."""
    return first_s * sweep_factor(nps, repeat)


def parse_race(text: str) -> str:
    """off, F, F1,F2 or F0,F1,F2 (each in (1, 1000]), as MPILENS_ALLTOALL_RACE; returned as given."""
    if text == "off":
        return text
    parts = text.split(",")
    try:
        ok = len(parts) in (1, 2, 3) and all(1 < float(f) <= 1000 for f in parts)
    except ValueError:
        ok = False
    if not ok:
        raise UserError(f"--race {text}: expected off, a factor F, F1,F2 or F0,F1,F2, "
                        "each in (1, 1000]")
    return text


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Targets met on the medians, and per run (lists, one count per repetition)."""
    res = [r for run in runs for r in run["results"]]
    pr = [r for r in res if r["targets"]["prune_ok"] is not None]
    nrep = runs[0].get("repeat", 1) if runs else 1
    def per_run(key: str, rows: list[dict[str, Any]]) -> list[int]:
        return [sum(bool(r["runs"][i]["targets"][key]) for r in rows) for i in range(nrep)]
    out = {"after_within_5pct": sum(r["targets"]["after_ok"] for r in res),
           "total_within_10pct": sum(r["targets"]["total_ok"] for r in res),
           "model_cheaper_from_4KiB": sum(bool(r["targets"]["prune_ok"]) for r in pr),
           "model_decides_cheaper_from_4KiB": sum(
               (r["targets"].get("decide_ratio") or 2) < 1 for r in pr),
           "points": len(res), "points_from_4KiB": len(pr), "repeat": nrep}
    if res and "aa_spread" in res[0]["targets"]:
        # misses no bigger than the same run's A/A spread: indistinguishable from hits
        for key, rows in (("after", res), ("total", res), ("prune", pr)):
            out[f"{key}_misses_within_aa"] = sum(
                not r["targets"][f"{key}_ok"] and bool(r["targets"][f"{key}_within_aa"])
                for r in rows)
        out["aa_spread_max"] = max(r["targets"]["aa_spread"] for r in res)
    if res and "intervals" in res[0]:  # the verdicts that rest on intervals
        for key in ("after_within_5pct", "after_vs_native"):
            words = [r["intervals"][key] for r in res]
            out[f"intervals_{key}"] = {w: words.count(w) for w in sorted(set(words))}
    if res and "runs" in res[0]:
        out["per_run"] = {"after_within_5pct": per_run("after_ok", res),
                          "total_within_10pct": per_run("total_ok", res),
                          "model_cheaper_from_4KiB": per_run("prune_ok", pr)}
    return out


def main(argv: list[str]) -> int:
    if "--" in argv:
        i = argv.index("--")
        argv, user_launcher = argv[:i], argv[i + 1:]
    else:
        user_launcher = []
    p = argparse.ArgumentParser(prog="mpilens bench alltoall", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", default="4,8", help="rank counts, one run each (default 4,8)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"block sizes (default {DEFAULT_SIZES})")
    p.add_argument("--calls", type=int, default=2000, help="calls per variant (default 2000)")
    p.add_argument("--learn", type=int, default=50, help="learning calls per candidate (default 50)")
    p.add_argument("--scale-from", default="16K",
                   help="above this size calls and learning shrink in proportion (default 16K)")
    p.add_argument("--chunks", type=int, default=20, help="interleaving chunks (default 20)")
    p.add_argument("--race", default="2.5,2,1.2",
                   help="adaptive learning drops candidates F0, F1, F2 times slower than the best "
                        "after one turn (by their fastest call), N/5 and N/2 learning calls "
                        "(MPILENS_ALLTOALL_RACE; one F for all; F1,F2 without the first; "
                        "off = the paper's full learning; default 2.5,2,1.2)")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs per rank count (fresh jobs); figures are medians (default 3)")
    p.add_argument("--network-model", type=Path,
                   help="adaptive Grouping predicts from this file of `mpilens bench logp "
                        "--model` instead of measuring (MPILENS_NETWORK_MODEL)")
    p.add_argument("--skip", default="",
                   help="variants not run: forced algorithm names and nomodel, comma list")
    p.add_argument("--json", type=Path, help="save the result here")
    p.add_argument("--force", action="store_true", help="allow overwriting --json")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run")
    p.add_argument("--quiet", action="store_true", help="no table")
    p.add_argument("--no-progress", action="store_true",
                   help="do not announce the expected duration")
    args = p.parse_args(argv)
    nps = parse_ints(args.np, "--np")
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if args.calls < 1 or args.learn < 1 or args.chunks < 1 or args.repeat < 1:
        raise UserError("--calls, --learn, --chunks and --repeat must be positive integers")
    if args.network_model and not args.network_model.is_file():
        raise UserError(f"--network-model {args.network_model}: no such file "
                        "(write one with `mpilens bench logp --model FILE`)")
    race = parse_race(args.race)
    skip = [x for x in args.skip.split(",") if x]
    if any(x not in ALGOS + ["nomodel"] for x in skip) or len(set(ALGOS) - set(skip)) < 1:
        raise UserError(f"--skip {args.skip}: expected forced algorithm names ({', '.join(ALGOS)}) "
                        "and nomodel, leaving at least one algorithm")
    outfile.check_output(args.json, args.force, "--json")
    calls, learn = plan(sizes, args.calls, args.learn, parse_size(args.scale_from))
    runs = []
    start, first, probe = time.monotonic(), None, None
    factor = sweep_factor(nps, args.repeat)
    for np_ in nps:
        reps = []
        for _ in range(args.repeat):
            t0 = time.monotonic()
            reps.append(run_one(launcher_for(user_launcher, np_), sizes, calls, learn,
                                args.chunks, args.timeout, race, args.network_model,
                                ",".join(skip), None if first is not None else factor,
                                not args.no_progress))
            if first is None:  # the first run's probe announced the expected duration
                first = expected_duration(time.monotonic() - t0, nps, args.repeat)
                probe = reps[-1].pop("probe", None)
                # what the first run took foretells the rest better than its probe did
                rest = first - (time.monotonic() - t0)
                if not args.no_progress and rest > 0:
                    launch.announce(Console(stderr=True), "alltoall", rest,
                                    "the runs left, from the first run's time")
        run = combine(reps)
        runs.append(run)
        if not args.quiet:
            print(table(run), flush=True)
    doc = {"family": "alltoall", "mpi": paths.mpi_flavour(), "runs": runs, "summary": summary(runs),
           "expected_s": probe["expected_s"] * factor if probe else None,
           "expected_first_run_s": first, "probe": probe,
           "elapsed_s": time.monotonic() - start}
    if not args.quiet:
        print(json.dumps({"summary": doc["summary"]}))
    if args.json:
        outfile.write_text(args.json, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
