"""tests/flaky.sh, the flake finder (docs/install.md, The test suite), on a small test
file of known outcomes: one test fails in the second run only, one in every run, one
never; then a run interrupted with SIGINT.  Its busy loops carry a marker in their
environment, so the tests can see that none is left (other sessions' are not counted).

No MPI job: the runs are `make _test` on the file, which launches none."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import FLAVOUR, REPO

SCRIPT = REPO / "tests" / "flaky.sh"
CORES = len(os.sched_getaffinity(0))  # nproc's count

KNOWN = '''
import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def test_second_run_fails():
    runs = HERE / "runs"
    n = int(runs.read_text()) + 1 if runs.exists() else 1
    runs.write_text(str(n))
    assert n != 2


@pytest.mark.parametrize("word", ["a b", "c"])
def test_always_fails_for_a_b(word):
    assert word != "a b"


def test_waits(tmp_path):
    (HERE / "started").touch()
    while os.environ.get("FLAKY_WAIT") and not (HERE / "go").exists():
        import time
        time.sleep(0.05)
'''


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "FLAKY_TEST_MARK": str(tmp)}


def _marked(tmp: Path) -> list[int]:
    """Processes whose environment has this test's marker (its busy loops, runs)."""
    mark = f"FLAKY_TEST_MARK={tmp}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if mark in (d / "environ").read_bytes().split(b"\0"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def _flaky(tmp: Path, *args: str) -> subprocess.Popen:
    # SIGINT as a terminal's Ctrl-C finds it (pytest may run with it ignored)
    return subprocess.Popen([str(SCRIPT), *args], cwd=tmp, env=_env(tmp), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_table_of_every_test_that_failed(tmp_path: Path) -> None:
    d = tmp_path / "known"
    d.mkdir()
    (d / "test_known.py").write_text(KNOWN)
    out = tmp_path / "out"
    proc = _flaky(tmp_path, "-n", "3", "-l", "1", "-m", FLAVOUR, "-o", str(out),
                  str(d / "test_known.py"))
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 1, (stdout, stderr)
    lines = stdout.splitlines()
    assert lines[:2] == [f"tests/flaky.sh: 3 run(s) per MPI ({FLAVOUR}), 1 busy loop(s) on "
                         f"{CORES} cores", f"output in {out}"]
    assert [ln.split(":", 1)[1].rsplit(" (", 1)[0] for ln in lines
                                                     if ln.startswith(f"{FLAVOUR:<9} run ")] == \
        [" 1 failed, 3 passed", " 2 failed, 2 passed", " 1 failed, 3 passed"]
    table = lines[lines.index("failed  of  MPI       test") + 1:]
    ident = os.path.relpath(d / "test_known.py", REPO)
    assert table == [f"{3:6d} {3:3d}  {FLAVOUR:<9} {ident}::test_always_fails_for_a_b[a b]",
                     f"{1:6d} {3:3d}  {FLAVOUR:<9} {ident}::test_second_run_fails"]
    assert sorted(p.name for p in out.iterdir()) == \
        sorted([f"{FLAVOUR}-build.log"] + [f"{FLAVOUR}-{r}.log" for r in (1, 2, 3)])
    # (paths as they are: the temporary directory's, absolute or relative to the checkout)
    assert all(len(ln) <= 80 for ln in lines if str(tmp_path) not in ln and ident not in ln)
    assert _marked(tmp_path) == []  # its busy loop ended with it

    # -k narrows; nothing failed: exit status 0
    proc = _flaky(tmp_path, "-n", "1", "-l", "0", "-m", FLAVOUR, "-k", "waits or c]",
                  str(d / "test_known.py"))
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, (stdout, stderr)
    assert stdout.splitlines()[-1] == "no test failed in the 1 run(s) per MPI under 0 busy loop(s)"
    assert " 2 passed, 2 deselected" in stdout


def test_interrupted_run_leaves_nothing_running(tmp_path: Path) -> None:
    d = tmp_path / "known"
    d.mkdir()
    (d / "test_known.py").write_text(KNOWN)
    # the waiting test waits for "go", which never comes
    proc = subprocess.Popen([str(SCRIPT), "-n", "2", "-l", "2", "-m", FLAVOUR, "-k", "waits",
                             str(d / "test_known.py")], cwd=tmp_path,
                            env={**_env(tmp_path), "FLAKY_WAIT": "1"}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.monotonic() + 300
    while not (d / "started").exists():
        assert time.monotonic() < end and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert len(_marked(tmp_path)) >= 4  # the script, 2 busy loops, make and pytest
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert stderr.splitlines()[-1].startswith("tests/flaky.sh: interrupted; output in ")
    assert "run 1 of 2" not in stdout  # the run did not go on
    assert stdout.splitlines()[-1] == \
        "no test failed in the 2 run(s) per MPI that ended under 2 busy loop(s)"
    assert _marked(tmp_path) == []


def test_bad_usage_one_line(tmp_path: Path) -> None:
    for args, why in ((["-n", "0"], "-n '0' is invalid: expected a number of runs >= 1"),
                      (["-l", "x"], "-l 'x' is invalid: expected a number of busy loops >= 0"),
                      (["-l", str(CORES + 1)],
                       f"-l {CORES + 1} is more busy loops than the "
                       f"{CORES} cores"),
                      (["-m", "lam"], "-m 'lam' is invalid: expected openmpi, mpich or intelmpi "
                                      "(comma-separated)"),
                      (["-j", "tests/test_flight.py"], "-j chooses the test files itself: "
                                                      "give no TEST"),
                      (["nosuch.py"], "'nosuch.py': no such test file"),
                      ([str(tmp_path / "no.py::test_x")],
                       f"'{tmp_path / 'no.py::test_x'}': no such test file"),
                      (["-q"], "unknown option -q (tests/flaky.sh -h: usage)"),
                      (["-n"], "-n needs a value (tests/flaky.sh -h: usage)")):
        proc = subprocess.run([str(SCRIPT), *args], cwd=REPO, env=_env(tmp_path),
                              capture_output=True, text=True, timeout=60, check=False)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"tests/flaky.sh: {why}\n")
