#!/usr/bin/env python3
"""Benchmark of the profile reader: time and peak RSS of `mpilens report`, `html`,
`diff` and `advise` on synthesized N-rank profiles (docs/scale.md).

    .venv/bin/python bench/reader/bench.py REAL.prof --ranks 1000,16000,100000 \
        [--commands report,html,diff,advise] [--timeout 900] [--gzip] [--dir /tmp/x]
        [--per-node 32] [--seed 1] [--group 16] [--pythonpath OTHER_CHECKOUT/python]
        [--out RESULTS.json] [--doc docs/scale.md]
    .venv/bin/python bench/reader/bench.py --table-from RESULTS.json --doc docs/scale.md

Each N-rank profile is made once from REAL.prof by bench/reader/synth.py (kept
in --dir and reused; its name holds the synthesis parameters).  Every command
runs as its own process (`python -m mpilens.cli ...`, output to /dev/null); its
wall time, CPU time (user + system) and peak resident memory (the child's
ru_utime, ru_stime and ru_maxrss, os.wait4) are printed as one JSON object per
measurement, then a JSON summary.  A command still running after --timeout
seconds is killed and reported with "timeout": true.  The commands read with the
reader's fast path when the checkout has a build (lib/libmpilens_read.so,
docs/scale.md); the command `report-python` is `report` with MPILENS_FASTREAD=off
(the Python reader), and MPILENS_FASTREAD=off in the environment measures the
Python reader for every command.

--out writes the summary with its provenance (commit, argv, CPU model, load
average before and after, the real profile, the synthesis parameters, the
reader library) to a file; --doc rewrites the table between the markers
`<!-- reader table: begin` and `<!-- reader table: end -->` of that document
from the results (CPU seconds and peak RSS per command and rank count), and
--table-from does only that, from a file --out wrote.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import doctable  # bench/reader/doctable.py, beside this script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def command(name: str, prof: Path, work: Path) -> list[str]:
    py = [sys.executable, "-m", "mpilens.cli"]
    if name in ("report", "report-python"):
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


def measure(cmd: list[str], timeout: float, pythonpath: str,
            extra_env: dict[str, str] | None = None) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=pythonpath, **(extra_env or {}))
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
    if rc != 0 and not timed_out:  # a traceback, an out-of-memory line: no measurement
        out["stderr"] = err.strip().splitlines()[-1:] if err.strip() else []
    return out


git, cpu_model = doctable.git, doctable.cpu_model  # the provenance's commit and CPU


def reader_library(pythonpath: str) -> str | None:
    """The fast reader's library the measured checkout loads (None: the Python reader)."""
    code = ("from mpilens.report import fastread; lib = fastread._lib(); "
            "print(lib._name if lib is not None else '')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=pythonpath), check=False)
    return proc.stdout.strip() or None


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def provenance(a: argparse.Namespace, real: Path) -> dict[str, Any]:
    with open(real, "rb") as f:
        opener = gzip.open if f.read(2) == b"\x1f\x8b" else open
    with opener(real, "rt") as f:  # type: ignore[operator]
        header = json.loads(f.readline())
        lines = [ln for ln in f if ln.strip()]
    return {
        "commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain")),
        "argv": [Path(sys.executable).name, *sys.argv],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(), "cpu_model": cpu_model(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "loadavg_before": os.getloadavg(),
        "reader_library": reader_library(a.pythonpath),
        "MPILENS_FASTREAD": os.environ.get("MPILENS_FASTREAD"),
        "real_profile": {"path": str(real), "sha256": sha256(real),
                         "nranks": header.get("nranks"),
                         "mpi_library": header.get("mpi_library"),
                         "bytes_per_rank_line": (sum(len(ln) for ln in lines) // len(lines)
                                                 if lines else 0)},
        "synth": {"script": "bench/reader/synth.py", "per_node": a.per_node, "seed": a.seed,
                  "gzip": a.gzip, "group": a.group if a.gzip else None}}


BEGIN = "<!-- reader table: begin"
END = "<!-- reader table: end -->"
LABELS = {"report": "`report`", "report-json": "`report --format json`", "html": "`html`",
          "diff": "`diff` (the profile with itself)", "advise": "`advise`",
          "report-python": "`report`, the Python reader (`MPILENS_FASTREAD=off`)"}


