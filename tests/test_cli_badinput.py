"""Bad input: one clear line on stderr, exit status 2, no traceback (one test per case)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_support import mpilens, mpilens_inproc, real_profile


def assert_one_line_error(proc, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mpilens: ")
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert proc.stdout == ""


@pytest.fixture(scope="module")
def good(build) -> Path:
    return real_profile(2)


def test_missing_file(tmp_path: Path) -> None:
    # a real process: the exit status and stderr as the shell sees them (the other
    # cases run the same entry point in-process, to keep the suite fast)
    assert_one_line_error(mpilens("report", tmp_path / "nope.prof"), "nope.prof", "no such file")


def test_not_a_profile(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("hello\nworld\n")
    assert_one_line_error(mpilens_inproc("report", p), "not an mpilens profile")


def test_json_but_not_a_profile(tmp_path: Path) -> None:
    p = tmp_path / "other.json"
    p.write_text(json.dumps({"format": "something-else", "version": 1}) + "\n")
    assert_one_line_error(mpilens_inproc("report", p), "not an mpilens profile")


def test_binary_file(tmp_path: Path) -> None:
    p = tmp_path / "core"
    p.write_bytes(bytes(range(256)) * 4)
    assert_one_line_error(mpilens_inproc("report", p), "not an mpilens profile")


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.prof"
    p.write_text("")
    assert_one_line_error(mpilens_inproc("report", p), "empty")


def test_truncated_mid_line(good: Path, tmp_path: Path) -> None:
    text = good.read_text()
    p = tmp_path / "cut.prof"
    p.write_text(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1])
    assert_one_line_error(mpilens_inproc("report", p), "truncated")


def test_truncated_missing_rank_lines(good: Path, tmp_path: Path) -> None:
    lines = good.read_text().splitlines(keepends=True)
    p = tmp_path / "short.prof"
    p.write_text("".join(lines[:-1]))
    assert_one_line_error(mpilens_inproc("report", p), "truncated", "1 of 2 rank lines")


def test_truncated_header(good: Path, tmp_path: Path) -> None:
    p = tmp_path / "head.prof"
    p.write_text(good.read_text()[:200])
    assert_one_line_error(mpilens_inproc("report", p), "truncated or corrupted")


def test_corrupted_rank_line(good: Path, tmp_path: Path) -> None:
    lines = good.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"functions"', '"functi#ns', 1)
    p = tmp_path / "bad.prof"
    p.write_text("".join(lines))
    assert_one_line_error(mpilens_inproc("report", p), "corrupted", "line 2")


def test_corrupted_field(good: Path, tmp_path: Path) -> None:
    lines = good.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    name = min(header["functions"])
    header["functions"][name]["calls"] = "many"
    p = tmp_path / "field.prof"
    p.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert_one_line_error(mpilens_inproc("report", p), "corrupted", f"{name}.calls")


@pytest.mark.parametrize("records, needle", [
    ({"comm_size": 4}, "alltoall[0] is not an object"),
    ([{"comm_size": 4}], "alltoall[0] lacks 'ranks_per_node'"),
    ("learned_mean_s", "alltoall[0] has a bad 'algorithm', 'candidates' or 'learned_mean_s'"),
])
def test_corrupted_alltoall_records(good: Path, tmp_path: Path, records, needle: str) -> None:
    lines = good.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    if records == "learned_mean_s":  # a complete record whose learned times are not numbers
        records = [{"comm_size": 4, "ranks_per_node": 4, "bytes": 64, "algorithm": "ring",
                    "source": "learned", "communicators": 1, "calls": 10, "learning_calls": 5,
                    "relearns": 0, "learning_s": 0.1, "grouping_s": 0.1, "time_per_call_s": 1e-5,
                    "candidates": ["ring"], "learned_mean_s": {"ring": "fast"}}]
    header["alltoall"] = records if isinstance(records, list) else [records["comm_size"]]
    p = tmp_path / "a2a.prof"
    p.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    for command in ("report", "html"):
        extra = ["-o", str(tmp_path / "r.html")] if command == "html" else []
        assert_one_line_error(mpilens_inproc(command, p, *extra), "corrupted profile", needle)


_CHOICE = {"comm_size": 8, "bytes": 8, "choice": "mpi", "source": "learned", "communicators": 1,
           "calls": 10, "learning_calls": 15, "lost_calls": 10, "lost_s": 0.1,
           "against": "twolevel", "ratio": 1.5, "ratio_lo": 1.2, "ratio_hi": 2.0}


@pytest.mark.parametrize("coll, needle", [
    ([1], "header coll is not an object"),
    ({"allreduce": 1}, "header coll.allreduce is not an object with a list of choices"),
    ({"allreduce": {"choices": {}}}, "coll.allreduce is not an object with a list of choices"),
    ({"allreduce": {"choices": [1]}}, "coll.allreduce.choices[0] is not an object"),
    ({"allreduce": {"choices": [{"comm_size": 4}]}}, "coll.allreduce.choices[0] lacks 'bytes'"),
    ({"allreduce": {"choices": [{**_CHOICE, "lost_s": "0.1"}]}},
     "coll.allreduce.choices[0] has a bad 'lost_s' value"),
    ({"allreduce": {"choices": [_CHOICE, {**_CHOICE, "ratio_hi": "2"}]}},
     "coll.allreduce.choices[1] has a bad 'ratio_hi' value"),
])
def test_corrupted_coll_records(good: Path, tmp_path: Path, coll, needle: str) -> None:
    """The node-aware collectives' section (docs/collectives.md): one line, not a
    traceback from the report's table."""
    lines = good.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["coll"] = coll
    p = tmp_path / "coll.prof"
    p.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    for command in ("report", "html"):
        extra = ["-o", str(tmp_path / "r.html")] if command == "html" else []
        assert_one_line_error(mpilens_inproc(command, p, *extra), "corrupted profile", needle)
    header["coll"] = {"allreduce": {"mode": "adaptive", "choices": [_CHOICE]}}
    p.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert mpilens_inproc("report", p).returncode == 0  # the good row: read


