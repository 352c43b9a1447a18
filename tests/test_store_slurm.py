"""The store's Slurm epilog (examples/slurm/mpilens-epilog, docs/store.md) under a real
Slurm on the virtual cluster: 64 jobs released at once end together, each job's
epilog adds its profile to one store's spool, and the ingest finds the 64 jobs, none
lost or duplicated.

The jobs themselves run no MPI: each writes, as the TaskProlog's profile would be
named, a copy of a real profile of the bundled example with the job's own id in its
header (the store tells jobs apart by it).  Slurm, its epilogs on the nodes and the
store are real."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FLAVOUR, REPO
from test_cli_support import real_profile
from test_cluster import make_cluster

pytest.importorskip("duckdb", reason="duckdb is in the test extra (.ci/setup --test)")
import mpilens.store  # noqa: E402
from mpilens.store import dataset  # noqa: E402

CLUSTER_ID = {"openmpi": 21, "mpich": 22}.get(FLAVOUR, 23)
NODES = 3
JOBS = 64
DEADLINE = 180.0

pytestmark = pytest.mark.skipif(FLAVOUR not in ("openmpi", "mpich"),
                                reason="the virtual cluster's Slurm runs with Open MPI and MPICH")


def _tool(conf: str, *args: str) -> subprocess.CompletedProcess:
    import os
    proc = subprocess.run(list(args), env={**os.environ, "SLURM_CONF": conf},
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, f"{' '.join(args)}: {proc.stderr}"
    return proc


def test_64_jobs_ending_at_once(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    cluster = make_cluster(request, CLUSTER_ID, "--nodes", str(NODES), "--rails", "1", "--slurm")
    conf = cluster.state["slurm"]["conf"]
    store = tmp_path / "store"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "mpilens"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'python'} exec {sys.executable} "
                    f"-m mpilens.cli \"$@\"\n")
    shim.chmod(0o755)
    # the site's wrapper: the store and the command, then the example epilog as it is
    epilog = tmp_path / "epilog.sh"
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
    deadline = time.monotonic() + DEADLINE
    while True:
        q = _tool(conf, "squeue", "-h", "-j", ",".join(ids), "-o", "%i %T").stdout
        if not q.strip():
            break
        assert time.monotonic() < deadline, f"jobs not ended: {q[:500]}"
        time.sleep(0.5)
    spool = store / "spool"
    while len(list(spool.glob("*.json"))) < JOBS and time.monotonic() < deadline:
        time.sleep(0.5)  # squeue lists a job until its epilogs are done (COMPLETING)
    assert len(list(spool.glob("*.json"))) == JOBS
    assert not [p for p in spool.iterdir() if not p.name.endswith(".json")]
    res = dataset.ingest(store)
    assert (res["added"], res["duplicates"], res["rejected"]) == (JOBS, 0, [])
    jobs = mpilens.store.open(store).rows("SELECT job_id, user, ending, nranks FROM jobs")
    assert sorted(j["job_id"] for j in jobs) == sorted(ids)
    assert {(j["user"], j["ending"], j["nranks"]) for j in jobs} == {("root", "completed", 4)}
    ended = {p.name for p in work.glob("mpilens-*.prof")}
    assert ended == {f"mpilens-{i}.prof" for i in ids}
