"""mpilens-bench result files (--out, logp --model): a result file is never lost or
left half-written.  The path is checked before the benchmark (without truncating an
existing file); the document goes to a temporary file in the same directory, flushed
to disk and renamed over the file.  Real MPI runs on 2 ranks, tiny sizes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from conftest import run_mpi
from test_bench_common import bench_exe

TINY_P2P = ["--max-size", "64", "--samples", "2", "--iters", "2", "--warmup", "1",
            "--window", "4"]


def _program_lines(stderr: str) -> list[str]:
    """stderr without blank lines and the launcher's own banners (Open MPI frames
    them between lines of dashes; MPICH's hydra adds none for a clean exit 2)."""
    lines, in_banner = [], False
    for ln in stderr.splitlines():
        if len(ln) >= 10 and set(ln.strip()) == {"-"}:
            in_banner = not in_banner
        elif ln.strip() and not in_banner:
            lines.append(ln)
    return lines


def _one_error_line(proc, *contains: str) -> str:
    assert proc.returncode != 0, proc.stderr
    assert "Traceback" not in proc.stderr and "MPI_ABORT" not in proc.stderr, proc.stderr
    lines = _program_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mpilens-bench: "), proc.stderr
    for c in contains:
        assert c in lines[0], lines[0]
    return lines[0]


def test_existing_out_survives_a_failed_run(tmp_path: Path) -> None:
    out = tmp_path / "res.json"
    before = b'{"keep": "me"}\n\x00\xff previous result\n'
    out.write_bytes(before)
    proc = run_mpi(2, [bench_exe(), "p2p", *TINY_P2P, "--no-such-option", "1",
                       "--out", out], check=False, timeout=60)
    _one_error_line(proc, "unknown option --no-such-option")
    assert proc.returncode == 2
    assert out.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["res.json"]


def test_successful_run_replaces_out_atomically(tmp_path: Path) -> None:
    out = tmp_path / "res.json"
    out.write_text("old content, not JSON\n")
    out.chmod(0o640)
    proc = run_mpi(2, [bench_exe(), "p2p", *TINY_P2P, "--out", out], timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.endswith("}\n")
    doc = json.loads(text)
    assert doc["format"] == "mpilens-bench" and doc["family"] == "p2p"
    assert doc["validated"] is True and doc["errors"] == 0
    assert [r["size"] for r in doc["results"]] == [0, 1, 2, 4, 8, 16, 32, 64]
    assert sorted(os.listdir(tmp_path)) == ["res.json"]      # no temporary file left
    assert stat.S_IMODE(out.stat().st_mode) == 0o640          # the file's mode is kept


def test_out_in_missing_directory_one_line(tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "res.json"
    proc = run_mpi(2, [bench_exe(), "p2p", *TINY_P2P, "--out", out], check=False,
                   timeout=60)
    _one_error_line(proc, f"--out '{out}'", "cannot write")
    assert proc.returncode == 2
    assert not out.parent.exists()
    assert os.listdir(tmp_path) == []


def test_logp_model_in_missing_directory_fails_before_measuring(tmp_path: Path) -> None:
    model = tmp_path / "no-such-dir" / "model.json"
    out = tmp_path / "logp.json"
    # these options would measure for minutes; --progress reports each size done, so no
    # MLB-PROGRESS line proves that nothing was measured (the timeout only guards a hang)
    proc = run_mpi(2, [bench_exe(), "logp", "--max-size", "1M", "--samples", "1000",
                       "--iters", "100", "--model", model, "--out", out, "--progress"],
                   check=False, timeout=60)
    _one_error_line(proc, f"--model '{model}'", "cannot write")
    assert proc.returncode == 2
    assert "MLB-PROGRESS" not in proc.stderr
    assert os.listdir(tmp_path) == []


def test_logp_model_replaced_atomically(tmp_path: Path) -> None:
    model, out = tmp_path / "model.json", tmp_path / "logp.json"
    model.write_text("previous model\n")
    proc = run_mpi(2, [bench_exe(), "logp", "--max-size", "64", "--samples", "2",
                       "--iters", "2", "--train", "4", "--model", model, "--out", out],
                   timeout=60)
    assert proc.returncode == 0, proc.stderr
    m = json.loads(model.read_text())
    assert m["format"] == "mpilens-netmodel" and m["sizes"] == [0, 1, 2, 4, 8, 16, 32, 64]
    assert json.loads(out.read_text())["model"] == m
    assert sorted(os.listdir(tmp_path)) == ["logp.json", "model.json"]


def test_out_never_replaces_a_fifo(tmp_path: Path) -> None:
    # the benchmark's own atomic write refuses what is not a regular file (a FIFO here;
    # mpilens bench refuses it before, outfile.replace_refusal)
    out = tmp_path / "res.json"
    os.mkfifo(out)
    proc = run_mpi(2, [bench_exe(), "p2p", *TINY_P2P, "--out", out], check=False,
                   timeout=60)
    _one_error_line(proc, f"--out '{out}'", "cannot write")
    assert proc.returncode == 2
    assert stat.S_ISFIFO(os.lstat(out).st_mode)
    assert os.listdir(tmp_path) == ["res.json"]
