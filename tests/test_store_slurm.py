"""The store's Slurm epilog (examples/slurm/mpilens-epilog, docs/store.md) under a real
Slurm on the virtual cluster, as a site runs it: the epilog installed in slurm.conf,
the jobs profiled by the TaskProlog (examples/slurm/mpilens-task-prolog).

- 64 jobs released at once end together, each job's epilog adds its profile to one
  store's spool, and the ingest finds the 64 jobs, none lost or duplicated.  These
  jobs run no MPI: each writes, as the TaskProlog's profile would be named, a copy of
  a real profile of the bundled example with the job's own id in its header (the
  store tells jobs apart by it).
- Real applications as batch jobs over two nodes, profiled by the TaskProlog with no
  change to them: the bundled example, and with Open MPI Debian's LAMMPS and HPC
  Challenge; one LAMMPS run (the bundled example under MPICH) killed at its time
  limit.  Each job's record holds its profile's totals exactly, and says how the job
  ended.

Slurm, its prologs and epilogs on the nodes, the applications and the store are real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BUILD, FLAVOUR, REPO, mpi_env, read_profile
from test_cli_support import example, real_profile
from test_cluster import make_cluster, vc
from test_slurm import END_TIME_LINE, _start_up_race_text

pytest.importorskip("duckdb", reason="duckdb is in the test extra (.ci/setup --test)")
import mpilens.store  # noqa: E402
from mpilens.store import dataset  # noqa: E402

CLUSTER_ID = {"openmpi": 21, "mpich": 22}.get(FLAVOUR, 23)
NODES = 3
SLOTS = 8           # CPUs per node as Slurm sees them: the applications' jobs run at once
JOBS = 64
DEADLINE = 180.0
LIMIT_MARGIN = 50   # the time-limit job's MPILENS_DUMP_MARGIN: its first dump 10 s in
PROLOG = REPO / "examples" / "slurm" / "mpilens-task-prolog"
# Debian's hpcc and lmp are linked to Debian's Open MPI
HPCC = shutil.which("hpcc") if FLAVOUR == "openmpi" else None
LMP = shutil.which("lmp") if FLAVOUR == "openmpi" else None

pytestmark = pytest.mark.skipif(FLAVOUR not in ("openmpi", "mpich"),
                                reason="the virtual cluster's Slurm runs with Open MPI and MPICH")


def _tool(conf: str, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), env={**os.environ, "SLURM_CONF": conf},
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, f"{' '.join(args)}: {proc.stderr}"
    return proc


@dataclass
class Site:
    state: dict
    conf: str
    store: Path


@pytest.fixture(scope="module")
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The cluster with Slurm, and the example epilog in its slurm.conf, adding every
    job's profile to one store (each test ingests what its jobs spooled)."""
    cluster = make_cluster(request, CLUSTER_ID, "--nodes", str(NODES), "--rails", "1",
                           "--slots", str(SLOTS), "--slurm")
    conf = cluster.state["slurm"]["conf"]
    top = tmp_path_factory.mktemp("site")
    store = top / "store"
    bindir = top / "bin"
    bindir.mkdir()
    shim = bindir / "mpilens"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'python'} exec {sys.executable} "
                    f"-m mpilens.cli \"$@\"\n")
    shim.chmod(0o755)
    # the site's wrapper: the store and the command, then the example epilog as it is
    epilog = top / "epilog.sh"
    epilog.write_text(f"#!/bin/sh\nexport MPILENS_STORE={store} MPILENS={shim} "
                      f"SLURM_CONF={conf}\n"
                      f"exec {REPO / 'examples' / 'slurm' / 'mpilens-epilog'}\n")
    epilog.chmod(0o755)
    with open(conf, "a") as f:
        f.write(f"Epilog={epilog}\n")
    _tool(conf, "scontrol", "reconfigure")
    deadline = time.monotonic() + 30
    while f"{epilog}" not in _tool(conf, "scontrol", "show", "config").stdout:
        assert time.monotonic() < deadline, "slurm.conf's Epilog not taken"
        time.sleep(0.5)
    time.sleep(2)  # the slurmds' reconfiguration
    return Site(cluster.state, conf, store)


