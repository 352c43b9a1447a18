#!/usr/bin/env python3
"""Benchmark of the workload store (docs/store.md): adding and ingesting a synthesized
mix of jobs, one 16,384-rank job, the store's size per job, and the questions.

    .venv/bin/python bench/store/ingest.py REAL.prof [--jobs 1000] [--records 100000]
        [--big 16384] [--seed 1] [--dir /tmp/x] [--out RESULTS.json] [--doc docs/store.md]
    .venv/bin/python bench/store/ingest.py --table-from RESULTS.json --doc docs/store.md

REAL.prof is a real profile (e.g. of the bundled heat2d example, `make demo`).  N-rank
profiles are made from it once per rank count by bench/reader/synth.py; each job of
the mix is a copy whose header has its own job id, end time and command (one of APPS,
so that the store sees several applications).  The mix's rank counts are drawn
(seeded) from SMALL and LARGE: 99 % small jobs, a power of two from 4 to 64 (4 and 8 the
likeliest), 1 % large ones of 1,024 to 16,384 ranks.

Measured (wall seconds, and CPU seconds: user + system of this process, or of the
command it runs, os.wait4; the command's peak RSS the same way):
- `small`: `store add` of --jobs jobs of 4-64 ranks in this process (the profile
  read, its record built and spooled), then one ingest of them;
- `big`: add and ingest of one --big-rank job in this process, then the same as a
  command, as an epilog runs it: `mpilens store add --ingest STORE JOB`;
- `records`: --records records of the mix (records of the added jobs with new job
  keys, end times spread over 12 months and their times and counts scaled by a
  factor drawn per record, so that no two rows are alike), spooled, then ingested
  by the command `mpilens store ingest` (its peak RSS); the dataset is checked to
  hold --records distinct jobs; the store's size per job; then the questions over
  it, each as a query in this process and as the command (`mpilens store apps`,
  `mpilens store history` of one application with 1,000 runs, whose MPI share
  steps from 40 % to 45 % half-way, with noise).

One JSON object with the figures and their provenance (commit, host, CPUs, versions,
the command line, the real profile, the load average before and after) is printed
and written to --out; --doc rewrites the table between the markers
`<!-- store table: begin` and `<!-- store table: end -->` of that document from it,
and --table-from does only that, from a file --out wrote.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench" / "reader"))
import doctable  # noqa: E402  (bench/reader/doctable.py: the document's table)

APPS = ("heat2d", "hpcc", "lmp", "pw.x", "fft2d", "nekbone", "amg", "cp2k.psmp")
SMALL = ((4, 30), (8, 25), (16, 20), (32, 15), (64, 9))         # ranks, weight (99 %)
LARGE = ((1024, 0.5), (2048, 0.25), (4096, 0.15), (16384, 0.1))  # 1 %
# record fields a job's scale factor leaves alone: ratios, counts of ranks and nodes,
# size classes (everything else numeric is a time, a count of calls or of bytes)
FIXED = {"version", "nranks", "nnodes", "hosts", "ranks_missing", "mpi_pct", "mpi_pct_q",
         "latency_share", "median_size_bytes", "gain_pct", "confidence"}


def draw_ranks(rng: random.Random) -> int:
    pool = SMALL if rng.random() >= 0.01 else LARGE
    return rng.choices([p for p, _ in pool], weights=[w for _, w in pool])[0]


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Clock:
    """Wall and CPU seconds (this process, all its threads) of a `with` block."""

    def __enter__(self) -> Clock:
        self.t0, self.c0 = time.perf_counter(), cpu_s()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.t0, cpu_s() - self.c0


# Runs the commands measured and reports their rusage: started before this process
# grows, it is small when it forks them, and a child's peak RSS (ru_maxrss) starts
# from its parent's resident memory at the fork (Linux keeps it across exec).
LAUNCHER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    args, env = json.loads(line)
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
                      "peak_rss_mb": ru.ru_maxrss / 1024.0,
                      "exit": os.waitstatus_to_exitcode(status), "stderr": err}), flush=True)
"""
_launcher: list[subprocess.Popen[str]] = []


