"""The default profile name and compression (docs/profile-format.md, Compression).

With no output given the library writes a gzip-compressed `mpilens-<job>.prof.gz`;
`MPILENS_COMPRESS=off` (environment or config file) gives the plain
`mpilens-<job>.prof`; a job that never reaches MPI_Finalize leaves its partial profile
in `<output>.partial`, plain JSON, and no file under the final name. Every job is a
real one under libmpilens (mpilens-exec), without MPILENS_OUTPUT, in its own directory.
(A given name keeps its rule: tests/test_scale.py, test_compress_off_keeps_plain and
the plain .prof of gz_and_plain.)
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path

import pytest
from conftest import read_profile, run_mpi
from mpilens import profiled
from mpilens.commands.advise import check_prefix
from test_cli_support import (
    EVERY,
    STEPS,
    N,
    example,
    mpilens,
    mpilens_inproc,
    per_rank_calls,
)

NP = 2


@pytest.fixture(autouse=True)
def _no_output_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs decide their own name: no MPILENS_OUTPUT/COMPRESS/CONFIG inherited."""
    for name in ("MPILENS_OUTPUT", "MPILENS_COMPRESS", "MPILENS_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def _job(build: Path, cwd: Path, env: dict[str, str] | None = None) -> Path:
    """heat2d on NP ranks in cwd (no MPILENS_OUTPUT unless env gives one); the one file
    it left there."""
    cwd.mkdir(parents=True, exist_ok=True)
    run_mpi(NP, [build / "bin" / "mpilens-exec", example("heat2d"), N, STEPS, EVERY],
            env={"MPILENS_QUIET": "1", **(env or {})}, cwd=cwd)
    [prof] = list(cwd.iterdir())
    return prof


def _members(raw: bytes) -> list[bytes]:
    """Each gzip member decompressed on its own."""
    out = []
    while raw:
        d = zlib.decompressobj(31)
        out.append(d.decompress(raw))
        raw = d.unused_data
    return out


def _check_counts(header: dict, ranks: list[dict]) -> None:
    assert header["nranks"] == NP and [r["rank"] for r in ranks] == list(range(NP))
    for name, calls in per_rank_calls().items():
        assert header["functions"][name]["calls"] == NP * calls, name
        assert all(r["functions"][name]["calls"] == calls for r in ranks), name


def test_library_default_is_compressed(build: Path, tmp_path: Path) -> None:
    prof = _job(build, tmp_path / "default")
    raw = prof.read_bytes()
    parts = _members(raw)
    # the header, then one member for the block of MPILENS_COMPRESS_GROUP (16) ranks
    assert len(parts) == 2 and raw[:2] == b"\x1f\x8b" and parts[1].count(b"\n") == NP
    header, ranks = read_profile(prof)
    assert prof.name == f"mpilens-{header['job_id']}.prof.gz"
    assert gzip.decompress(raw) == b"".join(parts)
    assert json.loads(parts[0]) == header
    _check_counts(header, ranks)
    # mpilens html's default output: mpilens-<job>.html (refused here: it exists, which
    # names it without rendering)
    html = prof.with_name(f"mpilens-{header['job_id']}.html")
    html.write_text('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                    '<title>mpilens report: x</title>')
    proc = mpilens_inproc("html", prof)
    assert (proc.returncode, proc.stderr) == \
        (2, f"mpilens: HTML report {html} exists: choose another file or add --force\n")
    html.unlink()
    # the same name again: never overwritten, the next name keeps .gz last
    run_mpi(NP, [build / "bin" / "mpilens-exec", example("heat2d"), N, STEPS, EVERY],
            env={"MPILENS_QUIET": "1", "MPILENS_OUTPUT": str(prof)}, cwd=tmp_path)
    taken = prof.with_name(f"mpilens-{header['job_id']}.prof.1.gz")
    assert sorted(p.name for p in prof.parent.iterdir()) == sorted([prof.name, taken.name])
    assert len(_members(taken.read_bytes())) == 2 and read_profile(prof) == (header, ranks)


def test_compress_off_gives_the_plain_default_name(build: Path, tmp_path: Path) -> None:
    prof = _job(build, tmp_path / "off", {"MPILENS_COMPRESS": "off"})
    header, ranks = read_profile(prof)
    assert prof.name == f"mpilens-{header['job_id']}.prof"
    assert prof.read_bytes()[:1] == b"{"
    assert header["config"]["output"] == "mpilens-%j.prof"
    _check_counts(header, ranks)
    # a config file's compress = off: the library reads it as the variable (config.c);
    # mpilens run reads it too for the default it passes on
    conf = tmp_path / "run.conf"
    conf.write_text("# plain profiles\ncompress = off\n")
    assert profiled.default_output({}, {"MPILENS_CONFIG": str(conf)}) == "mpilens-%j.prof"
    assert profiled.default_output({}, {}) == "mpilens-%j.prof.gz"
    assert profiled.default_output({"MPILENS_COMPRESS": "gzip"},
                                   {"MPILENS_CONFIG": str(conf)}) == "mpilens-%j.prof.gz"
    # `mpilens config` shows the name the library will use
    shown = mpilens("config", env={"MPILENS_COMPRESS": "off"}).stdout
    assert [ln.split()[:3] for ln in shown.splitlines() if ln.startswith("MPILENS_OUTPUT ")] \
        == [["MPILENS_OUTPUT", "mpilens-%j.prof", "default"]]


def test_partial_profile_under_the_default_name(build: Path, tmp_path: Path) -> None:
    """MPI_Abort (tests/progs/flight abort, 4 ranks): rank 1's partial profile is in
    mpilens-<job>.prof.gz.partial, plain JSON Lines; nothing under the final name."""
    proc = run_mpi(4, [build / "bin" / "mpilens-exec", build / "tests" / "flight", "abort"],
                   cwd=tmp_path, check=False, timeout=120)
    assert proc.returncode != 0
    [d] = list(tmp_path.iterdir())
    assert d.is_dir() and d.name.startswith("mpilens-") and d.name.endswith(".prof.gz.partial")
    rank1 = d / "rank-1"
    assert rank1.read_bytes()[:1] == b"{"
    head, lines = read_profile(rank1)
    assert (head["reason"], head["errorcode"]) == ("abort", 3)
    assert (lines[0]["functions"]["MPI_Send"]["calls"],
            lines[0]["functions"]["MPI_Send"]["bytes_sent"]) == (1, 8)
    # named at MPI_Init by rank 0: %j outside a batch job is <UTC time>-<pid of rank 0>
    assert re.fullmatch(r"mpilens-\d{8}-\d{6}-\d+\.prof\.gz\.partial", d.name), d.name
    rep = mpilens("report", d, "--format", "json")
    assert rep.returncode == 0, rep.stderr
    w = json.loads(rep.stdout)["partial"]
    assert w["verdict"]["kind"] == "aborted", w["verdict"]
    assert w["verdict"]["text"].startswith("aborted: rank 1 called MPI_Abort on MPI_COMM_WORLD "
                                           "with error code 3")


def test_check_prefix_of_a_default_name() -> None:
    """advise --check's profiles are named after the profile without .prof(.gz)."""
    assert check_prefix("runs/mpilens-1234.prof.gz") == "runs/mpilens-1234-check"
    assert check_prefix("runs/mpilens-1234.prof") == "runs/mpilens-1234-check"
    assert check_prefix("hpcc.prof") == "hpcc-check"