def _wait_gone(conf: str, ids: list[str], timeout: float) -> None:
    """Until squeue lists none of the jobs (it lists a job until its epilogs are done)."""
    deadline = time.monotonic() + timeout
    while True:
        q = _tool(conf, "squeue", "-h", "-j", ",".join(ids), "-o", "%i %T").stdout
        if not q.strip():
            return
        assert time.monotonic() < deadline, f"jobs not ended: {q[:500]}"
        time.sleep(0.5)


def _spooled(store: Path, n: int, timeout: float) -> list[Path]:
    spool = store / "spool"
    deadline = time.monotonic() + timeout
    while len(list(spool.glob("*.json"))) < n and time.monotonic() < deadline:
        time.sleep(0.5)
    return sorted(spool.glob("*.json"))


def test_64_jobs_ending_at_once(site: Site, tmp_path: Path) -> None:
    conf, store = site.conf, site.store
    real = real_profile(4)
    work = tmp_path / "jobs"
    work.mkdir()
    script = work / "job.sh"
    script.write_text("#!/bin/sh\n"
                      f"sed '1s/\"job_id\":\"[^\"]*\"/\"job_id\":\"'$SLURM_JOB_ID'\"/' {real} "
                      "> mpilens-$SLURM_JOB_ID.prof\n")
    ids = []
    for _ in range(JOBS):
        out = _tool(conf, "sbatch", "--parsable", "--hold", "-N", "1", "-n", "1",
                    "-o", "/dev/null", "-D", str(work), str(script)).stdout
        ids.append(out.strip().split(";")[0])
    _tool(conf, "scontrol", "release", ",".join(ids))
    _wait_gone(conf, ids, DEADLINE)
    spool = store / "spool"
    assert len(_spooled(store, JOBS, DEADLINE)) == JOBS
    assert not [p for p in spool.iterdir() if not p.name.endswith(".json")]
    res = dataset.ingest(store)
    assert (res["added"], res["duplicates"], res["rejected"]) == (JOBS, 0, [])
    jobs = mpilens.store.open(store).rows(
        "SELECT job_id, user, ending, nranks FROM jobs WHERE job_id IN "
        f"({','.join('?' * len(ids))})", ids)
    assert sorted(j["job_id"] for j in jobs) == sorted(ids)
    assert {(j["user"], j["ending"], j["nranks"]) for j in jobs} == {("root", "completed", 4)}
    ended = {p.name for p in work.glob("mpilens-*.prof")}
    assert ended == {f"mpilens-{i}.prof" for i in ids}


# ---------------------------------------------------------------- real applications

@dataclass
class App:
    name: str        # the store's application name (the executable's)
    argv: list[str]  # what srun starts
    limit: bool      # killed at its time limit (--time=1)
    dir: Path = Path()
    job_id: str = ""
    retried: tuple[str, ...] = ()


def _apps(tmp_path: Path) -> list[App]:
    heat = example("heat2d")
    apps = [App("heat2d", [str(heat), "64", "200", "50"], False)]
    if LMP and HPCC:
        melt = REPO / "tests" / "data" / "lammps-melt.in"
        endless = tmp_path / "melt-endless.in"   # the melt, run far beyond a minute
        endless.write_text(melt.read_text().replace("run\t\t100", "run\t\t100000000"))
        apps += [App("lmp", [LMP, "-in", str(melt), "-log", "none"], False),
                 App("hpcc", [HPCC], False),
                 App("lmp", [LMP, "-in", str(endless), "-log", "none"], True)]
    else:  # MPICH: the bundled example is the job killed at its limit
        apps.append(App("heat2d", [str(heat), "64", "100000000", "1000000"], True))
    return apps