def test_newer_version(good: Path, tmp_path: Path) -> None:
    lines = good.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["version"] = 99
    p = tmp_path / "new.prof"
    p.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert_one_line_error(mpilens_inproc("report", p), "version 99 is newer", "upgrade mpilens")


def test_unknown_function(good: Path) -> None:
    assert_one_line_error(mpilens_inproc("report", good, "--function", "MPI_Frobnicate"),
                          "MPI_Frobnicate", "not called", "MPI_Alltoall")


@pytest.mark.parametrize("command", ["diff", "html"])
def test_other_commands_reject_bad_profiles(command: str, tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("hello\n")
    args = [p, p] if command == "diff" else [p, "-o", tmp_path / "x.html"]
    assert_one_line_error(mpilens_inproc(command, *args), "not an mpilens profile")


def test_empty_launcher_line() -> None:
    assert_one_line_error(mpilens_inproc("run", "--"), "nothing to run")


def test_launcher_line_without_application() -> None:
    assert_one_line_error(mpilens_inproc("run", "--", "mpirun", "-np", "4", "--map-by", "core"),
                          "no application found")


def test_unknown_command_in_launcher_line() -> None:
    assert_one_line_error(mpilens_inproc("run", "--", "mpirun-that-does-not-exist", "-np", "2", "./a"),
                          "command not found")


def test_bad_env_option() -> None:
    assert_one_line_error(mpilens_inproc("run", "--env", "FOO=1", "--", "mpirun", "./a"),
                          "--env 'FOO=1' is invalid", "MPILENS_NAME=VALUE")


def test_html_does_not_overwrite(good: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine.html"
    out.write_text("the user's own file")  # not an mpilens report: refused even with --force
    for force in ([], ["--force"]):
        proc = mpilens_inproc("html", good, "-o", out, *force)
        assert_one_line_error(proc, f"{out} exists and is not a profile, HTML report or "
                                    f"benchmark JSON written by mpilens: choose another file")
        assert "--force" not in proc.stderr
    assert out.read_text() == "the user's own file"


def test_run_does_not_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "old.prof"
    out.write_text('{"format":"mpilens-profile","version":2}\n')
    assert_one_line_error(mpilens_inproc("run", "--output", out, "--", "mpirun", "-np", "2", "./a"),
                          f"--output {out} exists: choose another file or add --force")
    assert out.read_text() == '{"format":"mpilens-profile","version":2}\n'
