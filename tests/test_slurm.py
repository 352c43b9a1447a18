"""Under a real batch system: Slurm on the virtual cluster (docs/slurm.md).

`vcluster up --slurm` starts Debian's Slurm 22.05 with munge on 3 nodes: slurmctld
and munged in the host, one slurmd per node in the node's namespaces.  The tests
launch profiled jobs through srun (Open MPI over PMIx, MPICH over PMI2), mpirun
inside an sbatch allocation, and end jobs the batch system's ways: the time limit
(--time=1) and scancel.  Where namespaces or Slurm are not available the tests skip
with vcluster's one line.  The finalizer checks that no daemon of the cluster is
left.

One job is slow by nature: a time limit of one minute (Slurm's smallest), which
slurmctld enforces on its 30 s check, so the job ends 60 to 90 s after it starts.
It is submitted when the cluster is made and checked by the last test, while the
other tests run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import BUILD, FLAVOUR, REPO, mpi_env, read_profile, run_line
from mpilens.launch import wrap
from mpilens.slurm import end_time_env as slurm_end_time_env
from profmodel import check_node_header, check_nodes, check_rank
from test_cli_support import mpilens
from test_cluster import VCLUSTER, leftovers, make_cluster, vc
from test_profiler import check_header

NODES = 3
# cluster numbers of their own (test_cluster: 2-4, test_cluster_advise: 6)
CLUSTER_ID = {"openmpi": 7, "mpich": 8}.get(FLAVOUR, 10)
EXEC = BUILD / "bin" / "mpilens-exec"
PROGS = BUILD / "tests"
LIMIT_MARGIN = 50   # MPILENS_DUMP_MARGIN of the time-limit job: its dump 10 s after it starts
DEADLINE = 150.0    # seconds a test waits for a job before it fails

# srun's MPI plugins for Open MPI (pmix) and MPICH (pmi2) are wired up; Intel MPI's
# PyPI wheel has no launcher line on the virtual cluster (test_cluster skips it too)
pytestmark = pytest.mark.skipif(FLAVOUR not in ("openmpi", "mpich"),
                                reason="the virtual cluster's srun lines are for Open MPI and MPICH")


def slurm_daemons(cid: int) -> list[str]:
    """Processes whose command line names the cluster's Slurm directory (its daemons)."""
    mark = str(vc.slurm_dir(cid))
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if mark in cmd and state not in ("Z", "X"):
            found.append(f"{p.name} {cmd.strip()}")
    return found


@dataclass
class LimitJob:
    job_id: str
    dir: Path


