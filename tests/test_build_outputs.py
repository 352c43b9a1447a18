"""`make demo` and `make build` build what the documented commands use next
(docs/install.md): the fast reader lib/libmpilens_read.so (report, html, diff),
mpilens-bench-alltoall and mpilens-bench-repro (bench alltoall, bench repro, tune);
and `report`, `html`, `diff` and `advise` say in one line when they read a profile
without the fast reader."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from mpilens.report import fastread
from test_cli_support import mpilens, mpilens_inproc

# what a documented command needs beyond the profiler and the examples
NEEDED = ["lib/libmpilens_read.so", "bin/mpilens-bench", "bin/mpilens-bench-alltoall",
          "bin/mpilens-bench-repro"]
TARGETS = ["mpilens", "mpilens_read", "heat2d", "heat2d_f", "mpilens-bench",
           "mpilens-bench-alltoall", "mpilens-bench-repro"]
V1 = REPO / "tests" / "data" / "profile_v1.prof"  # 2 ranks
NOTE = "mpilens: slower Python reader: "


def _dry_run(target: str) -> list[str]:
    """The `cmake --build` line `make -n <target>` would run (nothing is built)."""
    proc = subprocess.run(["make", "-n", "--no-print-directory", target, "MPI=openmpi",
                           "BUILD=build/dry"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("cmake --build ")]
    assert len(lines) == 1, proc.stdout
    return shlex.split(lines[0])


def test_demo_builds_what_the_documents_use() -> None:
    argv = _dry_run("_demo")
    assert argv[argv.index("--target") + 1:] == TARGETS
    install = subprocess.run(["make", "--no-print-directory", "install-targets"], cwd=REPO,
                             capture_output=True, text=True, timeout=60, check=True)
    assert install.stdout.split() == TARGETS  # make install installs the same programs


def test_build_builds_everything() -> None:
    assert "--target" not in _dry_run("_build")  # cmake's all: the test programs too


def test_build_has_the_fast_reader_and_the_benchmarks(build: Path) -> None:
    missing = [rel for rel in NEEDED if not (build / rel).is_file()]
    assert missing == [], f"{build}: {missing} not built"


def _note(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.startswith(NOTE)]


def test_report_is_quiet_with_the_fast_reader(build: Path, tmp_path: Path) -> None:
    fastread._lib.cache_clear()
    fastread.refused.clear()  # files an earlier test loaded in this process
    assert fastread.available() and fastread.fallback_note() is None
    proc = mpilens("report", V1, env={"COLUMNS": "80"})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    off = mpilens("report", V1, env={"COLUMNS": "80", "MPILENS_FASTREAD": "off"})
    assert off.returncode == 0 and off.stderr == ""  # asked for: nothing to say
    assert off.stdout == proc.stdout
    diff = mpilens("diff", V1, V1, env={"COLUMNS": "80"})
    assert diff.returncode == 0 and diff.stderr == ""
    page = tmp_path / "v1.html"
    html = mpilens("html", V1, "-o", page)
    assert html.returncode == 0 and html.stderr == f"mpilens: HTML report written to {page}\n"


def test_report_says_when_the_fast_reader_is_absent(tmp_path: Path) -> None:
    ref = mpilens("report", V1, env={"COLUMNS": "80", "MPILENS_FASTREAD": "off"})
    named = mpilens("report", V1, env={"COLUMNS": "80",
                                       "MPILENS_FASTREAD": str(tmp_path / "missing.so")})
    assert named.returncode == 0
    assert named.stderr == NOTE + "MPILENS_FASTREAD names no loadable library\n"
    assert named.stdout == ref.stdout
    # no library where the runtime and the build tree would hold it; a file that is
    # no library there
    lib = tmp_path / "lib" / fastread.LIB
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("MPILENS_FASTREAD", raising=False)
        mp.setattr(fastread, "_candidates", lambda: [lib])
        fastread._lib.cache_clear()
        got = mpilens_inproc("report", V1)
        assert got.returncode == 0
        assert _note(got) == [NOTE + "libmpilens_read.so not built (make build)"]
        lib.parent.mkdir()
        lib.write_bytes(b"not a library\n")
        fastread._lib.cache_clear()
        got = mpilens_inproc("report", V1)
        assert _note(got) == [NOTE + "libmpilens_read.so does not load (make build)"]
        assert max(len(ln) for ln in _note(got)) <= 80
    fastread._lib.cache_clear()


def test_report_says_when_the_fast_reader_leaves_a_file(build: Path, tmp_path: Path) -> None:
    """A file the library loads but leaves to the Python reader (an escaped string):
    the same report, and the line naming the file (a million-rank profile read this
    way takes minutes, not seconds); the next file it reads is quiet again."""
    docs = V1.read_text().splitlines(True)
    esc = tmp_path / ("escaped-" + "x" * 60 + ".prof")  # a long name: cut to 80 columns
    esc.write_text(docs[0] + docs[1].replace('"host":"', '"host":"\\u0030', 1)
                   + "".join(docs[2:]))
    assert '"host":"\\u0030' in esc.read_text()
    got = mpilens_inproc("report", esc)
    assert got.returncode == 0 and not fastread.last_used
    (line,) = _note(got)
    assert line.startswith(NOTE + "the fast one left ...") and line.endswith("x.prof to it")
    assert len(line) == 80
    assert mpilens_inproc("report", V1).stderr == ""  # said once, not carried on
    short = tmp_path / "esc.prof"
    short.write_bytes(esc.read_bytes())
    got = mpilens("diff", V1, short, env={"COLUMNS": "80"})
    assert got.returncode == 0 and got.stderr == NOTE + "the fast one left esc.prof to it\n"


def test_html_diff_advise_say_when_the_fast_reader_is_absent(tmp_path: Path) -> None:
    """The line of report, once per command (diff reads two profiles), on stderr."""
    missing = {"COLUMNS": "80", "MPILENS_FASTREAD": str(tmp_path / "missing.so")}
    line = NOTE + "MPILENS_FASTREAD names no loadable library\n"
    ref = mpilens("diff", V1, V1, env={"COLUMNS": "80", "MPILENS_FASTREAD": "off"})
    assert ref.returncode == 0 and ref.stderr == ""
    got = mpilens("diff", V1, V1, env=missing)
    assert got.returncode == 0 and got.stderr == line
    assert got.stdout == ref.stdout
    page = tmp_path / "v1.html"
    got = mpilens("html", V1, "-o", page, env=missing)
    assert got.returncode == 0
    assert got.stderr == line + f"mpilens: HTML report written to {page}\n"
    # (a model measured with the profile's MPI: the build's own MPI may be another one)
    from test_advise import write_model
    model = write_model(tmp_path / "model.json", V1)
    got = mpilens("advise", V1, "--no-measure", "--model", model, env=missing)
    assert got.returncode == 0 and _note(got) == [line.rstrip("\n")], got.stderr
    lib = tmp_path / "lib" / fastread.LIB  # not built: the mechanism of report's test
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("MPILENS_FASTREAD", raising=False)
        mp.setattr(fastread, "_candidates", lambda: [lib])
        fastread._lib.cache_clear()
        built = NOTE + "libmpilens_read.so not built (make build)"
        got = mpilens_inproc("diff", V1, V1)
        assert got.returncode == 0 and _note(got) == [built]
        got = mpilens_inproc("html", V1, "-o", page, "--force")
        assert got.returncode == 0 and _note(got) == [built]
    fastread._lib.cache_clear()
