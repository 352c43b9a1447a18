#!/usr/bin/env python3
"""Benchmark of the workload store (docs/store.md): adding and ingesting a synthesized
mix of jobs, one 16,384-rank job, the store's size per job, and the questions.

    PYTHONPATH=python .venv/bin/python bench/store/ingest.py REAL.prof \
        [--jobs 1000] [--records 20000] [--big 16384] [--dir /tmp/x] [--out result.json]

REAL.prof is a real profile (e.g. of the bundled heat2d example).  N-rank profiles
are made from it once per rank count by bench/reader/synth.py; each job of the mix is
a copy whose header has its own job id, end time and command (one of APPS, so that
the store sees several applications).  The mix's rank counts are drawn (seeded) from
MIX: 99 % small jobs, a power of two from 4 to 64 (4 and 8 the likeliest), 1 % large
ones of 1,024 to 16,384 ranks.

Measured, in this process (wall time, peak RSS of the process):
- `small`: `store add` of --jobs jobs of 4-64 ranks (the profile read, its record
  built and spooled), then one ingest of them: jobs per second of each and of both;
- `big`: add and ingest of one --big-rank job;
- `records`: --records records of the mix (the added ones, copied with new job keys
  and end times spread over 12 months) spooled and ingested at once, the store's size
  per job, then the questions over it: `apps`, and `history` of one application with
  1,000 runs.

One JSON object with the figures and their provenance (commit, host, CPUs, versions,
the command line) goes to --out (default: printed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench" / "reader"))

APPS = ("heat2d", "hpcc", "lmp", "pw.x", "fft2d", "nekbone", "amg", "cp2k.psmp")
SMALL = ((4, 30), (8, 25), (16, 20), (32, 15), (64, 9))         # ranks, weight (99 %)
LARGE = ((1024, 0.5), (2048, 0.25), (4096, 0.15), (16384, 0.1))  # 1 %


def draw_ranks(rng: random.Random) -> int:
    pool = SMALL if rng.random() >= 0.01 else LARGE
    return rng.choices([p for p, _ in pool], weights=[w for _, w in pool])[0]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def base_profiles(real: Path, counts: set[int], work: Path) -> dict[int, Path]:
    import synth

    out = {}
    for n in sorted(counts):
        p = work / f"base-{n}.prof"
        if not p.exists():
            synth.main([str(real), str(n), str(p)])
        out[n] = p
    return out


def job_copy(base: Path, dest: Path, i: int, app: str, end: datetime) -> None:
    """base with its own job id, end time and command (header line rewritten)."""
    with base.open("rb") as f:
        header = json.loads(f.readline())
        rest = f.read()
    header["job_id"] = f"bench-{i}"
    header["created"] = end.strftime("%Y-%m-%dT%H:%M:%SZ")
    header["command"] = f"/apps/{app}/bin/{app} input-{i % 7}"
    dest.write_bytes(json.dumps(header).encode() + b"\n" + rest)


def add(store: Path, paths: list[Path]) -> float:
    from mpilens.report.partial import load_any
    from mpilens.store import dataset, record

    t0 = time.perf_counter()
    for p in paths:
        rec = record.build(load_any([str(p)]), str(p), env={})
        dataset.spool_record(store, rec, sync_dir=False)
    dataset.sync_spool(store)
    return time.perf_counter() - t0


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real", type=Path)
    ap.add_argument("--jobs", type=int, default=1000, help="small jobs added (default 1000)")
    ap.add_argument("--records", type=int, default=20000,
                    help="records of the mix ingested at once (default 20000)")
    ap.add_argument("--big", type=int, default=16384, help="ranks of the big job")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    import duckdb
    import pyarrow

    import mpilens.store
    from mpilens.store import dataset, queries

    work = a.dir or Path(f"/tmp/mpilens-store-bench-{os.getpid()}")
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(a.seed)
    t_end = datetime(2026, 1, 1, tzinfo=UTC)
    small_ranks = [draw_ranks(rng) for _ in range(a.jobs)]
    small_ranks = [n if n <= 64 else 64 for n in small_ranks]  # small: 4-64 ranks only
    bases = base_profiles(a.real, {*small_ranks, a.big}, work)
    res: dict[str, object] = {}

    # small jobs: add, then ingest
    jobs_dir = work / "jobs"
    shutil.rmtree(jobs_dir, ignore_errors=True)
    jobs_dir.mkdir()
    paths = []
    for i, n in enumerate(small_ranks):
        p = jobs_dir / f"job-{i}.prof"
        job_copy(bases[n], p, i, APPS[i % len(APPS)], t_end + timedelta(minutes=i))
        paths.append(p)
    st = work / "store-small"
    shutil.rmtree(st, ignore_errors=True)
    t_add = add(st, paths)
    t0 = time.perf_counter()
    ing = dataset.ingest(st)
    t_ing = time.perf_counter() - t0
    assert ing["added"] == a.jobs, ing
    spool_bytes = sum(len(json.dumps(record_of(p)).encode()) for p in paths[:50]) / 50
    small_pq = sum(p.stat().st_size for p in dataset.parquet_files(st))
    res["small"] = {"jobs": a.jobs, "parquet_bytes_per_job": small_pq / a.jobs, "add_s": t_add, "ingest_s": t_ing,
                    "add_jobs_per_s": a.jobs / t_add, "ingest_jobs_per_s": a.jobs / t_ing,
                    "add_and_ingest_jobs_per_s": a.jobs / (t_add + t_ing),
                    "record_json_bytes_mean": spool_bytes,
                    "ranks_drawn": {str(n): small_ranks.count(n) for n in sorted(set(small_ranks))}}

    # one big job
    bp = jobs_dir / "big.prof"
    job_copy(bases[a.big], bp, 10**9, "bigapp", t_end)
    stb = work / "store-big"
    shutil.rmtree(stb, ignore_errors=True)
    t_add_big = add(stb, [bp])
    t0 = time.perf_counter()
    dataset.ingest(stb)
    res["big"] = {"ranks": a.big, "profile_bytes": bp.stat().st_size, "add_s": t_add_big,
                  "ingest_s": time.perf_counter() - t0,
                  "parquet_bytes": sum(p.stat().st_size for p in dataset.parquet_files(stb))}
    res["big"]["total_s"] = res["big"]["add_s"] + res["big"]["ingest_s"]  # type: ignore[index]

    # many records of the mix at once; size per job; the questions
    templates = [record_of(p) for p in paths[:200]]
    big_rec = record_of(bp)
    str_ = work / "store-records"
    shutil.rmtree(str_, ignore_errors=True)
    sp = dataset.spool_dir(str_)
    sp.mkdir(parents=True)
    mix = [draw_ranks(rng) for _ in range(a.records)]
    hist_app = APPS[1]
    t0 = time.perf_counter()
    for i, n in enumerate(mix):
        r = dict(big_rec if n > 64 else templates[i % len(templates)])
        r["job_key"] = f"r{i:08d}"
        r["job_id"] = str(i)
        r["nranks"] = n
        r["app"] = hist_app if i % max(1, a.records // 1000) == 0 else \
            rng.choice([x for x in APPS if x != hist_app])
        end = t_end + timedelta(seconds=int(i * 365 * 86400 / a.records))
        r["end"] = end.strftime("%Y-%m-%dT%H:%M:%SZ")
        r["start"] = (end - timedelta(seconds=int(r["wall_s"]) + 1)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        # a shift in MPI share half-way through the year, for the history's change point
        r["mpi_pct"] = (40.0 if i < a.records // 2 else 45.0) + rng.gauss(0, 3)
        (sp / f"{r['job_key']}.json").write_text(json.dumps(r, separators=(",", ":")))
    t_spool = time.perf_counter() - t0
    t0 = time.perf_counter()
    ing = dataset.ingest(str_)
    t_ing_rec = time.perf_counter() - t0
    assert ing["added"] == a.records, ing
    pq_bytes = sum(p.stat().st_size for p in dataset.parquet_files(str_))
    s = mpilens.store.open(str_)
    t0 = time.perf_counter()
    rows = queries.apps(s)
    t_apps = time.perf_counter() - t0
    t0 = time.perf_counter()
    hist = queries.history(s, hist_app)
    t_hist = time.perf_counter() - t0
    res["records"] = {
        "records": a.records, "large_jobs": sum(1 for n in mix if n > 64),
        "spool_write_s": t_spool, "ingest_s": t_ing_rec,
        "ingest_records_per_s": a.records / t_ing_rec, "files": len(ing["files"]),
        "parquet_bytes": pq_bytes, "bytes_per_job": pq_bytes / a.records,
        "apps_s": t_apps, "apps": len(rows),
        "history_runs": len(hist["runs"]), "history_s": t_hist,
        "history_change_points": [c["run"] for c in hist["change_points"]]}
    res["peak_rss_mb"] = rss_mb()
    res["provenance"] = {
        "commit": commit(), "host": platform.node(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "duckdb": duckdb.__version__,
        "pyarrow": pyarrow.__version__, "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable, *sys.argv]), "real_profile": str(a.real),
        "seed": a.seed,
        "mix": {"small (99 %)": dict(SMALL), "large (1 %)": dict(LARGE)},
        "loadavg": os.getloadavg()}
    text = json.dumps(res, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    return 0


_records: dict[str, dict] = {}


def record_of(p: Path) -> dict:
    from mpilens.report.partial import load_any
    from mpilens.store import record

    if str(p) not in _records:
        _records[str(p)] = record.build(load_any([str(p)]), str(p), env={})
    return _records[str(p)]


if __name__ == "__main__":
    sys.exit(main())
