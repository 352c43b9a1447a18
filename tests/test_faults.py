"""Faults while the profile is written (docs/runtime.md, Writing the profile): real 2-rank
jobs whose output directory is full, nearly full, read-only, removed during the run, or
named by a long path; and outputs refused at MPI_Init (docs/configuration.md).

Every case checks the one line rank 0 prints, the exit status (the application's, 0),
where the profile went and that it is complete (the calls each rank made, known from the
program's source), and that nothing else is left: no temporary file, no truncated file
under a final name.

Full and read-only file systems are small tmpfs mounts made by the test (root or
CAP_SYS_ADMIN is needed: the container CI runs in has it; elsewhere these tests skip)
and unmounted afterwards.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import launcher, mpi_env, run_mpi
from mpilens.report.profile import load
from test_cli_support import EVERY, STEPS, N, example, mpilens, per_rank_calls

NP = 2
ENOSPC = os.strerror(errno.ENOSPC)
# Open MPI keeps its session directory (PMIx's shared memory) in $TMPDIR: the tests' full
# or removed $TMPDIR is the profile's fallback only, not the MPI's
SESSION_DIR = {"OMPI_MCA_orte_tmpdir_base": "/tmp"}


def heat(build: Path) -> list[str | Path]:
    return [build / "bin" / "mpilens-exec", example("heat2d"), str(N), str(STEPS), str(EVERY)]


def job(build: Path, out: Path | str, tmpdir: Path, cwd: Path,
        extra: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """A profiled heat2d job: (exit status, mpilens's lines on stderr)."""
    env = {"MPILENS_OUTPUT": str(out), "TMPDIR": str(tmpdir), **SESSION_DIR, **(extra or {})}
    proc = run_mpi(NP, heat(build), env=env, check=False, timeout=120, cwd=cwd)
    assert "Traceback" not in proc.stderr and "overflow" not in proc.stderr, proc.stderr
    return proc.returncode, [ln for ln in proc.stderr.splitlines() if ln.startswith("mpilens:")]


def fell_back(out: Path | str, reason: str, alt: Path) -> str:
    """The one line of a profile written to $TMPDIR instead (docs/runtime.md)."""
    return f"mpilens: cannot write profile {out}: {reason}: profile written to {alt}/p.prof instead"


def assert_complete(path: Path, calls: dict[str, int] | None = None) -> None:
    """The profile at path is whole: every rank line, each with its exact calls."""
    prof = load(path)
    assert len(prof.ranks) == NP
    want = calls or per_rank_calls()
    for r in prof.ranks:
        assert {f: r["functions"][f]["calls"] for f in want} == want


def names(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """mount(name, size, ro): a tmpfs of its own at tmp_path/name, unmounted at the end."""
    mounted: list[Path] = []

    def mount(name: str, size: str = "64k", ro: bool = False) -> Path:
        d = tmp_path / name
        d.mkdir()
        opts = f"size={size},mode=1777" + (",ro" if ro else "")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(d)],
                           capture_output=True, text=True, check=False)
        # not root / no CAP_SYS_ADMIN: no small file system to fill (CI runs as root)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
        mounted.append(d)
        return d

    yield mount
    for d in reversed(mounted):
        subprocess.run(["umount", str(d)], check=False)


def fill(d: Path, leave: int = 0) -> None:
    """Fills the file system of d, leaving `leave` bytes free."""
    st = os.statvfs(d)
    with open(d / "fill", "wb") as f:
        size = st.f_bavail * st.f_frsize - leave
        try:
            f.write(b"\0" * size)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    st = os.statvfs(d)
    assert st.f_bavail * st.f_frsize == leave


# ---- the file system: full, nearly full, read-only ----

def test_full_filesystem_falls_back_to_tmpdir(build: Path, tmp_path: Path, tmpfs) -> None:
    full, alt = tmpfs("full"), tmp_path / "alt"
    alt.mkdir()
    fill(full)
    rc, lines = job(build, full / "p.prof", alt, tmp_path)
    assert rc == 0
    assert lines == [fell_back(f"{full}/p.prof", ENOSPC, alt)]
    assert names(full) == {"fill"} and names(alt) == {"p.prof"}
    assert_complete(alt / "p.prof")


