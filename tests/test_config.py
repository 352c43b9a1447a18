"""Settings: one table in libmpilens.so (the core's and every engine's), one parser, one
error format, and `mpilens config`, which asks the library itself.

Every bad input stops a real 2-rank job at MPI_Init with one line and exit status 2, and
`mpilens config` gives exactly the same line for the same environment and config file.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import REPO, read_profile, run_mpi
from test_cli_support import mpilens

NP = 2


def stop_line(build: Path, tmp_path: Path, env: dict[str, str]) -> str:
    """The one line a job stops with at MPI_Init (no profile written)."""
    full = {"MPILENS_OUTPUT": str(tmp_path / "never.prof"), **env}
    proc = run_mpi(NP, [build / "bin" / "mpilens-exec", build / "tests" / "prof_small"],
                   env=full, check=False, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("mpilens:")]
    assert len(lines) == 1, proc.stderr
    assert not list(tmp_path.glob("never.prof*"))
    return lines[0]


def cli_line(env: dict[str, str]) -> str:
    proc = mpilens("config", env=env, timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def same_line(build: Path, tmp_path: Path, env: dict[str, str], *needles: str) -> str:
    """The runtime's line and `mpilens config`'s are identical and hold every needle."""
    line = stop_line(build, tmp_path, env)
    assert cli_line(env) == line
    for n in needles:
        assert n in line, line
    return line


def conf(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "mpilens.conf"
    p.write_text(text)
    return p


# ---- the config file's bad inputs, one test each ----

def test_config_directory(build: Path, tmp_path: Path) -> None:
    d = tmp_path / "confdir"
    d.mkdir()
    same_line(build, tmp_path, {"MPILENS_CONFIG": str(d)},
              f"mpilens: MPILENS_CONFIG='{d}' is invalid: it is a directory "
              "(expected a readable regular file of 'key = value' lines)")


def test_config_fifo_does_not_hang(build: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "conf.fifo"
    os.mkfifo(fifo)  # nobody writes: opening it for reading the usual way would block
    same_line(build, tmp_path, {"MPILENS_CONFIG": str(fifo)},
              f"mpilens: MPILENS_CONFIG='{fifo}' is invalid: it is a FIFO, not a regular file")


def test_config_empty_is_rejected_like_output(build: Path, tmp_path: Path) -> None:
    same_line(build, tmp_path, {"MPILENS_CONFIG": ""},
              "mpilens: MPILENS_CONFIG='' is invalid: expected a readable regular file")
    same_line(build, tmp_path, {"MPILENS_OUTPUT": ""},
              "mpilens: MPILENS_OUTPUT='' is invalid: expected a file path")


@pytest.mark.parametrize("key", ["alltoall_lern", "repro_typo", "machines", "tuning_file_x"])
def test_misspelt_engine_key(build: Path, tmp_path: Path, key: str) -> None:
    f = conf(tmp_path, f"detail = on\n{key} = 5\n")
    line = same_line(build, tmp_path, {"MPILENS_CONFIG": str(f)},
                     f"mpilens: MPILENS_CONFIG='{f}': unknown key '{key}' at line 2: "
                     "expected one of output, include, exclude, detail,")
    for known in ("alltoall_learn", "repro", "machine", "tuning_file", "network_model"):
        assert re.search(rf"\b{known}\b", line), line


def test_more_than_64_lines_and_every_key(build: Path, tmp_path: Path) -> None:
    """No fixed limit: 80 function-name lines, then every key of the file once (line 81 on)."""
    data = json.loads(mpilens("config", "--json", env={}).stdout)
    keys = {s["key"]: s for s in data["settings"] if s["file_key"]}
    values = {"output": str(tmp_path / "all-%j.prof"), "detail": "off", "tuning_file":
              str(tmp_path / "t.tune"), "machine": "box", "quiet": "1", "exclude": "MPI_Comm_rank",
              "dump_at": "3600", "hang_after": "3600", "coll_nodes": str(NP),
              "coll_allreduce": "mpi", "coll_bcast": "mpi", "coll_allgather": "mpi",
              "coll_reduce_scatter_block": "mpi"}
    lines = ["MPI_Barrier"] * 79 + ["MPI_Allreduce"]
    for k, s in keys.items():
        if k in ("include", "network_model"):  # include: the lines above; no model file here
            continue
        lines.append(f"{k} = {values.get(k, s['default'])}")
    assert len(lines) > 80 + 15
    f = conf(tmp_path, "\n".join(lines) + "\n")
    run_mpi(NP, [build / "bin" / "mpilens-exec", build / "tests" / "prof_small"],
            env={"MPILENS_CONFIG": str(f), "MPILENS_QUIET": "1"}, timeout=60)
    [prof] = tmp_path.glob("all-*.prof")
    header, ranks = read_profile(prof)
    assert ranks == [] and header["detail"] is False
    assert set(header["functions"]) == {"MPI_Barrier", "MPI_Allreduce"}
    assert header["functions"]["MPI_Barrier"]["calls"] == 3 * NP


def test_repeated_key(build: Path, tmp_path: Path) -> None:
    f = conf(tmp_path, "detail = on\n# again\ndetail = off\n")
    same_line(build, tmp_path, {"MPILENS_CONFIG": str(f)},
              f"mpilens: MPILENS_CONFIG='{f}': key 'detail' at line 3 is already set at line 1")


def test_long_value_full_message(build: Path, tmp_path: Path) -> None:
    value = "x" * 5000
    f = conf(tmp_path, f"output = a.prof\ndetail = {value}\n")
    line = same_line(build, tmp_path, {"MPILENS_CONFIG": str(f)})
    assert line == (f"mpilens: MPILENS_CONFIG='{f}': detail='{value}' at line 2 is invalid: "
                    "expected on or off (also 1/0, yes/no, true/false)")


def test_long_function_line_blames_the_file(build: Path, tmp_path: Path) -> None:
    name = "MPI_" + "Q" * 5000
    f = conf(tmp_path, f"detail = on\n\n{name}\n")
    line = same_line(build, tmp_path, {"MPILENS_CONFIG": str(f)})
    assert line == (f"mpilens: MPILENS_CONFIG='{f}': include='{name}' at line 3 is invalid: "
                    f"no MPI function named '{name}' (expected comma- or space-separated MPI "
                    "function names or globs such as MPI_Send, MPI_*reduce* (any case))")
    assert "MPILENS_INCLUDE" not in line


def test_bad_value_in_file(build: Path, tmp_path: Path) -> None:
    f = conf(tmp_path, "output = a.prof\ndetail = maybe\n")
    same_line(build, tmp_path, {"MPILENS_CONFIG": str(f)},
              f"mpilens: MPILENS_CONFIG='{f}': detail='maybe' at line 2 is invalid: "
              "expected on or off")


def test_learn_upper_limit_stated(build: Path, tmp_path: Path) -> None:
    same_line(build, tmp_path, {"MPILENS_ALLTOALL_LEARN": "200000000"},
              "mpilens: MPILENS_ALLTOALL_LEARN='200000000' is invalid: expected an integer >= 1 "
              "and <= 100000000 (calls per candidate)")


def test_tuning_file_directory(build: Path, tmp_path: Path) -> None:
    d = tmp_path / "tunedir"
    d.mkdir()
    same_line(build, tmp_path, {"MPILENS_ALLTOALL": "adaptive", "MPILENS_TUNING_FILE": str(d)},
              f"mpilens: MPILENS_TUNING_FILE='{d}' is invalid: it is a directory (expected a "
              "tuning file written by `mpilens tune`, or a path where one will be written)")


def test_engine_check_error_same_in_cli(build: Path, tmp_path: Path) -> None:
    """An engine's check (a corrupt tuning file, read by rank 0) gives the same line too."""
    tune = tmp_path / "bad.tune"
    tune.write_text("garbage\n")
    same_line(build, tmp_path, {"MPILENS_ALLTOALL": "adaptive", "MPILENS_TUNING_FILE": str(tune)},
              f"mpilens: MPILENS_TUNING_FILE='{tune}' is corrupt: line 1 is not the header")


