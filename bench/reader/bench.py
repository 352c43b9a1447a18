#!/usr/bin/env python3
"""Benchmark of the profile reader: time and peak RSS of `mpilens report`, `html`,
`diff` and `advise` on synthesized N-rank profiles (docs/scale.md).

    .venv/bin/python bench/reader/bench.py REAL.prof --ranks 1000,16000,100000 \
        [--commands report,html,diff,advise] [--timeout 900] [--gzip] [--dir /tmp/x]
        [--pythonpath OTHER_CHECKOUT/python]

Each N-rank profile is made once from REAL.prof by bench/reader/synth.py (kept
in --dir and reused).  Every command runs as its own process (`python -m
mpilens.cli ...`, output to /dev/null); its wall time and peak resident memory
(the child's ru_maxrss, os.wait4) are printed as one JSON object per
measurement, then a JSON summary.  A command still running after --timeout
seconds is killed and reported with "timeout": true.  The commands read with the
reader's fast path when the checkout has a build (lib/libmpilens_read.so, docs/scale.md);
MPILENS_FASTREAD=off in the environment measures the Python reader.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def command(name: str, prof: Path, work: Path) -> list[str]:
    py = [sys.executable, "-m", "mpilens.cli"]
    if name == "report":
        return py + ["report", str(prof)]
    if name == "report-json":
        return py + ["report", "--format", "json", str(prof)]
    if name == "html":
        return py + ["html", str(prof), "-o", str(work / (prof.stem + ".html")), "--force"]
    if name == "diff":
        return py + ["diff", str(prof), str(prof)]
    if name == "advise":
        return py + ["advise", "--model", str(model(prof, work)), str(prof)]
    raise SystemExit(f"bench: unknown command {name}")


def model(prof: Path, work: Path) -> Path:
    """A network model for the profile's hosts (the values of tests/test_advise.py):
    advise needs one measured on the job's hosts, which a synthesized job never ran on."""
    out = work / (prof.stem + ".model.json")
    with open(prof, "rb") as f:  # two bytes: reading it all here made the children's
        magic = f.read(2)        # peak RSS this process's (ru_maxrss is kept across exec)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(prof, "rt") as f:  # type: ignore[operator]
        header = json.loads(f.readline())
    out.write_text(json.dumps({
        "format": "mpilens-netmodel", "version": 1, "model": "plogp",
        "mpi_library": header["mpi_library"], "hosts": header["hosts"], "L_s": 2e-6,
        "sizes": [0, 64, 4096, 65536], "rtt_s": [6e-6, 7e-6, 14e-6, 160e-6],
        "os_s": [1e-6, 1.2e-6, 3e-6, 40e-6], "or_s": [0.8e-6, 1e-6, 2.5e-6, 35e-6],
        "g_s": [1e-6, 1.5e-6, 5e-6, 70e-6]}))
    return out


def measure(cmd: list[str], timeout: float, pythonpath: str) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    timed_out = False
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > timeout:
            proc.kill()
            pid, status, ru = os.wait4(proc.pid, 0)
            timed_out = True
            break
        time.sleep(0.05)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    rc = os.waitstatus_to_exitcode(status)
    out: dict[str, object] = {"seconds": round(wall, 2),
                              "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 2),
                              "peak_rss_mb": round(ru.ru_maxrss / 1024, 1),
                              "exit": rc, "timeout": timed_out}
    if rc not in (0, 1) and not timed_out:
        out["stderr"] = err.strip().splitlines()[-1:] if err.strip() else []
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real")
    ap.add_argument("--ranks", default="1000,16000,100000")
    ap.add_argument("--commands", default="report,html,diff,advise")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--gzip", action="store_true", help="synthesize compressed profiles")
    ap.add_argument("--dir", default="/tmp/mpilens-reader-bench")
    ap.add_argument("--pythonpath", default=str(ROOT / "python"),
                    help="the mpilens Python package to measure (default: this checkout's)")
    a = ap.parse_args()
    work = Path(a.dir)
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for n in [int(x) for x in a.ranks.split(",")]:
        prof = work / f"synth-{n}.prof{'.gz' if a.gzip else ''}"
        if not prof.exists():
            subprocess.run([sys.executable, str(HERE / "synth.py"), a.real, str(n), str(prof)]
                           + (["--gzip"] if a.gzip else []), check=True,
                           stdout=subprocess.DEVNULL)
        for name in a.commands.split(","):
            r = {"command": name, "ranks": n, "profile_mb": round(prof.stat().st_size / 2**20, 1),
                 **measure(command(name, prof, work), a.timeout, a.pythonpath)}
            if name == "html":
                page = work / (prof.stem + ".html")
                r["page_mb"] = round(page.stat().st_size / 2**20, 2) if page.exists() else None
            print(json.dumps(r), flush=True)
            results.append(r)
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