def test_nearly_full_filesystem_leaves_no_truncated_file(build: Path, tmp_path: Path,
                                                        tmpfs) -> None:
    near, alt = tmpfs("near"), tmp_path / "alt"
    alt.mkdir()
    fill(near, leave=8192)
    rc, lines = job(build, near / "p.prof", alt, tmp_path)
    assert rc == 0
    assert lines == [fell_back(f"{near}/p.prof", ENOSPC, alt)]
    assert (alt / "p.prof").stat().st_size > 8192  # it did not fit
    assert names(near) == {"fill"}
    assert_complete(alt / "p.prof")


def test_full_filesystem_and_full_fallback(build: Path, tmp_path: Path, tmpfs) -> None:
    full, alt = tmpfs("full"), tmpfs("alt")
    fill(full)
    fill(alt)
    rc, lines = job(build, full / "p.prof", alt, tmp_path)
    assert rc == 0  # the application's status, not the profiler's
    assert lines == [(f"mpilens: profile not written: {full}/p.prof: {ENOSPC}; "
                      f"{alt}/p.prof: {ENOSPC}")]
    assert names(full) == {"fill"} and names(alt) == {"fill"}


def test_read_only_directory(build: Path, tmp_path: Path, tmpfs) -> None:
    ro, alt = tmpfs("ro", ro=True), tmp_path / "alt"
    alt.mkdir()
    rc, lines = job(build, ro / "p.prof", alt, tmp_path)
    assert rc == 0
    assert lines == [fell_back(f"{ro}/p.prof", os.strerror(errno.EROFS), alt)]
    assert_complete(alt / "p.prof")


# File systems without posix_fallocate (some NFS and parallel file systems): the space is
# not reserved, so the MPI-IO write itself meets the full disk (Open MPI reports a short
# write as success): every rank must still agree, close, and take the same path.
NOFALLOC = """#include <errno.h>
#include <sys/types.h>
int posix_fallocate(int fd, off_t o, off_t n) { (void)fd; (void)o; (void)n; return EOPNOTSUPP; }
int posix_fallocate64(int fd, off_t o, off_t n) { (void)fd; (void)o; (void)n; return EOPNOTSUPP; }
"""


@pytest.fixture(scope="module")
def nofalloc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("nofalloc")
    (d / "nofalloc.c").write_text(NOFALLOC)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "nofalloc.so"), str(d / "nofalloc.c")],
                   check=True)
    return d / "nofalloc.so"


# MPILENS_WRITE: the ranks' pwrite (auto's choice up to 1,024 ranks) and MPI-IO's write
@pytest.mark.parametrize("writer", ["posix", "mpiio"])
@pytest.mark.parametrize("leave", [0, 8192])
def test_full_filesystem_without_reservation(build: Path, tmp_path: Path, tmpfs, nofalloc: Path,
                                             leave: int, writer: str) -> None:
    full, alt = tmpfs("full"), tmp_path / "alt"
    alt.mkdir()
    fill(full, leave)
    rc, lines = job(build, full / "p.prof", alt, tmp_path,
                    {"LD_PRELOAD": str(nofalloc), "MPILENS_WRITE": writer})
    assert rc == 0
    assert len(lines) == 1 and lines[0].startswith(f"mpilens: cannot write profile {full}/p.prof: ")
    assert lines[0].endswith(f": profile written to {alt}/p.prof instead"), lines
    assert names(full) == {"fill"} and names(alt) == {"p.prof"}
    assert_complete(alt / "p.prof")


# ---- during the run: the directory removed, the disk full at a partial dump ----