def start_launcher() -> None:
    _launcher.append(subprocess.Popen([sys.executable, "-c", LAUNCHER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True))


def stop_launcher() -> None:
    for proc in _launcher:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait()
    _launcher.clear()


def run(args: list[str]) -> dict[str, Any]:
    """`mpilens ARGS` as a child of the launcher: its wall and CPU seconds and peak RSS."""
    proc = _launcher[0]
    assert proc.stdin is not None and proc.stdout is not None
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    proc.stdin.write(json.dumps([[sys.executable, "-m", "mpilens.cli", *args], env]) + "\n")
    proc.stdin.flush()
    got = json.loads(proc.stdout.readline())
    err = got.pop("stderr")
    if got.pop("exit") != 0:
        raise SystemExit(f"bench/store/ingest.py: mpilens {' '.join(args)} failed: "
                         f"{err.strip().splitlines()[-1:]}")
    return got


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


def add(store: Path, paths: list[Path]) -> Clock:
    from mpilens.report.partial import load_any
    from mpilens.store import dataset, record

    with Clock() as c:
        for p in paths:
            rec = record.build(load_any([str(p)]), str(p), env={})
            dataset.spool_record(store, rec, sync_dir=False)
        dataset.sync_spool(store)
    return c


def scaled(x: Any, f: float, key: str = "") -> Any:
    """x with its times and counts (not FIXED) times f; integers stay integers."""
    if key in FIXED or isinstance(x, (str, bool)) or x is None:
        return x
    if isinstance(x, float):
        return x * f
    if isinstance(x, int):
        return round(x * f)
    if isinstance(x, list):
        return [scaled(v, f, key) for v in x]
    if isinstance(x, dict):
        return {k: scaled(v, f, k) for k, v in x.items()}
    return x


git, cpu_model = doctable.git, doctable.cpu_model  # the provenance's commit and CPU


def real_profile(real: Path) -> dict[str, Any]:
    with open(real, "rb") as f:
        data = f.read()
    header = json.loads((gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
                        .split(b"\n", 1)[0])
    return {"path": str(real), "sha256": hashlib.sha256(data).hexdigest(),
            "nranks": header.get("nranks"), "mpi_library": header.get("mpi_library")}


def provenance(a: argparse.Namespace) -> dict[str, Any]:
    import duckdb
    import numpy
    import pyarrow

    from mpilens.report import fastread

    lib = fastread._lib()
    return {
        "commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain")),
        "argv": [Path(sys.executable).name, *sys.argv],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(), "cpu_model": cpu_model(), "cpus": os.cpu_count(),
        "nice": os.nice(0), "loadavg_before": os.getloadavg(),
        "python": platform.python_version(), "duckdb": duckdb.__version__,
        "pyarrow": pyarrow.__version__, "numpy": numpy.__version__,
        "reader_library": lib._name if lib is not None else None,
        "real_profile": real_profile(a.real), "synth": "bench/reader/synth.py", "seed": a.seed,
        "mix": {"small (99 %)": dict(SMALL), "large (1 %)": dict(LARGE)}}