def _submit(site: Site, app: App) -> str:
    """The job: a batch script running the application under srun, 4 tasks on 2 nodes,
    profiled by the TaskProlog (the application unchanged, no mpilens-exec)."""
    line = vc.srun_line(site.state, FLAVOUR, 4, 2)
    lines = ["#!/bin/sh"]
    if app.limit:
        lines.append(END_TIME_LINE)  # docs/slurm.md's line: Slurm 22.05 sets none
        run = [line[0], f"--task-prolog={PROLOG}", *line[1:]]
    else:  # a rank that dies ends the step at once (the start-up race: _run_all)
        run = [line[0], "-K", f"--task-prolog={PROLOG}", *line[1:]]
    lines.append("exec " + " ".join([*run, *app.argv]))
    script = app.dir / "job.sh"
    script.write_text("\n".join(lines) + "\n")
    env = mpi_env({"SLURM_CONF": site.conf, "MPILENS_PREFIX": str(BUILD)})
    if app.limit:
        env["MPILENS_DUMP_MARGIN"] = str(LIMIT_MARGIN)
    opts = ["--time=1"] if app.limit else ["--time=10"]
    proc = subprocess.run(["sbatch", "--parsable", *opts, "-N", "2", "-n", "4",
                           "-o", str(app.dir / "out-%j.txt"), str(script)], env=env,
                          cwd=app.dir, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def _state(conf: str, job_id: str) -> str:
    out = _tool(conf, "scontrol", "-o", "show", "job", job_id).stdout
    return out.split("JobState=", 1)[1].split()[0]


def _run_all(site: Site, apps: list[App]) -> None:
    """Every job submitted at once (the time-limit one first); a job that must succeed
    and failed of exactly Open MPI's start-up race (test_slurm) is submitted again once."""
    for app in sorted(apps, key=lambda a: not a.limit):
        app.job_id = _submit(site, app)
    for app in apps:
        _wait_gone(site.conf, [app.job_id], DEADLINE)
        out = app.dir / f"out-{app.job_id}.txt"
        text = out.read_text(errors="replace") if out.is_file() else ""
        if not app.limit and _state(site.conf, app.job_id) != "COMPLETED" \
                and _start_up_race_text(text):
            warnings.warn(f"job {app.job_id} submitted again after Open MPI's TCP start-up "
                          "race: " + text[-300:])
            app.retried = (app.job_id,)
            app.job_id = _submit(site, app)
            _wait_gone(site.conf, [app.job_id], DEADLINE)


def _totals(prof: Path) -> dict[str, dict]:
    """Every function's calls and bytes over the job's ranks, from the profile: the job
    totals of a complete one (checked against its rank lines), the sums of the ranks'
    last dumps (rank-N) of a partial one."""
    if prof.is_dir():
        dumps = [read_profile(prof / f"rank-{r}") for r in range(4)]
        assert [d[0]["rank"] for d in dumps] == [0, 1, 2, 3], sorted(os.listdir(prof))
        lines = [d[1][0] for d in dumps]
    else:
        header, lines = read_profile(prof)
        assert sorted(ln["rank"] for ln in lines) == [0, 1, 2, 3]
        assert header["functions"]["MPI_Finalize"]["calls"] == 4
    out: dict[str, dict] = {}
    for ln in lines:
        for name, f in ln["functions"].items():
            t = out.setdefault(name, {"calls": 0, "bytes_sent": 0, "bytes_recv": 0})
            for k in t:
                t[k] += f.get(k, 0)
    if not prof.is_dir():
        assert {n: f["calls"] for n, f in header["functions"].items()} == \
            {n: f["calls"] for n, f in out.items()}
    return out


def _check_record(s: mpilens.store.Store, app: App, job: dict) -> None:
    """The job's record against its profile: the application, ranks, nodes, every
    function's calls and bytes exactly."""
    prof = app.dir / (f"mpilens-{app.job_id}.prof.gz" + (".partial" if app.limit else ""))
    assert prof.exists(), sorted(p.name for p in app.dir.iterdir())
    assert (job["app"], job["nranks"], job["nnodes"]) == (app.name, 4, 2), job
    got = {f["function"]: f for f in s.rows("SELECT * FROM functions WHERE job_key = ?",
                                            [job["job_key"]])}
    totals = _totals(prof)
    assert totals["MPI_Init"]["calls"] == 4 and set(got) == set(totals), \
        (sorted(got), sorted(totals))
    for name, f in totals.items():
        assert (got[name]["calls"], got[name]["bytes_sent"], got[name]["bytes_recv"]) == \
            (f["calls"], f["bytes_sent"], f["bytes_recv"]), name


def test_applications_profiled_and_stored(site: Site, tmp_path: Path) -> None:
    apps = _apps(tmp_path)
    for i, app in enumerate(apps):
        app.dir = tmp_path / f"{i}-{app.name}"
        app.dir.mkdir()
        if app.name == "hpcc":  # hpcc reads hpccinf.txt in its directory
            shutil.copy(REPO / "tests" / "data" / "hpccinf.txt", app.dir / "hpccinf.txt")
    _run_all(site, apps)
    states = {app.job_id: _state(site.conf, app.job_id) for app in apps}
    assert [states[a.job_id] for a in apps] == \
        ["TIMEOUT" if a.limit else "COMPLETED" for a in apps], states
    # the applications' own results, profiled by the TaskProlog
    for app in apps:
        out = (app.dir / f"out-{app.job_id}.txt").read_text(errors="replace")
        if app.name == "lmp" and not app.limit:
            assert "on 4 procs for 100 steps with 4000 atoms" in out, out[-2000:]
            thermo = [ln.split() for ln in out.splitlines() if ln.split()[:1] == ["0"]]
            assert thermo and thermo[0][1:3] == ["3", "-6.7733681"], out[-2000:]
        if app.name == "hpcc":
            text = (app.dir / "hpccoutf.txt").read_text(errors="replace")
            assert "Success=1" in text and "CommWorldProcs=4" in text, text[-2000:]
    ids = [a.job_id for a in apps]
    retried = [i for a in apps for i in a.retried]
    # every job's epilog spooled one record: the retried ones' too if their partial
    # profile was written (a rank crashed in MPI_Init)
    assert len(_spooled(site.store, len(ids), DEADLINE)) >= len(ids)
    res = dataset.ingest(site.store)
    assert res["rejected"] == [] and res["duplicates"] == 0, res
    s = mpilens.store.open(site.store)
    rows = {j["job_id"]: j for j in s.rows("SELECT * FROM jobs")}
    # these jobs, each once (a retried job may have left a crash record), and the
    # earlier test's
    assert set(ids) <= set(rows) and \
        all(j in retried or _earlier(j, ids) for j in set(rows) - set(ids)), sorted(rows)
    for app in apps:
        job = rows[app.job_id]
        _check_record(s, app, job)
        assert job["user"] == "root"
        if app.limit:
            # its time_limit dump, then Slurm's SIGTERM: still progressing at the limit
            assert (job["ending"], job["verdict"]) == ("time_limit", "progressing"), job
        else:
            assert (job["ending"], job["verdict"]) == ("completed", ""), job
    # how these jobs ended, as `store endings` counts them
    got = s.rows("SELECT ending, count(*) AS n FROM jobs WHERE job_id IN "
                 f"({','.join('?' * len(ids))}) GROUP BY ending ORDER BY ending", ids)
    assert [(r["ending"], r["n"]) for r in got] == [("completed", len(ids) - 1),
                                                    ("time_limit", 1)]


def _earlier(job_id: str, ids: list[str]) -> bool:
    """A job of an earlier test of this module (its id below this test's)."""
    return int(job_id) < min(int(i) for i in ids)