def _wait_for(cond: Callable[[], bool], what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def sig_wait_job(build: Path, tmp_path: Path, env: dict[str, str],
                 during: Callable[[], None]) -> tuple[int, str, str]:
    """tests/progs/sig_wait on NP ranks: `during` runs once every rank is in its loop of
    MPI_Allreduce, then SIGUSR1 ends the job.  (status, stdout, stderr)."""
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    proc = subprocess.Popen(launcher(NP) + [str(build / "bin" / "mpilens-exec"),
                                            str(build / "tests" / "sig_wait"), str(pids_dir)],
                            env=mpi_env({**SESSION_DIR, **env}), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        _wait_for(lambda: len(list(pids_dir.glob("rank-*.pid"))) == NP or
                  proc.poll() is not None, "the ranks to start")
        assert proc.poll() is None, proc.communicate()
        pids = [int(p.read_text()) for p in sorted(pids_dir.glob("rank-*.pid"))]
        during()
        os.kill(pids[0], signal.SIGUSR1)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in pids:  # no rank left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def _rounds(out: str) -> int:
    return int(out.split("after ")[1].split()[0])


def test_output_directory_removed_during_the_run(build: Path, tmp_path: Path) -> None:
    out, alt = tmp_path / "out", tmp_path / "alt"
    out.mkdir()
    alt.mkdir()
    rc, stdout, err = sig_wait_job(build, tmp_path, {"MPILENS_OUTPUT": str(out / "p.prof"),
                                                     "TMPDIR": str(alt)},
                                   lambda: shutil.rmtree(out))
    assert rc == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("mpilens:")]
    assert lines == [fell_back(f"{out}/p.prof", os.strerror(errno.ENOENT), alt)]
    assert not out.exists() and names(alt) == {"p.prof"}
    assert_complete(alt / "p.prof", {"MPI_Allreduce": _rounds(stdout) + 1})


def test_disk_full_during_partial_dumps(build: Path, tmp_path: Path, tmpfs) -> None:
    """The time-limit dump (MPILENS_DUMP_AT) finds the disk full: the job goes on, ends
    with its own status, and the complete profile still goes to $TMPDIR."""
    full, alt = tmpfs("full"), tmp_path / "alt"
    alt.mkdir()
    fill(full)
    partial = full / "p.prof.partial"

    def after_the_dump() -> None:
        time.sleep(1.0)  # the dump is due 0.2 s after MPI_Init

    rc, stdout, err = sig_wait_job(build, tmp_path, {"MPILENS_OUTPUT": str(full / "p.prof"),
                                                     "TMPDIR": str(alt),
                                                     "MPILENS_DUMP_AT": "0.2"}, after_the_dump)
    assert rc == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("mpilens:")]
    assert lines[-1] == fell_back(f"{full}/p.prof", ENOSPC, alt)
    assert any("partial" in ln and ENOSPC in ln for ln in lines[:-1]), lines  # said so
    assert_complete(alt / "p.prof", {"MPI_Allreduce": _rounds(stdout) + 1})
    # no partial file, whole or truncated, is left: the complete profile was written
    assert names(full) == {"fill"} and not partial.exists()


# ---- long paths ----

def _long_dir(base: Path, total: int) -> Path:
    """A directory path of `total` characters under base, in names of at most 200."""
    d = str(base)
    while len(d) < total:
        n = min(200, total - len(d) - 1)
        d += "/" + "d" * n if n > 0 else "d"  # (one character short: the last name grows)
    return Path(d)


# 160: the temporary name is short enough for MPI-IO; longer ones are written with pwrite
@pytest.mark.parametrize("length", [160, 229, 272, 1000])
def test_long_output_path(build: Path, tmp_path: Path, length: int) -> None:
    d = _long_dir(tmp_path, length - len("/p.prof"))
    d.mkdir(parents=True)
    out = d / "p.prof"
    assert len(str(out)) == length
    rc, lines = job(build, out, tmp_path, tmp_path)
    assert rc == 0 and lines == [f"mpilens: profile written to {out}"]
    assert names(d) == {"p.prof"}
    assert_complete(out)