def cell(r: dict[str, Any]) -> str:
    if r.get("timeout"):
        return f"> {r['seconds']:g} s (stopped)"
    if r.get("exit") != 0:
        return f"exit {r['exit']}"
    return f"{r['cpu_seconds']:.1f} s, {r['peak_rss_mb']:,.0f} MB"


def table(summary: dict[str, Any]) -> str:
    """The document's table: CPU seconds and peak RSS per command and rank count, and
    the command that measured them (its argv, paths relative to the checkout)."""
    results = summary["results"]
    ranks = sorted({r["ranks"] for r in results})
    names = list(dict.fromkeys(r["command"] for r in results))
    by = {(r["command"], r["ranks"]): r for r in results}
    out = ["| command | " + " | ".join(f"{n:,} ranks" for n in ranks) + " |",
           "|---|" + "---|" * len(ranks)]
    for name in names:
        out.append(f"| {LABELS.get(name, name)} | "
                   + " | ".join(cell(by[name, n]) if (name, n) in by else "" for n in ranks)
                   + " |")
    out += doctable.command_block(summary.get("provenance", {}).get("argv", []))
    return "\n".join(out) + "\n"


def write_doc(doc: Path, summary: dict[str, Any]) -> None:
    doctable.rewrite(doc, BEGIN, END, table(summary), "bench/reader/bench.py")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real", nargs="?")
    ap.add_argument("--ranks", default="1000,16000,100000")
    ap.add_argument("--commands", default="report,html,diff,advise")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--gzip", action="store_true", help="synthesize compressed profiles")
    ap.add_argument("--per-node", type=int, default=32, help="synth.py --per-node")
    ap.add_argument("--seed", type=int, default=1, help="synth.py --seed")
    ap.add_argument("--group", type=int, default=16, help="synth.py --group (with --gzip)")
    ap.add_argument("--dir", default="/tmp/mpilens-reader-bench")
    ap.add_argument("--pythonpath", default=str(ROOT / "python"),
                    help="the mpilens Python package to measure (default: this checkout's)")
    ap.add_argument("--out", type=Path, help="write the summary and its provenance here")
    ap.add_argument("--doc", type=Path, help="rewrite the table between this document's "
                    "reader-table markers from the results")
    ap.add_argument("--table-from", type=Path, help="measure nothing: the table of --doc "
                    "from this file (written by --out)")
    a = ap.parse_args()
    if a.table_from:
        if not a.doc:
            ap.error("--table-from needs --doc")
        try:
            summary = json.loads(a.table_from.read_text())
        except (OSError, ValueError) as exc:
            print(f"bench/reader/bench.py: cannot read --table-from {a.table_from}: {exc}",
                  file=sys.stderr)
            return 2
        write_doc(a.doc, summary)
        return 0
    if not a.real:
        ap.error("give the real profile to synthesize from (or --table-from)")
    work = Path(a.dir)
    work.mkdir(parents=True, exist_ok=True)
    prov = provenance(a, Path(a.real))
    results = []
    params = f"pn{a.per_node}-s{a.seed}" + (f"-g{a.group}" if a.gzip else "")
    for n in [int(x) for x in a.ranks.split(",")]:
        prof = work / f"synth-{n}-{params}.prof{'.gz' if a.gzip else ''}"
        if not prof.exists():
            subprocess.run([sys.executable, str(HERE / "synth.py"), a.real, str(n), str(prof),
                            "--per-node", str(a.per_node), "--seed", str(a.seed)]
                           + (["--gzip", "--group", str(a.group)] if a.gzip else []),
                           check=True, stdout=subprocess.DEVNULL)
        for name in a.commands.split(","):
            extra = {"MPILENS_FASTREAD": "off"} if name == "report-python" else None
            r = {"command": name, "ranks": n, "profile_mb": round(prof.stat().st_size / 2**20, 1),
                 **measure(command(name, prof, work), a.timeout, a.pythonpath, extra)}
            if name == "html":
                page = work / (prof.stem + ".html")
                r["page_mb"] = round(page.stat().st_size / 2**20, 2) if page.exists() else None
            print(json.dumps(r), flush=True)
            results.append(r)
    prov["loadavg_after"] = os.getloadavg()
    summary = {"provenance": prov, "results": results}
    print(json.dumps({"results": results}))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(summary, indent=1) + "\n")
    if a.doc:
        write_doc(a.doc, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