def measure(a: argparse.Namespace, work: Path) -> dict[str, Any]:
    import mpilens.store
    from mpilens.store import dataset, queries

    res: dict[str, Any] = {"provenance": provenance(a)}
    rng = random.Random(a.seed)
    t_end = datetime(2026, 1, 1, tzinfo=UTC)
    small_ranks = [draw_ranks(rng) for _ in range(a.jobs)]
    small_ranks = [n if n <= 64 else 64 for n in small_ranks]  # small: 4-64 ranks only
    bases = base_profiles(a.real, {*small_ranks, a.big}, work)

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
    c_add = add(st, paths)
    with Clock() as c_ing:
        ing = dataset.ingest(st)
    assert ing["added"] == a.jobs, ing
    small_pq = sum(p.stat().st_size for p in dataset.parquet_files(st))
    res["small"] = {
        "jobs": a.jobs, "add_s": c_add.wall, "add_cpu_s": c_add.cpu, "ingest_s": c_ing.wall,
        "ingest_cpu_s": c_ing.cpu, "add_and_ingest_jobs_per_s": a.jobs / (c_add.wall + c_ing.wall),
        "add_and_ingest_jobs_per_cpu_s": a.jobs / (c_add.cpu + c_ing.cpu),
        "parquet_bytes_per_job": small_pq / a.jobs,
        "record_json_bytes_mean": sum(len(json.dumps(record_of(p)).encode())
                                      for p in paths[:50]) / min(50, len(paths)),
        "ranks_drawn": {str(n): small_ranks.count(n) for n in sorted(set(small_ranks))},
        "peak_rss_mb": rss_mb()}

    # one big job: in this process, then as the command an epilog runs
    bp = jobs_dir / "big.prof"
    job_copy(bases[a.big], bp, 10**9, "bigapp", t_end)
    stb = work / "store-big"
    shutil.rmtree(stb, ignore_errors=True)
    c_add = add(stb, [bp])
    with Clock() as c_ing:
        assert dataset.ingest(stb)["added"] == 1
    stc = work / "store-big-command"
    shutil.rmtree(stc, ignore_errors=True)
    cmd = run(["store", "add", "--ingest", str(stc), str(bp)])
    res["big"] = {"ranks": a.big, "profile_bytes": bp.stat().st_size,
                  "add_s": c_add.wall, "add_cpu_s": c_add.cpu, "ingest_s": c_ing.wall,
                  "ingest_cpu_s": c_ing.cpu, "total_s": c_add.wall + c_ing.wall,
                  "total_cpu_s": c_add.cpu + c_ing.cpu, "command": cmd,
                  "parquet_bytes": sum(p.stat().st_size for p in dataset.parquet_files(stb))}

    # many records of the mix at once; size per job; the questions
    templates = [record_of(p) for p in paths[:200]]
    big_rec = record_of(bp)
    str_ = work / "store-records"
    shutil.rmtree(str_, ignore_errors=True)
    sp = dataset.spool_dir(str_)
    sp.mkdir(parents=True)
    mix = [draw_ranks(rng) for _ in range(a.records)]
    hist_app = APPS[1]
    every = max(1, a.records // 1000)
    others = [x for x in APPS if x != hist_app]
    t0 = time.perf_counter()
    for i, n in enumerate(mix):
        r = scaled(big_rec if n > 64 else templates[i % len(templates)],
                   rng.uniform(0.5, 2.0))
        r["job_key"] = f"r{i:08d}"
        r["job_id"] = str(i)
        r["nranks"] = n
        r["app"] = hist_app if i % every == 0 else rng.choice(others)
        end = t_end + timedelta(seconds=int(i * 365 * 86400 / a.records))
        r["end"] = end.strftime("%Y-%m-%dT%H:%M:%SZ")
        r["start"] = (end - timedelta(seconds=int(r["wall_s"]) + 1)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        # a shift in MPI share half-way through the year, for the history's change point
        r["mpi_pct"] = (40.0 if i < a.records // 2 else 45.0) + rng.gauss(0, 3)
        (sp / f"{r['job_key']}.json").write_text(json.dumps(r, separators=(",", ":")))
    t_spool = time.perf_counter() - t0
    ing = run(["store", "ingest", str(str_)])
    s = mpilens.store.open(str_)
    (jobs, keys), = [tuple(x.values()) for x in
                     s.rows("SELECT count(*) AS n, count(DISTINCT job_key) AS k FROM jobs")]
    assert jobs == keys == a.records, (jobs, keys)
    assert not any(sp.glob("*.json")), "records left in the spool"
    pq_bytes = sum(p.stat().st_size for p in dataset.parquet_files(str_))
    with Clock() as c_apps:
        rows = queries.apps(s)
    with Clock() as c_hist:
        hist = queries.history(s, hist_app)
    res["records"] = {
        "records": a.records, "jobs_in_dataset": jobs,
        "large_jobs": sum(1 for n in mix if n > 64),
        "ranks_drawn": {str(n): mix.count(n) for n in sorted(set(mix))},
        "spool_write_s": t_spool, "ingest": ing,
        "ingest_records_per_s": a.records / ing["wall_s"],
        "ingest_records_per_cpu_s": a.records / ing["cpu_s"],
        "files": len(dataset.parquet_files(str_)),
        "parquet_bytes": pq_bytes, "bytes_per_job": pq_bytes / a.records,
        "apps": len(rows), "apps_query": {"wall_s": c_apps.wall, "cpu_s": c_apps.cpu},
        "apps_command": run(["store", "apps", str(str_)]),
        "history_app": hist_app, "history_runs": len(hist["runs"]),
        "history_step_run": -(-(a.records // 2) // every),
        "history_query": {"wall_s": c_hist.wall, "cpu_s": c_hist.cpu},
        "history_command": run(["store", "history", str(str_), hist_app]),
        "history_change_points": [c["run"] for c in hist["change_points"]]}
    res["peak_rss_mb"] = rss_mb()
    res["provenance"]["loadavg_after"] = os.getloadavg()
    return res


_records: dict[str, dict] = {}


def record_of(p: Path) -> dict:
    from mpilens.report.partial import load_any
    from mpilens.store import record

    if str(p) not in _records:
        _records[str(p)] = record.build(load_any([str(p)]), str(p), env={})
    return _records[str(p)]


BEGIN = "<!-- store table: begin"
END = "<!-- store table: end -->"


def table(res: dict[str, Any]) -> str:
    """The document's table: each target and what was measured against it, CPU
    seconds first, and the command that measured them (paths relative to the checkout)."""
    sm, bg, rc = res["small"], res["big"], res["records"]
    bc = bg["command"]
    ing = rc["ingest"]

    def q(name: str) -> str:
        return (f"query {rc[name + '_query']['cpu_s']:.2f} s; command "
                f"{rc[name + '_command']['cpu_s']:.2f} s")

    def qw(name: str) -> str:
        return (f"query {rc[name + '_query']['wall_s']:.2f} s; command "
                f"{rc[name + '_command']['wall_s']:.2f} s")

    cps = ", ".join(f"{k:,}" for k in rc["history_change_points"]) or "none"
    rows = [
        ("ingest, small jobs (4 to 64 ranks)", "≥ 100 jobs/s",
         f"{sm['add_and_ingest_jobs_per_cpu_s']:,.0f} jobs/s",
         f"{sm['add_and_ingest_jobs_per_s']:,.0f} jobs/s",
         f"{sm['jobs']:,} jobs: `store add` in one process (read, record, spool) "
         f"{sm['add_cpu_s']:.1f} s CPU, then one ingest {sm['ingest_cpu_s']:.1f} s"),
        (f"ingest, one {bg['ranks']:,}-rank job", "≤ 2 s",
         f"{bg['total_cpu_s']:.2f} s; command {bc['cpu_s']:.2f} s",
         f"{bg['total_s']:.2f} s; command {bc['wall_s']:.2f} s",
         f"add {bg['add_cpu_s']:.2f} s + ingest {bg['ingest_cpu_s']:.2f} s; the command "
         f"`store add --ingest` as an epilog runs it, {bc['peak_rss_mb']:,.0f} MB"),
        (f"ingest {rc['records']:,} jobs of the mix", "≤ 30 min, ≤ 2 GB",
         f"{ing['cpu_s']:.0f} s, {ing['peak_rss_mb']:,.0f} MB",
         f"{ing['wall_s']:.0f} s",
         f"`store ingest` of {rc['records']:,} spooled records "
         f"({rc['large_jobs']:,} of 1,024 ranks or more): "
         f"{rc['jobs_in_dataset']:,} jobs in the dataset"),
        ("store size per job", "≤ 20 KB", f"{rc['bytes_per_job'] / 1024:.2f} KB", "",
         f"Parquet bytes / jobs, {rc['records']:,} jobs; "
         f"a record in the spool: {sm['record_json_bytes_mean'] / 1024:.1f} KB"),
        (f"workload by application, {rc['records']:,} jobs", "≤ 2 s", q("apps"), qw("apps"),
         f"`store apps`: {rc['apps']} applications"),
        (f"one application's history, {rc['history_runs']:,} runs", "≤ 1 s", q("history"),
         qw("history"), f"`store history`: change point at run {cps} "
         f"(the MPI share steps from 40 % to 45 % at run {rc['history_step_run']:,})"),
    ]
    out = ["| measure | target | CPU | wall | what |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    out += ["", "CPU seconds (user + system, of the benchmark's process or of the command "
            "it ran) are the figures to compare with the targets: the machine measured on "
            "was shared with other work, so wall seconds are longer than the work they "
            "measure (the load average before and after is in the results file)."]
    out += doctable.command_block(res.get("provenance", {}).get("argv", []))
    return "\n".join(out) + "\n"


def write_doc(doc: Path, res: dict[str, Any]) -> None:
    doctable.rewrite(doc, BEGIN, END, table(res), "bench/store/ingest.py")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real", type=Path, nargs="?")
    ap.add_argument("--jobs", type=int, default=1000, help="small jobs added (default 1000)")
    ap.add_argument("--records", type=int, default=100000,
                    help="records of the mix ingested at once (default 100000)")
    ap.add_argument("--big", type=int, default=16384, help="ranks of the big job")
    ap.add_argument("--dir", type=Path, default=None,
                    help="where the profiles and stores go (default: a temporary "
                    "directory, removed afterwards)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, help="write the figures and their provenance here")
    ap.add_argument("--doc", type=Path, help="rewrite the table between this document's "
                    "store-table markers from the figures")
    ap.add_argument("--table-from", type=Path, help="measure nothing: the table of --doc "
                    "from this file (written by --out)")
    a = ap.parse_args(argv)
    if a.table_from:
        if not a.doc:
            ap.error("--table-from needs --doc")
        try:
            res = json.loads(a.table_from.read_text())
            table(res)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"bench/store/ingest.py: cannot read --table-from {a.table_from}: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        write_doc(a.doc, res)
        return 0
    if not a.real:
        ap.error("give the real profile to synthesize from (or --table-from)")
    if not a.real.is_file():
        print(f"bench/store/ingest.py: {a.real}: no such profile", file=sys.stderr)
        return 2
    if a.jobs < 1 or a.records < 1000:
        ap.error("--jobs must be 1 or more and --records 1000 or more")
    try:
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        print("bench/store/ingest.py: needs the store's libraries: "
              "pip install -e '.[store]'", file=sys.stderr)
        return 2
    start_launcher()
    work = a.dir or Path(tempfile.mkdtemp(prefix="mpilens-store-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        res = measure(a, work)
    finally:
        stop_launcher()
        if a.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(res, indent=1)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    print(text)
    if a.doc:
        write_doc(a.doc, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
