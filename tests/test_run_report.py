"""`mpilens run` summarises the profile rank 0 says it wrote (MPILENS_REPORT_TO,
profile_write.c ml_report_to), not a file guessed by name or time: with the output's
file system full (the profile goes to $TMPDIR), with a file appearing at the output path
during the job (the profile goes to X.prof.1), and with no profile at all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import launcher
from test_cli_support import EVERY, STEPS, N, cli_env, example
from test_faults import ENOSPC, SESSION_DIR, _wait_for, assert_complete, fill, names
from test_faults import tmpfs  # noqa: F401  (the fixture)

NP = 2


def _run(build: Path, out: Path, command: list[str], env: dict[str, str],
         cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mpilens.cli", "run", "--output", str(out),
                             "--", *launcher(NP), *command],
                            env=cli_env({**SESSION_DIR, **env}), cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("mpilens:")]


def test_full_output_disk_profile_in_tmpdir(build: Path, tmp_path: Path, tmpfs) -> None:
    full, alt = tmpfs("full"), tmp_path / "alt"
    alt.mkdir()
    fill(full)
    proc = _run(build, full / "p.prof", [str(example("heat2d")), str(N), str(STEPS), str(EVERY)],
                {"TMPDIR": str(alt)}, tmp_path)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err  # the job's status
    lines = _lines(err)
    assert lines[0] == (f"mpilens: cannot write profile {full}/p.prof: {ENOSPC}: profile "
                        f"written to {alt}/p.prof instead")
    assert lines[1] == (f"mpilens: the profile is {alt}/p.prof, not {full}/p.prof (the "
                        f"runtime's line above says why)")
    assert lines[2].startswith(f"mpilens: profile {alt}/p.prof: {NP} ranks, wall ")
    assert names(full) == {"fill"} and names(alt) == {"p.prof"}  # no report left behind
    assert_complete(alt / "p.prof")


def test_file_appearing_at_the_output(build: Path, tmp_path: Path) -> None:
    """Another program writes X.prof while the job runs: the runtime writes X.prof.1,
    and run summarises X.prof.1 and says so; X.prof is left as it was."""
    out, pids = tmp_path / "x.prof", tmp_path / "pids"
    pids.mkdir()
    proc = _run(build, out, [str(build / "tests" / "sig_wait"), str(pids)], {}, tmp_path)
    try:
        _wait_for(lambda: len(list(pids.glob("rank-*.pid"))) == NP or
                  proc.poll() is not None, "the ranks to start")
        assert proc.poll() is None, proc.communicate()
        other = b'{"format":"mpilens-profile","version":2,"job_id":"another job"}\n'
        out.write_bytes(other)
        os.kill(int((pids / "rank-0.pid").read_text()), signal.SIGUSR1)
        stdout, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    taken = tmp_path / "x.prof.1"
    lines = _lines(err)
    assert lines[0] == f"mpilens: profile written to {taken}"
    assert lines[1] == (f"mpilens: the profile is {taken}, not {out} (the runtime's line "
                        f"above says why)")
    assert lines[2].startswith(f"mpilens: profile {taken}: {NP} ranks, wall ")
    assert out.read_bytes() == other
    rounds = int(stdout.split("after ")[1].split()[0])
    assert_complete(taken, {"MPI_Allreduce": rounds + 1})
    assert names(tmp_path) == {"x.prof", "x.prof.1", "pids"}


def test_no_profile_says_why(build: Path, tmp_path: Path, tmpfs) -> None:
    """The output and $TMPDIR both full: rank 0 says no profile and why; run repeats it,
    and exits 0 as the job did (the application's status is never changed)."""
    full, alt = tmpfs("full"), tmpfs("alt")
    fill(full)
    fill(alt, leave=40960)  # room for run's report (32 KiB), not for the profile (16 KiB)
    proc = _run(build, full / "p.prof", [str(example("heat2d")), str(N), str(STEPS), str(EVERY)],
                {"TMPDIR": str(alt)}, tmp_path)
    _, err = proc.communicate(timeout=180)
    why = f"{full}/p.prof: {ENOSPC}; {alt}/p.prof: {ENOSPC}"
    assert _lines(err) == [f"mpilens: profile not written: {why}",
                           f"mpilens: no profile: {why}"], err
    assert proc.returncode == 0
    assert names(full) == {"fill"} and names(alt) == {"fill"}


def test_run_of_a_program_without_mpi(build: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mpilens.cli", "run", "--output",
                           str(tmp_path / "t.prof"), "--", "true"], env=cli_env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert _lines(proc.stderr) == [
        "mpilens: no profile (the job exited normally; rank 0 did not say it wrote one: a "
        "profile is written at MPI_Finalize)"]
    assert proc.returncode == 0
    assert names(tmp_path) == set()

