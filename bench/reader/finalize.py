#!/usr/bin/env python3
"""The profiler's cost at MPI_Finalize against ranks, on this host (docs/scale.md).

    python3 bench/reader/finalize.py BUILD_DIR [--ranks 8,32,64] [--runs 2]

For each rank count, the bundled heat2d example (BUILD's, else this checkout's
build/openmpi one) (64 x 64 grid, 10 steps) runs under
mpilens-exec with the profiler on (MPILENS_OUTPUT in a temporary directory) and off
(MPILENS_PROFILE=off), --runs times each, oversubscribed.  Printed as JSON lines:
the job's wall time (mpirun start to exit) for both, the profile's
profiler_finalize_s.reduce (rank 0's end-of-run collectives) when the runtime
records it, and the profile's size.  Open MPI's mpirun (flags as the tests use).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def app_of(build: Path) -> Path:
    """The build's heat2d, else this checkout's (a build of the runtime alone)."""
    own = build / "examples" / "heat2d"
    return own if own.exists() else ROOT / "build" / "openmpi" / "examples" / "heat2d"


def run(build: Path, np_: int, env: dict[str, str]) -> float:
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np_),
           str(build / "bin" / "mpilens-exec"), str(app_of(build)), "64", "10", "5"]
    e = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none", MPILENS_QUIET="1", **env)
    t0 = time.monotonic()
    subprocess.run(cmd, env=e, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=900)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--ranks", default="8,32,64")
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    build = Path(a.build).resolve()
    for np_ in [int(x) for x in a.ranks.split(",")]:
        on, off, red, size = [], [], [], 0
        with tempfile.TemporaryDirectory(prefix="mpilens-fin-") as d:
            for k in range(a.runs):
                out = Path(d) / f"p{np_}-{k}.prof"
                on.append(run(build, np_, {"MPILENS_OUTPUT": str(out)}))
                off.append(run(build, np_, {"MPILENS_PROFILE": "off"}))
                with out.open() as f:
                    h = json.loads(f.readline())
                size = out.stat().st_size
                fin = h.get("profiler_finalize_s", {}).get("reduce")
                if fin is not None:
                    red.append(fin)
        print(json.dumps({"ranks": np_, "wall_on_s": [round(x, 2) for x in on],
                          "wall_off_s": [round(x, 2) for x in off],
                          "added_s_median": round(statistics.median(on) - statistics.median(off), 2),
                          "reduce_s": [round(x, 4) for x in red], "profile_bytes": size}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