class Slurm:
    def __init__(self, state: dict) -> None:
        self.state = state
        self.nodes: list[str] = state["nodes"]
        self.conf: str = state["slurm"]["conf"]
        self.limit: LimitJob | None = None
        self.profiled: list[str] = []  # ids of the jobs check_prof_c saw completed

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The job environment of the tests (mpi_env) with the cluster's slurm.conf."""
        return mpi_env({"SLURM_CONF": self.conf, **(extra or {})})

    def srun_line(self, np_: int, nodes: int | None = None, kill: bool = False) -> list[str]:
        """vcluster's srun line; kill: with -K (--kill-on-bad-exit), a rank that dies ends
        the step at once (Slurm's default leaves the others waiting in MPI_Init) — for
        jobs that must succeed (srun_job), not for those the tests stop on purpose."""
        line = vc.srun_line(self.state, FLAVOUR, np_, nodes)
        return [line[0], "-K", *line[1:]] if kill else line

    def tool(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(args), env=self.env(), capture_output=True, text=True,
                              timeout=60, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc

    def job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job -o` as a dict (JobState, NodeList, ...)."""
        out = self.tool("scontrol", "-o", "show", "job", job_id).stdout
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def sbatch(self, script: Path, *opts: str, env: dict[str, str] | None = None,
               args: tuple[str, ...] = ()) -> str:
        proc = subprocess.run(["sbatch", "--parsable", *opts, str(script), *args], env=self.env(env),
                              cwd=script.parent, capture_output=True, text=True, timeout=DEADLINE,
                              check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().split(";")[0]

    def wait_ended(self, job_id: str, timeout: float = DEADLINE) -> dict[str, str]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            info = self.job(job_id)
            if info["JobState"] not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING",
                                        "SUSPENDED"):
                return info
            time.sleep(0.5)
        info = self.job(job_id)
        out = Path(info.get("StdOut", ""))  # the job's output so far: where it is stuck
        tail = out.read_text(errors="replace").splitlines()[-60:] if out.is_file() else []
        raise AssertionError("\n".join([f"job {job_id} did not end within {timeout:.0f} s: {info}",
                                        f"its output ({out}), last lines:", *tail]))


END_TIME_LINE = next(ln for ln in (REPO / "docs" / "slurm.md").read_text().splitlines()
                     if ln.startswith("export SLURM_JOB_END_TIME="))


def flight_script(slurm: Slurm, d: Path, end_time: bool = False) -> Path:
    """A batch script: tests/progs/flight loop on one rank per node under srun (an
    MPI_Allreduce every 20 ms, each printed), the ranks' pids in d; with end_time
    it first exports SLURM_JOB_END_TIME, which Slurm 22.05 does not set, with
    docs/slurm.md's line."""
    lines = ["#!/bin/sh"]
    if end_time:
        lines.append(END_TIME_LINE)  # as docs/slurm.md prints it
        lines.append('echo "end time $SLURM_JOB_END_TIME"')
    line = " ".join(slurm.srun_line(NODES))
    lines.append(f"exec {line} {EXEC} {PROGS / 'flight'} loop {d}")
    script = d / "job.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


@pytest.fixture(scope="module")
def slurm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Slurm:
    """The cluster with Slurm; the time-limit job is submitted at once (it takes 60-90 s)."""
    def no_daemon_left() -> None:  # runs after make_cluster's `down` (finalizers: last in, first out)
        left = slurm_daemons(CLUSTER_ID)
        assert not left, f"vcluster down left Slurm daemons: {left}"

    request.addfinalizer(no_daemon_left)
    cluster = make_cluster(request, CLUSTER_ID, "--nodes", str(NODES), "--rails", "1", "--slurm")
    s = Slurm(cluster.state)
    d = tmp_path_factory.mktemp("limit")
    script = flight_script(s, d, end_time=True)
    job_id = s.sbatch(script, "--time=1", "-N", str(NODES), "-n", str(NODES), "-o", str(d / "out.txt"),
                      env={"MPILENS_OUTPUT": str(d / "job-%j.prof"),
                           "MPILENS_DUMP_MARGIN": str(LIMIT_MARGIN)})
    s.limit = LimitJob(job_id, d)
    return s


def printed(out: Path) -> dict[int, int]:
    """The last "rank R allreduce N" line of each rank in out."""
    got: dict[int, int] = {}
    for ln in out.read_text(errors="replace").splitlines():
        w = ln.split()
        if len(w) == 4 and w[0] == "rank" and w[2] == "allreduce" and w[3].isdigit():
            got[int(w[1])] = max(got.get(int(w[1]), 0), int(w[3]))
    return got


def partial_head(path: Path) -> dict:
    return json.loads(path.read_text().split("\n")[0])


# ---------------------------------------------------------------- the batch system itself

def test_slurm_daemons_on_the_nodes(slurm: Slurm) -> None:
    """slurmctld answers, every node's slurmd runs in that node's network namespace under
    its own name, srun's tasks land on the nodes, both MPI plugins are there."""
    states = dict(ln.split() for ln in slurm.tool("sinfo", "-h", "-N", "-o", "%N %T").stdout.splitlines())
    # up waited for "idle"; the time-limit job now holds some of every node's CPUs
    assert sorted(states) == slurm.nodes and set(states.values()) <= {"idle", "mixed", "allocated"}
    d = vc.slurm_dir(CLUSTER_ID)
    for node in slurm.nodes:
        pid = int((d / node / "slurmd.pid").read_text())
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "slurmd"
        assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{node}").st_ino
    proc = run_line(["srun", "-N", str(NODES), "-n", str(NODES), "hostname"], {"SLURM_CONF": slurm.conf})
    assert sorted(proc.stdout.split()) == slurm.nodes
    plugins = slurm.tool("srun", "--mpi=list").stdout
    assert "pmix" in plugins and "pmi2" in plugins
    conf = Path(slurm.conf).read_text()
    assert "ProctrackType=proctrack/linuxproc" in conf and "TaskPlugin=task/none" in conf
    # up again with the same settings keeps the running daemons
    ctld = (d / "slurmctld.pid").read_text()
    again = subprocess.run([str(VCLUSTER), "up", "--nodes", str(NODES), "--rails", "1", "--slurm",
                            "--id", str(CLUSTER_ID)], capture_output=True, text=True, timeout=60,
                           check=True)
    assert json.loads(again.stdout) == slurm.state and (d / "slurmctld.pid").read_text() == ctld
    line = subprocess.run([str(VCLUSTER), "launch", "--id", str(CLUSTER_ID), "--srun", FLAVOUR, "4"],
                          capture_output=True, text=True, timeout=30, check=True).stdout.split()
    assert line == ["srun", f"--mpi={'pmix' if FLAVOUR == 'openmpi' else 'pmi2'}", "-N", "3", "-n", "4",
                    "-m", "block"]


def test_launch_srun_needs_slurm_and_blocks(slurm: Slurm) -> None:
    """launch --srun on a cluster without Slurm, and a placement srun's blocks do not
    make: one line, exit 2."""
    st = {"config": {"id": 5}, "nodes": ["mlv5n0", "mlv5n1"], "slurm": None}
    with pytest.raises(ValueError, match="runs no Slurm"):
        vc.srun_line(st, "openmpi", 2)
    base = [str(VCLUSTER), "launch", "--id", str(CLUSTER_ID), "--srun", FLAVOUR, "4"]
    ok = subprocess.run(base + ["--per-node", "2,2"], capture_output=True, text=True, timeout=30,
                        check=False)
    assert ok.stdout.split()[2:6] == ["-N", "2", "-n", "4"]
    bad = subprocess.run(base + ["--per-node", "1,3"], capture_output=True, text=True, timeout=30,
                         check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "places ranks in blocks" in bad.stderr


# ---------------------------------------------------------------- srun launches profiled jobs

@pytest.mark.parametrize("argv, app_at", [
    # flags whose value is optional (-K, --kill-on-bad-exit, --propagate) take no word
    (["srun", "-K", "--mpi=pmix", "-N", "3", "-n", "4", "-m", "block", "./app", "x"], 9),
    (["srun", "--kill-on-bad-exit", "--propagate", "-l", "./app"], 4),
    # options with a value srun requires
    (["srun", "--hint", "nomultithread", "-B", "2:4:1", "--mem-bind", "local", "-M", "c1", "./app"], 9),
    (["srun", "--cpus-per-gpu", "2", "--threads-per-core", "1", "--open-mode", "append", "./app"], 7),
])
def test_srun_line_parsing(argv: list[str], app_at: int) -> None:
    """mpilens-exec goes right before the application of an srun line (launch.wrap)."""
    out = wrap(argv, "EXEC").argv
    assert out == argv[:app_at] + ["EXEC"] + argv[app_at:]


def check_prof_c(slurm: Slurm, path: Path, per_node: list[int]) -> str:
    """prof_c's exact profile (test_profiler's checks), its hosts and ranks per host;
    returns the job id, which is in the file's name and which Slurm knows as completed."""
    header, ranks = read_profile(path)
    P = sum(per_node)
    check_header(header, ranks, P)
    node_of = [k for k, c in enumerate(per_node) for _ in range(c)]
    for line in ranks:
        check_rank(line, P)
        check_nodes(line, P, node_of)
    check_node_header(header, ranks, node_of)
    nodes = slurm.nodes[:len(per_node)]
    assert header["hosts"] == nodes and header["ranks_per_host"] == per_node
    assert [r["host"] for r in ranks] == [n for n, c in zip(nodes, per_node) for _ in range(c)]
    job_id = header["job_id"]
    assert path.name.split("-", 1)[1].split(".")[0] == job_id
    assert int(job_id) > CLUSTER_ID * 100000  # FirstJobId of this cluster: a real Slurm job id
    info = slurm.wait_ended(job_id)  # srun has returned; its epilogs may still be running
    assert info["JobState"] == "COMPLETED" and info["NumNodes"] == str(len(per_node))
    slurm.profiled.append(job_id)
    return job_id


def _start_up_race(proc: subprocess.CompletedProcess) -> bool:
    """Open MPI 4.1.4's TCP BTL start-up race (docs/notes/ompi-tcp-start-up-race.md,
    reproduced without mpilens: 1 srun job of 60 under load): a rank calls address 0
    from mca_btl_tcp inside MPI_Init, and its handler's backtrace ends at frame 0."""
    return proc.returncode != 0 and _start_up_race_text(proc.stderr)


def _start_up_race_text(err: str) -> bool:
    """The race's signature in a failed job's error output (_start_up_race)."""
    return (FLAVOUR == "openmpi" and "Segmentation fault" in err
            and re.search(r"Failing at address: \(nil\)\n.*\[ 0\] [^\n]*libc\.so[^\n]*\n"
                          r"[^\n]*\*\*\* End of error message \*\*\*", err) is not None)


def srun_job(start: Callable[[], subprocess.CompletedProcess]) -> subprocess.CompletedProcess:
    """An srun job that must succeed, started again once if it died of exactly the
    start-up race (nothing of it is kept: the rank died in MPI_Init).  Any other failure,
    or the race twice, fails the test: a defect of mpilens's that crashes the same way
    every time is still found; one that did so 1 time in 60 would be missed once."""
    proc = start()
    if _start_up_race(proc):
        warnings.warn("srun job started again after Open MPI's TCP start-up race: "
                      + proc.stderr[-300:])
        proc = start()
    assert proc.returncode == 0, f"srun job failed ({proc.returncode}):\n" \
        f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    return proc


def batch_job(slurm: Slurm, submit: Callable[[], str], output: Callable[[str], Path]) -> str:
    """A batch job that must succeed (submit() returns its id, output(id) its output
    file), submitted again once if it failed of exactly the start-up race, as srun_job
    does; its id once it has ended (the test checks how)."""
    job_id = submit()
    info = slurm.wait_ended(job_id)
    out = output(job_id)
    text = out.read_text(errors="replace") if out.is_file() else ""
    if info["JobState"] != "COMPLETED" and _start_up_race_text(text):
        warnings.warn(f"batch job {job_id} submitted again after Open MPI's TCP start-up "
                      "race: " + text[-300:])
        job_id = submit()
        slurm.wait_ended(job_id)
    return job_id


def test_start_up_race_signature() -> None:
    """Only the race's stderr (as a rank printed it, docs/notes) starts a job again."""
    race = ("srun: error: mlv9n0: task 0: Segmentation fault (core dumped)\n"
            "[mlv9n0:13125] *** Process received signal ***\n"
            "[mlv9n0:13125] Signal: Segmentation fault (11)\n"
            "[mlv9n0:13125] Failing at address: (nil)\n"
            "[mlv9n0:13125] [ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7fc65569f050]\n"
            "[mlv9n0:13125] *** End of error message ***\n")
    deeper = race.replace("*** End of error message ***",
                          "[ 1] /opt/lib/libmpilens.so(+0x1234)[0x7f00]\n[x] *** End of error "
                          "message ***")
    other = race.replace("(nil)", "0x8")
    got = [_start_up_race(subprocess.CompletedProcess([], rc, "", err))
           for rc, err in ((139, race), (0, race), (139, deeper), (139, other), (1, "x"))]
    assert got == [FLAVOUR == "openmpi", False, False, False, False]


def test_srun_exact_profile_across_nodes(slurm: Slurm, tmp_path: Path) -> None:
    """srun --mpi=pmix (Open MPI) / pmi2 (MPICH) with mpilens-exec: 4 ranks on 3 nodes
    (2, 1, 1), the job id in the profile's name (%j)."""
    srun_job(lambda: run_line(
        slurm.srun_line(4, kill=True) + [str(EXEC), str(PROGS / "prof_c"),
                                         str(tmp_path / "io.dat")],
        {"SLURM_CONF": slurm.conf, "MPILENS_OUTPUT": str(tmp_path / "p-%j.prof"),
         "MPILENS_QUIET": "1"}, timeout=DEADLINE, cwd=tmp_path, check=False))
    [path] = tmp_path.glob("p-*.prof")
    check_prof_c(slurm, path, [2, 1, 1])


def test_mpilens_run_srun(slurm: Slurm, tmp_path: Path) -> None:
    """`mpilens run -o r-%j.prof -- srun ...`: the profile found under the job's id."""
    line = slurm.srun_line(NODES, kill=True)
    proc = srun_job(lambda: mpilens("run", "-o", tmp_path / "r-%j.prof", "--", *line,
                                    PROGS / "prof_c", tmp_path / "io.dat", cwd=tmp_path,
                                    timeout=DEADLINE, env={"SLURM_CONF": slurm.conf}))
    [path] = tmp_path.glob("r-*.prof")
    assert str(path) in proc.stderr  # run says where the profile is
    check_prof_c(slurm, path, [1, 1, 1])


def test_mpirun_inside_sbatch(slurm: Slurm, tmp_path: Path) -> None:
    """The MPI's own launcher in an sbatch allocation of 4 tasks on 3 nodes: it takes the
    nodes and the tasks per node (2, 1, 1) from Slurm, and starts its daemons with srun."""
    launcher = ("mpirun.openmpi --allow-run-as-root --bind-to none" if FLAVOUR == "openmpi"
                else "mpiexec.mpich")
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n{launcher} {EXEC} {PROGS / 'prof_c'} {tmp_path / 'io.dat'}\n")
    job_id = batch_job(slurm, lambda: slurm.sbatch(
        script, "-N", "3", "-n", "4", "-o", str(tmp_path / "out-%j.txt"),
        env={"MPILENS_OUTPUT": str(tmp_path / "job-%j.prof")}),
        lambda j: tmp_path / f"out-{j}.txt")
    out = (tmp_path / f"out-{job_id}.txt").read_text()
    assert slurm.job(job_id)["JobState"] == "COMPLETED", out
    path = tmp_path / f"job-{job_id}.prof"
    assert path.exists(), out
    assert check_prof_c(slurm, path, [2, 1, 1]) == job_id


# ---------------------------------------------------------------- docs/slurm.md's scripts

def doc_block(first_line: str) -> str:
    """The fenced block of docs/slurm.md that starts with first_line."""
    text = (REPO / "docs" / "slurm.md").read_text()
    for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"no block starting with {first_line!r} in docs/slurm.md")


def test_docs_show_the_scripts_as_they_are() -> None:
    for name, first in (("profile.sbatch", "#!/bin/sh\n# Profile an MPI program"),
                        ("mpilens-task-prolog", "#!/bin/sh\n# Slurm TaskProlog")):
        path = REPO / "examples" / "slurm" / name
        assert doc_block(first) == path.read_text() and os.access(path, os.X_OK), name


def test_sbatch_script_from_the_docs(slurm: Slurm, tmp_path: Path) -> None:
    """examples/slurm/profile.sbatch as docs/slurm.md prints it: `mpilens run -- srun`
    in a batch job; the profile in the submit directory under the job's id."""
    env = {"SRUN_MPI": "pmix" if FLAVOUR == "openmpi" else "pmi2",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MPILENS_PREFIX": str(BUILD)}
    script = tmp_path / "profile.sbatch"
    shutil.copy(REPO / "examples" / "slurm" / "profile.sbatch", script)
    # a rank that dies ends the step at once (srun -K, as srun_line(kill=True)): the
    # start-up race then fails the job in seconds, and batch_job submits it again
    env["SLURM_KILL_BAD_EXIT"] = "1"
    # (not sbatch --wait: it polls slurmctld at growing intervals, 30 s and more)
    job_id = batch_job(slurm, lambda: slurm.sbatch(
        script, "--nodes=3", "--ntasks=4", "--time=10", env=env,
        args=(str(PROGS / "prof_c"), str(tmp_path / "io.dat"))),
        lambda j: tmp_path / f"mpilens-{j}.out")
    out = (tmp_path / f"mpilens-{job_id}.out").read_text()
    path = tmp_path / f"mpilens-{job_id}.prof.gz"  # the default output: compressed
    assert str(path) in out, out  # mpilens run's summary in the job's output
    assert check_prof_c(slurm, path, [2, 1, 1]) == job_id


def test_task_prolog_from_the_docs(slurm: Slurm, tmp_path: Path) -> None:
    """examples/slurm/mpilens-task-prolog as srun --task-prolog: the application runs
    unchanged (no mpilens-exec) and is profiled; MPILENS_PROFILE=off: not profiled; a
    task that is no MPI program runs as before."""
    prolog = f"--task-prolog={REPO / 'examples' / 'slurm' / 'mpilens-task-prolog'}"
    line = slurm.srun_line(NODES, kill=True)
    env = {"SLURM_CONF": slurm.conf, "MPILENS_PREFIX": str(BUILD)}
    srun_job(lambda: run_line([line[0], prolog, *line[1:], str(PROGS / "prof_c"),
                               str(tmp_path / "io.dat")], env, timeout=DEADLINE,
                              cwd=tmp_path, check=False))
    [path] = tmp_path.glob("mpilens-*.prof.gz")  # the default output: compressed
    check_prof_c(slurm, path, [1, 1, 1])
    off = tmp_path / "off"
    off.mkdir()
    srun_job(lambda: run_line([line[0], prolog, *line[1:], str(PROGS / "prof_c"),
                               str(off / "io.dat")], {**env, "MPILENS_PROFILE": "off"},
                              timeout=DEADLINE, cwd=off, check=False))
    assert not list(off.glob("mpilens-*"))
    proc = run_line(["srun", prolog, "-N", str(NODES), "-n", str(NODES), "sh", "-c",
                     'echo "$(hostname) $LD_PRELOAD"'], env, cwd=tmp_path)
    lib = BUILD / "lib" / "libmpilens.so"
    assert sorted(proc.stdout.splitlines()) == [f"{n} {lib}" for n in slurm.nodes]


# ---------------------------------------------------------------- jobs the batch system ends

def test_scancel_leaves_a_partial_profile(slurm: Slurm, tmp_path: Path) -> None:
    """scancel of a running job: every rank gets SIGTERM from its slurmd and dumps,
    with every call it completed before the signal."""
    script = flight_script(slurm, tmp_path)
    job_id = slurm.sbatch(script, "-N", str(NODES), "-n", str(NODES), "-o", str(tmp_path / "out.txt"),
                          env={"MPILENS_OUTPUT": str(tmp_path / "job-%j.prof")})
    out = tmp_path / "out.txt"
    end = time.monotonic() + DEADLINE
    while not (out.exists() and len(before := printed(out)) == NODES and min(before.values()) >= 10):
        assert time.monotonic() < end, f"the ranks did not print: {slurm.job(job_id)}"
        time.sleep(0.2)
    d = tmp_path / f"job-{job_id}.prof.partial"
    # first a snapshot: scancel --signal=USR1 reaches the ranks, the job goes on
    slurm.tool("scancel", "--signal=USR1", job_id)
    while not all((d / f"rank-{r}").exists() for r in range(NODES)):
        assert time.monotonic() < end, f"no SIGUSR1 snapshot: {slurm.job(job_id)}"
        time.sleep(0.2)
    time.sleep(0.5)
    assert slurm.job(job_id)["JobState"] == "RUNNING"
    slurm.tool("scancel", job_id)
    info = slurm.wait_ended(job_id)
    assert info["JobState"] == "CANCELLED", info
    after = printed(out)
    for r in range(NODES):
        first, first_lines = read_profile(d / f"rank-{r}.prev")
        head, lines = read_profile(d / f"rank-{r}")
        assert (first["reason"], first["signal"], first["dump"]) == ("signal", "SIGUSR1", 1)
        assert (head["rank"], head["nranks"], head["reason"], head["signal"], head["dump"]) == \
            (r, NODES, "signal", "SIGTERM", 2)
        assert head["job_id"] == job_id and head["host"] == slurm.nodes[r]
        f1, f = first_lines[0]["functions"], lines[0]["functions"]
        assert f1["MPI_Barrier"]["calls"] == f["MPI_Barrier"]["calls"] == 3
        # counted when a call returns, printed after: at least what was printed before
        # the signals, at most one more than the job printed in all
        assert before[r] <= f1["MPI_Allreduce"]["calls"] < f["MPI_Allreduce"]["calls"] <= after[r] + 1
    assert not (tmp_path / f"job-{job_id}.prof").exists()


def test_mpilens_run_gives_the_job_end_time(slurm: Slurm, tmp_path: Path) -> None:
    """`mpilens run -- srun` in a batch job of --time=1: run asks squeue for the job's
    end (Slurm 22.05 sets no SLURM_JOB_END_TIME), so every rank dumps MPILENS_DUMP_MARGIN
    (55 s) before it; then scancel."""
    line = " ".join(slurm.srun_line(NODES))
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\nexec mpilens run -o {tmp_path}/job-%j.prof -e MPILENS_DUMP_MARGIN=55 "
                      f"-- {line} {PROGS / 'flight'} loop {tmp_path}\n")
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MPILENS_PREFIX": str(BUILD)}
    job_id = slurm.sbatch(script, "--time=1", "-N", str(NODES), "-n", str(NODES),
                          "-o", str(tmp_path / "out.txt"), env=env)
    d = tmp_path / f"job-{job_id}.prof.partial"
    end, stop = "", time.monotonic() + DEADLINE
    while not all((d / f"rank-{r}").exists() for r in range(NODES)):
        assert time.monotonic() < stop, f"no time-limit dumps: {slurm.job(job_id)}"
        if not end.isdigit():
            end = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%e"], capture_output=True,
                                 text=True, timeout=30, check=False,
                                 env=slurm.env({"SLURM_TIME_FORMAT": "%s"})).stdout.strip()
        time.sleep(0.2)
    heads = [partial_head(d / f"rank-{r}") for r in range(NODES)]
    slurm.tool("scancel", job_id)
    assert slurm.wait_ended(job_id)["JobState"] == "CANCELLED"
    assert end.isdigit(), end
    for r, head in enumerate(heads):
        assert (head["rank"], head["reason"], head["dump"], head["job_id"]) == (r, "time_limit", 1, job_id)
        assert int(end) - 56 <= _epoch(head["created"]) < int(end)
        # the scancel's SIGTERM: the second dump
        assert partial_head(d / f"rank-{r}")["signal"] == "SIGTERM"
    # outside an allocation, with an end time already, for a job squeue does not know: nothing
    assert slurm_end_time_env({"PATH": os.environ["PATH"], "SLURM_CONF": slurm.conf}) == {}
    assert slurm_end_time_env({"SLURM_JOB_ID": job_id, "SLURM_JOB_END_TIME": "5"}) == {}
    assert slurm_end_time_env({"PATH": os.environ["PATH"], "SLURM_CONF": slurm.conf,
                               "SLURM_JOB_ID": "99999999"}) == {}


def test_time_limit_dump_before_sigterm(slurm: Slurm) -> None:
    """The job of --time=1 (submitted with the cluster): its SLURM_JOB_END_TIME minus
    MPILENS_DUMP_MARGIN dump (reason time_limit) comes first, well before the limit;
    Slurm's SIGTERM at the limit gives the second (reason signal); the calls moved in
    between, so the verdict is "still progressing"; Slurm says TIMEOUT."""
    assert slurm.limit is not None
    job_id, d = slurm.limit.job_id, slurm.limit.dir
    info = slurm.wait_ended(job_id)
    out = (d / "out.txt").read_text(errors="replace")
    assert info["JobState"] == "TIMEOUT" and "DUE TO TIME LIMIT" in out, (info, out)
    end_time = int(re.search(r"^end time (\d+)$", out, re.MULTILINE).group(1))  # type: ignore[union-attr]
    part = d / f"job-{job_id}.prof.partial"
    last = printed(d / "out.txt")
    listing = ({f.name: partial_head(f) if not f.name.startswith(".") else f.stat().st_size
                for f in sorted(part.iterdir())} if part.is_dir()
               else {"no directory; beside it": sorted(f.name for f in d.iterdir())})
    for r in range(NODES):
        # (a text, which pytest prints whole: a crash's backtrace is in the job's output)
        assert (part / f"rank-{r}.prev").exists(), "\n".join(
            [repr(listing)] + [ln for ln in out.splitlines() if "allreduce" not in ln][:80])
        first, first_lines = read_profile(part / f"rank-{r}.prev")
        second, second_lines = read_profile(part / f"rank-{r}")
        assert (first["reason"], first["dump"], first["signal"]) == ("time_limit", 1, None)
        assert (second["reason"], second["dump"], second["signal"]) == ("signal", 2, "SIGTERM")
        assert first["job_id"] == second["job_id"] == job_id and first["host"] == slurm.nodes[r]
        # the margin's dump: not before end - margin, and before the limit's SIGTERM
        t1 = _epoch(first["created"])
        assert end_time - LIMIT_MARGIN - 1 <= t1 < end_time <= _epoch(second["created"]) + 1
        c1, c2 = (x[0]["functions"] for x in (first_lines, second_lines))
        assert c1["MPI_Barrier"]["calls"] == c2["MPI_Barrier"]["calls"] == 3
        assert c1["MPI_Allreduce"]["calls"] < c2["MPI_Allreduce"]["calls"] <= last[r] + 1
    proc = mpilens("report", part, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    w = json.loads(proc.stdout)["partial"]
    assert w["progress"]["moved"] == list(range(NODES)) and w["verdict"]["kind"] == "progressing"
    # several jobs at once: the profiled jobs of the other tests ran on the same nodes
    # while this one held some of their CPUs (the times are Slurm's, ISO 8601 in the same
    # time zone).  All were submitted after it; how many of them the 60-90 s of its limit
    # cover depends on how fast this machine runs the tests in between, so only one is
    # asserted (the first test's, submitted seconds after this one)
    others = [slurm.job(other) for other in slurm.profiled]
    assert others and all(info["StartTime"] <= o["StartTime"] <= o["EndTime"] for o in others)
    assert any(o["EndTime"] <= info["EndTime"] for o in others), (info, others)


def _epoch(created: str) -> int:
    """A profile's `created` (UTC, ISO 8601 with Z) as epoch seconds."""
    return int(datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


def test_down_sees_what_it_removes(slurm: Slurm) -> None:
    """What `down` must remove is listed by leftovers() and slurm_daemons(): here only
    that these see the running cluster (the finalizer checks them empty after down)."""
    assert leftovers(CLUSTER_ID) and slurm_daemons(CLUSTER_ID)
