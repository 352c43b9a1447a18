#!/usr/bin/env python3
"""Instructions mpilens adds per MPI call, counted with callgrind (noise-free).

Compiles bench/instr/instr_ops.c with the MPI's compiler wrapper, runs it as one
process under `valgrind --tool=callgrind` with libmpilens.so preloaded, once per
call-site depth (MPILENS_CALLSITES), and prints one JSON document: for each
operation the instructions per call natively (PMPI_*) and through mpilens
(MPI_*), and their difference.  See docs/bench.md ("instr").

Under callgrind every call lasts tens of times longer than natively, so the
timing policy (MPILENS_TIMING=sampled) would take every send, receive and wait
for a slow function and time them all.  The profiled runs therefore raise its
threshold (MPILENS_TIME_ABOVE_NS, --time-above-ns): the policy then decides as
it does natively for calls under 2 us, 1 call in 16 timed.  A second run per
depth with MPILENS_TIMING=all counts the timed path alone; the untimed path is
derived from the two (mix = (15 untimed + 1 timed) / 16).

    bench/instr/instr.py --mpi openmpi --prefix build/openmpi [--depths 0,1,2] [--calls 1024]
                         [--omit-frame-pointer]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MPICC = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich", "intelmpi": "mpicc"}
LAUNCH = {
    "openmpi": ["mpirun.openmpi", "-np", "1", "--allow-run-as-root", "--oversubscribe"],
    "mpich": ["mpiexec.mpich", "-n", "1"],
    "intelmpi": ["mpirun", "-n", "1"],
}
# per-op: MPI calls in one iteration
CALLS = {"comm_rank": 1, "send_recv": 2, "isend_recv_wait": 3, "allreduce": 1, "send_recv_dup": 2}


def fail(msg: str) -> None:
    print(f"instr: {msg}", file=sys.stderr)
    sys.exit(2)


def dumps(outdir: Path) -> dict[str, int]:
    """label -> instructions, from callgrind's client-request dumps."""
    got: dict[str, int] = {}
    for p in outdir.iterdir():
        if not p.name.startswith("cg."):
            continue
        label = total = None
        with p.open(errors="replace") as fh:
            for ln in fh:
                m = re.match(r"desc: Trigger: Client Request: (\S+)", ln)
                if m:
                    label = m.group(1)
                m = re.match(r"(?:totals|summary):\s+(\d+)", ln)
                if m:
                    total = int(m.group(1))
        if label and total is not None:
            got[label] = total
    return got


SAMPLE_PERIOD = 16  # the policy's 1 call in 16 (ML_SAMPLE_PERIOD)


