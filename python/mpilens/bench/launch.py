"""Launch `mpilens-bench FAMILY ...` under an MPI launcher with a progress bar.

The C program writes its JSON document to a temporary file (--out) and reports
progress on stderr as `MLB-PROGRESS <done> <total>` lines (--progress).  A bad
option makes it print one line `mpilens-bench: <what was wrong>` and exit 2:
that line becomes a UserError here (the launcher's own banners are dropped).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from .. import mpi_env, paths, profiled
from ..errors import UserError

PROGRESS = "MLB-PROGRESS "
ESTIMATE = "MLB-ESTIMATE "  # the family's expected duration, before it starts
ANNOUNCE_S = 10.0           # durations from this long on are announced
RANGE_WIDE = 1.5            # a range is said when the probe's typical/fastest exceed this
ERROR = "mpilens-bench: "
# per family, the options that shorten it (the announce line names them)
SHORTEN = {"p2p": "--max-size, --samples or --iters", "coll": "--max-size, --samples or --ops",
           "halo": "--max-size, --samples or --iters", "logp": "--max-size, --samples or --iters",
           "io": "--size, --samples or --patterns", "overhead": "--calls, --blocks or --rss-calls",
           "alltoall": "--sizes, --calls, --repeat or --np", "repro": "--samples"}


class BenchFailed(Exception):
    """The benchmark job crashed or produced no result (not the user's input)."""


def default_launcher(np_: int) -> list[str]:
    """The launcher of the MPI mpilens was built with, for np_ ranks on this host."""
    return mpi_env.launcher_line(np_, paths.mpi_flavour())


def launcher_for(user: list[str], np_: int) -> list[str]:
    """The user's launcher line ('{np}' replaced by np_) or the default one."""
    if not user:
        return default_launcher(np_)
    return [a.replace("{np}", str(np_)) for a in user]


def _job_env(extra: Mapping[str, str | None] | None) -> dict[str, str]:
    """The selected MPI's job environment with extra's variables set (None: unset)."""
    env = mpi_env.job_env(paths.mpi_flavour(), allow_root=True)
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run_program(launcher: list[str], argv: list[str], env: dict[str, str] | None = None,
                timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run a benchmark program under a launcher line, output captured, signals passed
    on (a stopped job raises JobStopped); env: variables to set (None value: unset)."""
    if shutil.which(launcher[0]) is None:
        raise UserError(f"launcher '{launcher[0]}' not found")
    job_env = _job_env(env)
    try:
        return mpi_env.run_job([*launcher, *argv], env=job_env, timeout=timeout,
                               stop_raises=True, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        raise UserError(f"benchmark did not finish within {timeout} s") from None


def estimate(line: str) -> float | None:
    """The seconds of an MLB-ESTIMATE line, None if it holds none."""
    try:
        return float(line.split()[1])
    except (IndexError, ValueError):
        return None


def estimate_low(line: str) -> float | None:
    """The low end of an MLB-ESTIMATE line's range ("MLB-ESTIMATE <s> <low s>": the
    probe's fastest rates), None when it gives one figure."""
    try:
        return float(line.split()[2])
    except (IndexError, ValueError):
        return None


def host_load() -> tuple[float, int]:
    """The host's 1-minute load average and the CPUs this process may run on."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        return os.getloadavg()[0], cpus
    except OSError:
        return 0.0, cpus


def announce(console: Console, family: str, seconds: float | None,
             how: str = "from a probe before starting", low: float | None = None,
             load: tuple[float, int] | None = None) -> None:
    """Print a family's expected duration when it is ANNOUNCE_S or more, naming the
    family's options that shorten it: a long benchmark says so before it runs.  low:
    the figure at the probe's fastest rates; a range is said when seconds is more than
    RANGE_WIDE x low (on a busy host a probe's calls vary: one figure would claim more
    than the probe knows).  load: (load average, CPUs), the host's unless given; a host
    loaded beyond its CPUs gets a caution: a probe sees the CPU share of its own
    moment only (bench alltoall under a load rising from 15 to 26 on 2 CPUs took 6.6x
    its probe's figure)."""
    if seconds is not None and seconds >= ANNOUNCE_S:
        from ..units import fmt_time
        if low is not None and 0 < low and seconds > RANGE_WIDE * low:
            said = (f"{fmt_time(low)} to {fmt_time(seconds)} ({how}; its fastest and its "
                    f"typical calls differ: the host is busy)")
        else:
            said = f"about {fmt_time(seconds)} ({how})"
        avg, cpus = load if load is not None else host_load()
        busy = (f"; the host is busy (load {avg:.1f} on {cpus} CPUs): as the load changes, "
                f"so does the time" if avg > cpus else "")
        console.print(f"{family}: expected duration {said}{busy}; "
                      f"{SHORTEN.get(family, '--samples')} shorten it",
                      highlight=False, markup=False)


def _finish(proc: subprocess.Popen[str], fw: mpi_env.Forwarder,
            timeout: float | None) -> int:
    """The job's mpirun-style exit status once it ends.  A job that outlives timeout is
    stopped (all of it) and becomes one line of error; a signal passed on to it by fw
    raises JobStopped."""
    try:
        rc = mpi_env.exit_status(proc.wait(timeout=timeout))
    except subprocess.TimeoutExpired:
        mpi_env.stop(proc)
        raise UserError(f"benchmark did not finish within {timeout} s") from None
    fw.raise_if_stopped(rc)
    return rc


def run_streamed(launcher: list[str], argv: list[str], family: str,
                 timeout: float | None = None, extra_env: dict[str, str | None] | None = None,
                 progress: bool = True) -> tuple[subprocess.CompletedProcess[str], float | None]:
    """run_program for a program that sends its expected duration (MLB-ESTIMATE <s>) on
    stderr before its long part: announced as it comes (not after the run; progress
    False: not announced).  Returns the finished job (stdout, the other stderr lines) and
    the expected seconds (None: none sent).  extra_env: variables to set (None value:
    unset), as run_program's env."""
    if shutil.which(launcher[0]) is None:
        raise UserError(f"launcher '{launcher[0]}' not found")
    env = _job_env(extra_env)
    cmd = [*launcher, *argv]
    expected = None
    other: list[str] = []
    console = Console(stderr=True)
    with tempfile.TemporaryFile("w+") as out, mpi_env.forwarding() as fw:
        proc = mpi_env.popen(fw, cmd, stdout=out, stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith(ESTIMATE):
                expected = estimate(line)
                if progress:
                    announce(console, family, expected, low=estimate_low(line))
            else:
                other.append(line)
        rc = _finish(proc, fw, timeout)
        out.seek(0)
        return subprocess.CompletedProcess(cmd, rc, out.read(), "".join(other)), expected


def run_bench(launcher: list[str], family: str, options: list[str], *,
              progress: bool = True, label: str = "", timeout: float | None = None,
              extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run mpilens-bench and return its JSON document.

    The overhead family runs under the profiler (mpilens-exec prefix); its
    profile goes to a temporary file unless MPILENS_OUTPUT is set.  extra_env:
    variables set for this run only."""
    exe = paths.artifact("bin/mpilens-bench")
    if shutil.which(launcher[0]) is None:
        raise UserError(f"launcher '{launcher[0]}' not found")
    env = mpi_env.job_env(paths.mpi_flavour(), allow_root=True)
    env.update(extra_env or {})
    with tempfile.TemporaryDirectory(prefix="mpilens-bench-") as tmp, \
            mpi_env.forwarding() as fw:
        out = Path(tmp) / "result.json"
        cmd = [*launcher, str(exe), family, *options, "--out", str(out), "--progress"]
        if family == "overhead":  # under the profiler, its profile in tmp unless asked
            job = profiled.prepare(cmd, os.environ.get("MPILENS_OUTPUT")
                                   or str(Path(tmp) / "overhead.prof"))
            cmd = job.argv
            env.update(job.settings)
        proc = mpi_env.popen(fw, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, env=env)
        other: list[str] = []
        console = Console(stderr=True)
        bar = Progress(TextColumn(f"[bold]{family}[/] {label}"), BarColumn(),
                       TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                       console=console, transient=True, disable=not progress)
        assert proc.stderr is not None
        with bar:
            task = bar.add_task(family, total=None)
            for line in proc.stderr:
                if line.startswith(ESTIMATE):
                    announce(console, family, estimate(line), low=estimate_low(line))
                elif line.startswith(PROGRESS):
                    done, total = (int(v) for v in line.split()[1:3])
                    bar.update(task, completed=done, total=total)
                else:
                    other.append(line)
        rc = _finish(proc, fw, timeout)
        usage = [ln[len(ERROR):].strip() for ln in other if ln.startswith(ERROR)]
        if rc == 2 and usage:
            raise UserError(usage[0])
        if rc not in (0, 1) or not out.exists():
            sys.stderr.write("".join(other[-40:]))
            raise BenchFailed(f"{' '.join(cmd)} failed with exit status {rc}")
        for ln in other:        # warnings the program printed on success
            sys.stderr.write(ln)
        doc: dict[str, Any] = json.loads(out.read_text())
        return doc