# ---- the config-file key `machine` (it was read from the environment only) ----

def test_machine_from_config_file(build: Path, tmp_path: Path) -> None:
    tune = tmp_path / "a2a.tune"
    f = conf(tmp_path, f"alltoall = adaptive\nalltoall_learn = 3\nalltoall_race = off\n"
                       f"alltoall_check = 0\ntuning_file = {tune}\nmachine = filebox\n"
                       f"output = {tmp_path / 'm.prof'}\n")
    run_mpi(NP, [build / "bin" / "mpilens-exec", build / "tests" / "a2a_adaptive", "30", "64"],
            env={"MPILENS_CONFIG": str(f), "MPILENS_QUIET": "1"})
    rows = [ln.split("\t") for ln in tune.read_text().splitlines()[1:] if not ln.startswith("#")]
    assert [r[:5] for r in rows] == [["filebox", str(NP), str(NP), "64", "127"]]
    # the environment still wins over the file
    run_mpi(NP, [build / "bin" / "mpilens-exec", build / "tests" / "a2a_adaptive", "30", "64"],
            env={"MPILENS_CONFIG": str(f), "MPILENS_MACHINE": "envbox", "MPILENS_QUIET": "1"})
    machines = [ln.split("\t")[0] for ln in tune.read_text().splitlines()[2:]]
    assert machines == ["filebox", "envbox"]