def test_long_output_path_through_mpilens_run(build: Path, tmp_path: Path) -> None:
    d = _long_dir(tmp_path, 272 - len("/p.prof"))
    d.mkdir(parents=True)
    out = d / "p.prof"
    proc = mpilens("run", "-o", out, "--", *launcher(NP), *heat(build)[1:], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_complete(out)


def test_output_path_near_path_max(build: Path, tmp_path: Path) -> None:
    """4,090 characters: accepted at MPI_Init, but its temporary name would pass
    PATH_MAX: the profile goes to $TMPDIR under its file name."""
    alt = tmp_path / "alt"
    alt.mkdir()
    out = _long_dir(tmp_path, 4090 - len("/p.prof")) / "p.prof"
    assert len(str(out)) == 4090
    rc, lines = job(build, out, alt, tmp_path)
    assert rc == 0
    assert lines == [fell_back(out, os.strerror(errno.ENAMETOOLONG), alt)]
    assert_complete(alt / "p.prof")


def test_255_character_file_name(build: Path, tmp_path: Path) -> None:
    out = tmp_path / ("n" * 250 + ".prof")
    rc, lines = job(build, out, tmp_path, tmp_path)
    assert rc == 0 and lines == [f"mpilens: profile written to {out}"]
    assert names(tmp_path) == {out.name}
    assert_complete(out)


# ---- outputs refused at MPI_Init ----

def refused(build: Path, tmp_path: Path, out: str) -> str:
    proc = run_mpi(NP, heat(build), env={"MPILENS_OUTPUT": out}, check=False, timeout=60,
                   cwd=tmp_path)
    assert proc.returncode == 2 and "heat2d:" not in proc.stdout, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("mpilens:")]
    assert len(lines) == 1, proc.stderr  # (Open MPI adds its own lines about the exit status)
    return lines[0]


def test_device_output_refused(build: Path, tmp_path: Path) -> None:
    line = refused(build, tmp_path, "/dev/null")
    assert line.startswith("mpilens: MPILENS_OUTPUT='/dev/null' is invalid: it exists and is "
                           "not a regular file"), line
    assert "MPILENS_PROFILE=off" in line
    assert not Path("/dev/null.1").exists()


def test_directory_output_refused(build: Path, tmp_path: Path) -> None:
    line = refused(build, tmp_path, str(tmp_path))
    assert line.startswith(f"mpilens: MPILENS_OUTPUT='{tmp_path}' is invalid: it is a "
                           f"directory; give a file name in it, such as "
                           f"{tmp_path}/mpilens-%j.prof.gz"), line
    line = refused(build, tmp_path, f"{tmp_path}/new/")
    assert f"'{tmp_path}/new/' is invalid: it names a directory" in line
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    line = refused(build, tmp_path, str(fifo))
    assert "it exists and is not a regular file" in line
    assert names(tmp_path) == {"fifo"} and not Path(f"{tmp_path}.1").exists()


def test_too_long_output_refused(build: Path, tmp_path: Path) -> None:
    line = refused(build, tmp_path, str(tmp_path / ("x" * 256)))
    assert "is invalid: a name in it is 256 characters long, the limit is 255" in line
    long = str(_long_dir(tmp_path, 4096))
    line = refused(build, tmp_path, long)
    assert "is invalid: it is 4096 characters long, the limit is 4095" in line


# ---- blanks around numbers; stated bounds ----

def test_blanks_around_numbers_are_ignored(tmp_path: Path) -> None:
    for v in (" 2", "2 "):
        proc = mpilens("config", "--json", env={"MPILENS_CALLSITES": v})
        assert proc.returncode == 0 and '"error": null' in proc.stdout, (v, proc.stderr)
    proc = mpilens("config", env={"MPILENS_HANG_AFTER": "1e300"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("mpilens: MPILENS_HANG_AFTER='1e300' is invalid: it must be "
                                   "> 0 and at most 1e9 seconds (about 31 years) (expected a "
                                   "number of seconds > 0 and <= 1e9)")


def test_blanks_around_callsite_depth_in_a_job(build: Path, tmp_path: Path) -> None:
    for i, v in enumerate((" 2", "2 ")):
        out = tmp_path / f"c{i}.prof"
        rc, _ = job(build, out, tmp_path, tmp_path, {"MPILENS_CALLSITES": v})
        assert rc == 0
        assert load(out).header["callsite_depth"] == 2