def run_depth(exe: Path, lib: Path, launch: list[str], depth: int, calls: int, tmp: Path,
              extra_env: dict[str, str], tag: str) -> dict[str, int]:
    outdir = tmp / f"d{depth}{tag}"
    if outdir.exists():
        fail(f"--keep: {outdir} exists already (give a new or empty directory)")
    outdir.mkdir()
    env = dict(os.environ)
    env.update({"LD_PRELOAD": str(lib), "MPILENS_CALLSITES": str(depth),
                "MPILENS_OUTPUT": str(outdir / "p.prof"), "MPILENS_QUIET": "1",
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none"})
    env.update(extra_env)
    cmd = launch + ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--compress-strings=no",
                    f"--callgrind-out-file={outdir}/cg.%p", str(exe), str(calls)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if r.returncode != 0:
        fail(f"depth {depth}: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    got = dumps(outdir)
    if not got:
        fail(f"depth {depth}: no callgrind dumps in {outdir}")
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", required=True, choices=sorted(MPICC))
    ap.add_argument("--prefix", required=True, help="mpilens build or install prefix (lib/libmpilens.so)")
    ap.add_argument("--depths", default="0,1,2", help="MPILENS_CALLSITES values (default 0,1,2)")
    ap.add_argument("--calls", type=int, default=1024, help="iterations per loop (default 1024)")
    ap.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                    help="extra environment for the profiled runs (repeatable)")
    ap.add_argument("--omit-frame-pointer", action="store_true",
                    help="build instr_ops with -fomit-frame-pointer (default: with frame pointers)")
    ap.add_argument("--keep", metavar="DIR", help="keep the callgrind files in DIR")
    ap.add_argument("--time-above-ns", type=int, default=1000000, metavar="NS",
                    help="MPILENS_TIME_ABOVE_NS for the profiled runs (default 1000000: no call of "
                         "the benchmark is that slow even under callgrind, so the policy times 1 in 16 "
                         "as natively; 2000 is the profiler's default, under which callgrind's slowed "
                         "calls are all timed; 0 leaves it unset, for a build without the setting)")
    ap.add_argument("--no-timed", action="store_true",
                    help="skip the MPILENS_TIMING=all run (no timed/untimed split)")
    a = ap.parse_args()
    lib = Path(a.prefix).resolve() / "lib" / "libmpilens.so"
    if not lib.is_file():
        fail(f"--prefix {a.prefix}: {lib} not found")
    if not shutil.which("valgrind"):
        fail("valgrind not found (apt-get install valgrind)")
    try:
        depths = [int(x) for x in a.depths.split(",")]
    except ValueError:
        fail(f"--depths {a.depths!r}: expected integers from 0 to 8, comma-separated")
    if any(d < 0 or d > 8 for d in depths) or a.calls < 16:
        fail("--depths: 0..8; --calls: at least 16")
    extra = {}
    for kv in a.env:
        k, sep, v = kv.partition("=")
        if not sep or not k.startswith("MPILENS_"):
            fail(f"--env {kv!r}: expected MPILENS_NAME=VALUE")
        extra[k] = v
    if a.time_above_ns < 0:
        fail("--time-above-ns: 0 (the profiler's default) or more")
    if a.time_above_ns:
        extra.setdefault("MPILENS_TIME_ABOVE_NS", str(a.time_above_ns))
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="mpilens-instr-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        exe = tmp / "instr_ops"
        fp = "-fomit-frame-pointer" if a.omit_frame_pointer else "-fno-omit-frame-pointer"
        r = subprocess.run([MPICC[a.mpi], "-O2", "-g", fp,
                            str(HERE / "instr_ops.c"), "-o", str(exe)],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            fail(f"compiling instr_ops.c failed:\n{r.stderr}")
        res: dict[str, dict] = {}
        for d in depths:
            got = run_depth(exe, lib, LAUNCH[a.mpi], d, a.calls, tmp, extra, "")
            timed = None if a.no_timed else run_depth(exe, lib, LAUNCH[a.mpi], d, a.calls, tmp,
                                                      {**extra, "MPILENS_TIMING": "all"}, "t")
            per: dict[str, dict] = {}
            for op, k in CALLS.items():
                nat, prof = got.get(f"{op}/native"), got.get(f"{op}/profiled")
                if nat is None or prof is None:
                    fail(f"depth {d}: no count for {op}")
                row = {"mpi_calls_per_iter": k,
                       "native_per_iter": round(nat / a.calls, 1),
                       "profiled_per_iter": round(prof / a.calls, 1),
                       "added_per_iter": round((prof - nat) / a.calls, 1)}
                if timed is not None:
                    tn, tp = timed.get(f"{op}/native"), timed.get(f"{op}/profiled")
                    if tn is None or tp is None:
                        fail(f"depth {d}, MPILENS_TIMING=all: no count for {op}")
                    mix, tim = (prof - nat) / a.calls, (tp - tn) / a.calls
                    row["added_timed_per_iter"] = round(tim, 1)
                    # mix = ((P - 1) untimed + 1 timed) / P
                    row["added_untimed_per_iter"] = round((SAMPLE_PERIOD * mix - tim) / (SAMPLE_PERIOD - 1), 1)
                per[op] = row
            res[f"callsites_{d}"] = per
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    doc = {"format": "mpilens-bench", "family": "instr", "version": 1,
           "options": {"mpi": a.mpi, "prefix": str(Path(a.prefix).resolve()), "calls": a.calls,
                       "omit_frame_pointer": a.omit_frame_pointer, "depths": depths, "env": extra},
           "unit": "instructions (callgrind Ir) per loop iteration, loop overhead included in both",
           "paths": {"added_per_iter": f"with MPILENS_TIME_ABOVE_NS "
                                       f"{extra.get('MPILENS_TIME_ABOVE_NS', 'unset')}: as natively, "
                                       f"1 call in {SAMPLE_PERIOD} timed, if no call lasts that long",
                     "added_timed_per_iter": "every call timed (MPILENS_TIMING=all)",
                     "added_untimed_per_iter": f"derived: ({SAMPLE_PERIOD} x added - timed) / {SAMPLE_PERIOD - 1}"},
           "results": res}
    json.dump(doc, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