# ---- `mpilens config` ----

def test_config_shows_values_and_sources(tmp_path: Path) -> None:
    f = conf(tmp_path, "# comment\ndetail = off\nMPI_Send\nmachine = filebox\n")
    env = {"MPILENS_CONFIG": str(f), "MPILENS_ALLTOALL": "adaptive", "MPILENS_MACHINE": "envbox"}
    proc = mpilens("config", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["error"] is None and data["config"] == str(f)
    got = {s["env"]: (s["value"], s["source"], s.get("line")) for s in data["settings"]}
    assert got["MPILENS_DETAIL"] == ("off", "file", 2)
    assert got["MPILENS_INCLUDE"] == ("MPI_Send", "file", 3)
    assert got["MPILENS_MACHINE"] == ("envbox", "env", None)
    assert got["MPILENS_ALLTOALL"] == ("adaptive", "env", None)
    assert got["MPILENS_CONFIG"] == (str(f), "env", None)
    assert got["MPILENS_ALLTOALL_LEARN"] == ("50", "default", None)
    assert got["MPILENS_TUNING_FILE"] == (None, "default", None)
    text = mpilens("config", env=env)
    assert text.returncode == 0 and text.stderr == ""
    assert re.search(r"^MPILENS_DETAIL +off +file line 2$", text.stdout, re.MULTILINE), text.stdout
    assert re.search(r"^MPILENS_ALLTOALL +adaptive +env$", text.stdout, re.MULTILINE), text.stdout
    assert re.search(r"^MPILENS_ALLTOALL_LEARN +50 +default$", text.stdout,
                     re.MULTILINE), text.stdout
    # --config FILE reads FILE as MPILENS_CONFIG=FILE would
    other = tmp_path / "other.conf"
    other.write_text("detail = 0\n")
    opt = json.loads(mpilens("config", "--json", "--config", other, env=env).stdout)
    assert {s["env"]: s["value"] for s in opt["settings"]}["MPILENS_DETAIL"] == "0"


def test_int_settings_state_their_range() -> None:
    data = json.loads(mpilens("config", "--json", env={}).stdout)
    ints = [s for s in data["settings"] if s["type"] == "int"]
    assert {s["key"] for s in ints} >= {"max_threads", "max_requests", "alltoall_learn",
                                        "alltoall_check"}
    for s in ints:
        assert str(int(s["min"])) in s["accepted"] and str(int(s["max"])) in s["accepted"], s


def test_docs_table_is_the_library_table() -> None:
    """docs/configuration.md's table is `mpilens config --markdown`, row for row."""
    page = (REPO / "docs" / "configuration.md").read_text()
    m = re.search(r"<!-- settings table: begin.*?-->\n(.*?)<!-- settings table: end -->", page,
                  re.DOTALL)
    assert m, "docs/configuration.md lacks the generated settings table markers"
    proc = mpilens("config", "--markdown", env={})
    assert proc.returncode == 0, proc.stderr
    assert m.group(1) == proc.stdout, ("docs/configuration.md is stale: paste "
                                       "`mpilens config --markdown` between the markers")
