"""Signals reach the job: every command that runs one (run, bench, tune; demo runs
through the same run_profiled) passes SIGTERM, SIGINT, SIGUSR1, SIGTSTP and SIGCONT on
to the launcher, waits for it and exits with its status, as a batch system expects
(Slurm's scancel and time limit send SIGTERM).  Nothing is left running.

The job is tests/progs/sig_wait: each rank writes its pid to a file once MPI is up,
then loops on MPI_Allreduce until some rank gets SIGUSR1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import launcher, read_profile
from test_cli_support import cli_env

NP = 3
# seconds within which the ranks must be gone (a loaded 2-core machine takes a few; left
# alone, sig_wait's ranks never end)
GRACE = 30.0


def _state(pid: int) -> str | None:
    """The process state letter, None when it no longer exists (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state = stat.rsplit(")", 1)[1].split()[0]
    return None if state in ("Z", "X") else state


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    return kids


def _argv0(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def descendants(pid: int) -> list[int]:
    kids, out, todo = _children(), [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def _wait_for(cond, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _rank_pids(tmp: Path, proc: subprocess.Popen) -> list[int]:
    _wait_for(lambda: len(list(tmp.glob("rank-*.pid"))) == NP or proc.poll() is not None,
              120, f"{NP} ranks to start")
    assert proc.poll() is None, proc.communicate()
    return [int(p.read_text()) for p in sorted(tmp.glob("rank-*.pid"))]


def _start(args: list[str], tmp: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mpilens.cli", *args], env=cli_env(),
                            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(proc: subprocess.Popen, pids: list[int]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        for pid in pids:  # never leave a rank behind, whatever the test found
            if _state(pid) is not None:
                os.kill(pid, signal.SIGKILL)
    return proc.returncode, out, err


# The launcher (LAUNCHER_PROG) behind a script that records what reaches it: each signal
# mpilens passes on (SIGNAL_LOG), sent on to the launcher, and the launcher's exit status
# (STATUS_FILE; hydra's status after SIGTERM is 0 or 15 depending on timing, so it is
# read, not predicted).  The script exits with the launcher's status.
RECORDER = """#!/bin/sh
"$LAUNCHER_PROG" "$@" &
pid=$!
for sig in TERM INT USR1 TSTP CONT; do
    trap "echo $sig >> \\"\\$SIGNAL_LOG\\"; kill -$sig $pid" $sig
done
wait $pid
s=$?
while kill -0 $pid 2>/dev/null; do wait $pid; s=$?; done
echo $s > "$STATUS_FILE"
exit $s
"""


def _start_recorded(build: Path, tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """mpilens run of sig_wait behind the recording launcher script; (process, rank pids)."""
    rec = tmp_path / "record-launcher"
    rec.write_text(RECORDER)
    rec.chmod(0o755)
    kind = "openmpi" if "mpirun" in Path(launcher(NP)[0]).name else "hydra"
    env = cli_env({"STATUS_FILE": str(tmp_path / "launcher.status"),
                   "SIGNAL_LOG": str(tmp_path / "signals.log"),
                   "LAUNCHER_PROG": launcher(NP)[0]})
    proc = subprocess.Popen([sys.executable, "-m", "mpilens.cli", "run", "-o",
                             str(tmp_path / "job.prof"), "--launcher", kind, "--", str(rec),
                             *launcher(NP)[1:], str(build / "tests" / "sig_wait"),
                             str(tmp_path)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, _rank_pids(tmp_path, proc)


def _received(tmp_path: Path) -> list[str]:
    log = tmp_path / "signals.log"
    return log.read_text().split() if log.exists() else []


def test_sigterm_to_run_ends_the_job(build: Path, tmp_path: Path) -> None:
    proc, pids = _start_recorded(build, tmp_path)
    job = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _wait_for(lambda: all(_state(p) is None for p in pids), GRACE, "the ranks to end")
    rc, _, err = _finish(proc, pids)
    assert all(_state(p) is None for p in job)
    assert _received(tmp_path) == ["TERM"]
    # the launcher's status; 143 where it says 0 (hydra may, depending on timing)
    assert rc == (int((tmp_path / "launcher.status").read_text()) or 128 + signal.SIGTERM), err
    assert "after SIGTERM" in err and not (tmp_path / "job.prof").exists()
    assert not list(tmp_path.glob(".mpilens-*.tmp"))  # the temporary profile (docs/runtime.md)


def test_sigterm_from_timeout_is_not_sent_twice(build: Path, tmp_path: Path) -> None:
    """`timeout` signals its child (mpilens) and then its whole process group, the
    launcher included: passing the signal on as well would be a second SIGTERM, on which
    Open MPI's mpirun SIGKILLs its ranks before their flight recorders dump (no partial
    profile was left).  Every rank's dump is there, made on SIGTERM."""
    proc = subprocess.Popen(["timeout", "-s", "TERM", "600", sys.executable, "-m",
                             "mpilens.cli", "run", "-o", str(tmp_path / "job.prof"), "--",
                             *launcher(NP), str(build / "tests" / "sig_wait"),
                             str(tmp_path)], env=cli_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = _rank_pids(tmp_path, proc)
    proc.send_signal(signal.SIGTERM)  # to timeout: what it does when its time is up
    _wait_for(lambda: all(_state(p) is None for p in pids), 30, "the ranks to end")
    rc, _, err = _finish(proc, pids)
    assert rc != 0 and "Traceback" not in err, err
    assert "after SIGTERM, SIGCONT;" in err, err  # each signal named once
    for r in range(NP):
        head, _ = read_profile(tmp_path / "job.prof.partial" / f"rank-{r}")
        assert (head["rank"], head["reason"], head["signal"]) == (r, "signal", "SIGTERM")


def test_sigint_from_kill_is_passed_on(build: Path, tmp_path: Path) -> None:
    proc = _start(["run", "-o", tmp_path / "job.prof", "--", *launcher(NP),
                   build / "tests" / "sig_wait", tmp_path], tmp_path)
    pids = _rank_pids(tmp_path, proc)
    proc.send_signal(signal.SIGINT)
    _wait_for(lambda: all(_state(p) is None for p in pids), GRACE, "the ranks to end")
    rc, _, err = _finish(proc, pids)
    assert rc != 0 and "Traceback" not in err, err


def test_sigusr1_reaches_the_ranks_and_the_profile_is_complete(build: Path,
                                                               tmp_path: Path) -> None:
    prof = tmp_path / "job.prof"
    proc = _start(["run", "-o", prof, "--", *launcher(NP), build / "tests" / "sig_wait",
                   tmp_path], tmp_path)
    pids = _rank_pids(tmp_path, proc)
    proc.send_signal(signal.SIGUSR1)
    rc, out, err = _finish(proc, pids)
    assert rc == 0, err
    rounds = int(out.split("after ")[1].split()[0])
    _, ranks = read_profile(prof)
    assert [r["functions"]["MPI_Allreduce"]["calls"] for r in ranks] == [rounds + 1] * NP


def test_sigtstp_stops_and_sigcont_resumes(build: Path, tmp_path: Path) -> None:
    """SIGTSTP reaches the launcher and mpilens stops, as a job in a shell; SIGCONT reaches
    the launcher and mpilens runs again.  (What the launcher then does is its own: Open
    MPI's mpirun stops the ranks, MPICH's mpiexec stops itself.)"""
    proc, pids = _start_recorded(build, tmp_path)
    try:
        proc.send_signal(signal.SIGTSTP)
        _wait_for(lambda: _state(proc.pid) == "T", GRACE, "mpilens to stop")
        _wait_for(lambda: _received(tmp_path) == ["TSTP"], GRACE, "the launcher's SIGTSTP")
        time.sleep(0.5)  # stopped for a while (CPython's sigtimedwait broke across a stop)
        proc.send_signal(signal.SIGCONT)
        _wait_for(lambda: _state(proc.pid) not in ("T", None), GRACE, "mpilens to run again")
        _wait_for(lambda: _received(tmp_path) == ["TSTP", "CONT"], GRACE,
                  "the launcher's SIGCONT")
        proc.send_signal(signal.SIGUSR1)
        rc, out, err = _finish(proc, pids)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGTERM)
            _finish(proc, pids)
    assert rc == 0 and "SIGUSR1 received" in out, err
    assert _received(tmp_path) == ["TSTP", "CONT", "USR1"]


@pytest.mark.parametrize("command", ["bench", "tune"])
def test_sigterm_to_bench_and_tune_ends_the_job(build: Path, tmp_path: Path,
                                                command: str) -> None:
    if command == "bench":
        args = ["bench", "p2p", "--min-size", "1M", "--max-size", "4M", "--samples", "100000",
                "--", *launcher(2)]
        program = "mpilens-bench"
    else:
        args = ["tune", "-o", tmp_path / "tuning.json", "--sizes", "1M", "--learn", "100000",
                "--np", "2", "--", *launcher(2)]
        program = "mpilens-bench-alltoall"
    proc = _start(args, tmp_path)

    def ranks() -> list[int]:
        return [p for p in descendants(proc.pid) if _argv0(p).endswith(program)]
    _wait_for(lambda: len(ranks()) == 2, 120, f"2 {program} ranks")
    pids = ranks()
    proc.send_signal(signal.SIGTERM)
    _wait_for(lambda: all(_state(p) is None for p in pids), GRACE, "the ranks to end")
    rc, _, err = _finish(proc, pids)
    assert rc != 0 and "the job was stopped by SIGTERM" in err and "Traceback" not in err, err
    assert not (tmp_path / "tuning.json").exists()
