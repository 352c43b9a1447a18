#!/usr/bin/env python3
"""The profiler's added MPI_Finalize time and rank 0's peak memory against ranks
(docs/scale.md).

    python3 bench/finalize/finalize.py BUILD [--mpi openmpi|mpich] [--ranks 8,32,64]
        [--runs 3] [--cluster K] [--per-node a,b,...] [--steps 20] [--compress off|gzip]
        [--lib OTHER/libmpilens.so] [--no-off]

BUILD is a build directory (build/openmpi, build/mpich).  For each rank count the
build's tests/fin_probe (tests/progs/fin_probe.c: a halo exchange with 4 ring
neighbours and a few collectives, then a barrier and a timed MPI_Finalize on every
rank) runs --runs times with the profiler (mpilens-exec: LD_PRELOAD of
libmpilens.so, the profile written to a temporary directory) and --runs times
without it (the program alone), interleaved.  Printed as one JSON line per rank
count: the slowest rank's MPI_Finalize (with, without, each run and the medians;
"added_s" is the difference of the medians), rank 0's peak resident memory
(VmHWM after MPI_Finalize, medians), the job's wall time, the profile's bytes and
its profiler_finalize_s, and rank 0's time and resident memory at the end of each
step of the profiler's finalize ("steps_s", "steps_rss_kb": MPILENS_FIN_TRACE=1, medians;
absent with a profiler that does not print them).  On one host (oversubscribed) by
default; --cluster K runs over the virtual cluster K (tests/cluster/vcluster up --id K first), the
ranks spread evenly over its nodes or placed by --per-node.  --lib measures another
build's profiler (MPILENS_LIB) with this build's program: the baseline of a change.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VCLUSTER = ROOT / "tests" / "cluster" / "vcluster"
LINE = re.compile(r"^fin_probe rank=(\d+) finalize_s=([0-9.]+) hwm_kb=(-?\d+)$", re.MULTILINE)
TRACE = re.compile(r"^mpilens-fin-trace (\{.*\})$", re.MULTILINE)


def launcher(mpi: str, np_: int, cluster: int | None, per_node: str | None) -> list[str]:
    if cluster is not None:
        args = [sys.executable, str(VCLUSTER), "launch", "--id", str(cluster), mpi, str(np_)]
        if per_node:
            args += ["--per-node", per_node]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        return shlex.split(out)
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                "-np", str(np_)]
    return ["mpiexec.mpich", "-n", str(np_)]


def run(line: list[str], prog: list[str], env: dict[str, str], np_: int) -> dict:
    e = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none", MPILENS_QUIET="1", **env)
    t0 = time.monotonic()
    proc = subprocess.run(line + prog, env=e, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.monotonic() - t0
    got = {int(r): (float(t), int(k)) for r, t, k in LINE.findall(proc.stdout)}
    if proc.returncode != 0 or len(got) != np_:
        raise SystemExit(f"finalize.py: the job failed ({proc.returncode}, {len(got)} of {np_} ranks "
                         f"reported): {proc.stderr.strip()[-400:]}")
    trace = TRACE.search(proc.stderr)
    return {"fin_max": max(t for t, _ in got.values()), "fin_rank0": got[0][0], "hwm0_kb": got[0][1],
            "wall": wall, "trace": json.loads(trace.group(1)) if trace else None}


def header(path: Path) -> dict:
    with path.open("rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    with opener(path, "rt") as f:  # type: ignore[operator]
        return json.loads(f.readline())


def med(xs: list[float]) -> float:
    return round(statistics.median(xs), 4)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi")
    ap.add_argument("--ranks", default="8,32,64")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cluster", type=int, default=None)
    ap.add_argument("--per-node", default=None)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--compress", choices=["off", "gzip"], default="off")
    ap.add_argument("--lib", default=None)
    ap.add_argument("--no-off", action="store_true",
                    help="only the runs with the profiler (the program alone measured apart)")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    exe, probe = build / "bin" / "mpilens-exec", build / "tests" / "fin_probe"
    for p in (exe, probe):
        if not p.exists():
            print(f"finalize.py: {p} not found (make build MPI={a.mpi})", file=sys.stderr)
            return 2
    for np_ in [int(x) for x in a.ranks.split(",")]:
        line = launcher(a.mpi, np_, a.cluster, a.per_node)
        on: list[dict] = []
        off: list[dict] = []
        reduce_s: list[float] = []
        total_s: list[float] = []
        size = 0
        with tempfile.TemporaryDirectory(prefix="mpilens-fin-") as d:
            for k in range(a.runs):
                out = Path(d) / f"p{np_}-{k}.prof"
                on.append(run(line, [str(exe), str(probe), str(a.steps)],
                              {"MPILENS_OUTPUT": str(out), "MPILENS_COMPRESS": a.compress,
                               "MPILENS_FIN_TRACE": "1",
                               **({"MPILENS_LIB": str(Path(a.lib).resolve())} if a.lib else {})}, np_))
                if not a.no_off:
                    off.append(run(line, [str(probe), str(a.steps)], {}, np_))
                size = out.stat().st_size
                fin = header(out).get("profiler_finalize_s", {})
                reduce_s.append(fin.get("reduce", float("nan")))
                total_s.append(fin.get("total", float("nan")))
        if not off:  # --no-off
            off = [{"fin_max": float("nan"), "hwm0_kb": -1, "wall": float("nan")}]
        row = {
            "mpi": a.mpi, "ranks": np_, "lib": a.lib or str(build / "lib" / "libmpilens.so"), "where": f"vcluster {a.cluster}" if a.cluster is not None else "one host",
            "finalize_on_s": [round(r["fin_max"], 3) for r in on],
            "finalize_off_s": [round(r["fin_max"], 3) for r in off],
            "finalize_on_median_s": med([r["fin_max"] for r in on]),
            "finalize_off_median_s": med([r["fin_max"] for r in off]),
            "added_s": round(med([r["fin_max"] for r in on]) - med([r["fin_max"] for r in off]), 3),
            "rank0_hwm_on_kb": int(statistics.median(r["hwm0_kb"] for r in on)),
            "rank0_hwm_off_kb": int(statistics.median(r["hwm0_kb"] for r in off)),
            "wall_on_median_s": med([r["wall"] for r in on]),
            "wall_off_median_s": med([r["wall"] for r in off]),
            "profiler_finalize_reduce_s": [round(x, 4) for x in reduce_s],
            "profiler_finalize_total_s": [round(x, 4) for x in total_s],
            "profile_bytes": size, "bytes_per_rank": round(size / np_),
        }
        traces = [r["trace"] for r in on if r["trace"]]
        if traces:  # rank 0's steps (MPILENS_FIN_TRACE; a profiler without it prints none)
            names = [s[0] for s in traces[0]["steps"]]
            row["steps_s"] = {n: med([t["steps"][i][1] for t in traces])
                              for i, n in enumerate(names)}
            row["steps_rss_kb"] = {n: int(statistics.median(t["steps"][i][2] for t in traces))
                                   for i, n in enumerate(names)}
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
