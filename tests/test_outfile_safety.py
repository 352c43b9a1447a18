"""--force replaces only what mpilens wrote (outfile.replace_refusal): a device node, a
FIFO, a socket, a symbolic link or a foreign file at an output path is refused in one
line by every command that writes, with or without --force, and left as it was.  No
MPI job runs: every refusal comes before the work."""

from __future__ import annotations

import gzip
import os
import socket
import stat
from pathlib import Path

import pytest
from conftest import REPO
from mpilens import outfile, profiled
from mpilens.advise import check
from mpilens.errors import UserError
from test_cli_support import mpilens_inproc

PROFILE = REPO / "tests" / "data" / "profile_v1.prof"

# command -> (arguments before the output path, after it; None: the command has no --force)
WRITERS: dict[str, tuple[list[str], list[str], list[str] | None]] = {
    "run -o": (["run", "--quiet", "--output"], ["--", "true"], ["run", "--force"]),
    "html -o": (["html", str(PROFILE), "-o"], [], ["html", "--force"]),
    "bench p2p --json": (["bench", "p2p", "--json"], [], ["bench", "p2p", "--force"]),
    "bench p2p --plot": (["bench", "p2p", "--plot"], [], ["bench", "p2p", "--force"]),
    "bench alltoall --json": (["bench", "alltoall", "--json"], [],
                              ["bench", "alltoall", "--force"]),
    "bench repro --json": (["bench", "repro", "--json"], [], ["bench", "repro", "--force"]),
    "bench logp --model": (["bench", "logp", "--model"], [], ["bench", "logp", "--force"]),
    "tune --output": (["tune", "--output"], ["--", "true"], None),  # it updates: no --force
    "tune --cache": (["tune", "--cache"], ["--", "true"], None),
}


def _argv(cmd: str, path: Path, force: bool) -> list[str]:
    before, after, forced = WRITERS[cmd]
    if force:
        assert forced is not None
        before = forced + before[len(forced) - 1:]
    return [*before, str(path), *after]


def _node(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / "out.png"  # a name every writer accepts (--plot wants a format)
    if kind == "chr":
        try:
            os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("mknod needs root")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "sock":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "link":
        (tmp_path / "target.prof").write_bytes(PROFILE.read_bytes())
        p.symlink_to(tmp_path / "target.prof")
    elif kind == "foreign":
        p.write_text("someone else's notes\n")
    return p


EXPECT = {"chr": ("is a character device: mpilens replaces only regular files it wrote",
                  stat.S_ISCHR),
          "fifo": ("is a FIFO: mpilens replaces only regular files it wrote", stat.S_ISFIFO),
          "sock": ("is a socket: mpilens replaces only regular files it wrote", stat.S_ISSOCK),
          "link": ("is a symbolic link: mpilens replaces only regular files it wrote",
                   stat.S_ISLNK),
          "foreign": ("exists and is not a profile, HTML report or benchmark JSON written by "
                      "mpilens: choose another file", stat.S_ISREG)}


@pytest.mark.parametrize("kind", sorted(EXPECT))
@pytest.mark.parametrize("cmd", sorted(WRITERS))
def test_refused_with_and_without_force(tmp_path: Path, cmd: str, kind: str) -> None:
    p = _node(tmp_path, kind)
    before = os.lstat(p)
    content = p.read_bytes() if kind == "foreign" else None
    for force in (False, True):
        if force and WRITERS[cmd][2] is None:
            continue
        proc = mpilens_inproc(*_argv(cmd, p, force))
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2, (force, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("mpilens: "), proc.stderr
        assert f"{p} {EXPECT[kind][0]}" in lines[0], lines[0]
        assert "--force" not in lines[0]
        after = os.lstat(p)  # still there, the same node
        assert EXPECT[kind][1](after.st_mode)
        assert (after.st_ino, after.st_mode, after.st_rdev) == \
            (before.st_ino, before.st_mode, before.st_rdev)
        if content is not None:
            assert p.read_bytes() == content
    assert sorted(x.name for x in tmp_path.iterdir()) == \
        sorted(["out.png"] + (["target.prof"] if kind == "link" else []))


def test_mpilens_files_replaced_only_with_force(tmp_path: Path) -> None:
    """What mpilens writes is recognised by its content: a profile (plain or gzip), an HTML
    report, benchmark JSON of each family, a tuning file, an alltoall cache."""
    ours = {
        "a.prof": PROFILE.read_bytes(),
        "a.prof.gz": gzip.compress(PROFILE.read_bytes()),
        "a.html": b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                  b"<title>mpilens report: 1</title>",
        "p2p.json": b'{"format": "mpilens-bench", "version": 1, "family": "p2p"}\n',
        "a2a.json": b'{\n "family": "alltoall",\n "mpi": "openmpi"}\n',
        "repro.json": b'{"bench": "repro", "nranks": 2}\n',
        "t.tune": b"mpilens-tuning\t1\n",
        "cache.json": b'{"format": "mpilens-alltoall-cache", "version": 1}\n',
    }
    for name, data in ours.items():
        p = tmp_path / name
        p.write_bytes(data)
        assert outfile.replace_refusal(p, True, "out") is None, name
        assert outfile.replace_refusal(p, False, "out") == \
            f"out {p} exists: choose another file or add --force"
    for name, data in {"b.json": b'{"format": "other"}', "b.html": b"<!DOCTYPE html>\n<p>",
                       "b.gz": gzip.compress(b"hello\n"), "b.prof": b""}.items():
        p = tmp_path / name
        p.write_bytes(data)
        assert "is not a profile" in (outfile.replace_refusal(p, True, "out") or ""), name


def test_run_force_removes_only_a_profile(tmp_path: Path) -> None:
    prof = tmp_path / "x.prof"
    prof.write_bytes(PROFILE.read_bytes())
    with pytest.raises(UserError, match=r"x\.prof exists: choose another file or add --force"):
        profiled.claim_output(str(prof), False)
    assert prof.exists()
    profiled.claim_output(str(prof), True)
    assert not prof.exists()
    fifo = tmp_path / "y.prof"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="is a FIFO"):
        profiled.claim_output(str(fifo), True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_write_checks_again_at_the_rename(tmp_path: Path) -> None:
    """A FIFO put at the path after the command's check: the write is refused, nothing
    replaced, no temporary file left."""
    p = tmp_path / "r.json"
    outfile.check_output(p, False, "--json")
    os.mkfifo(p)
    with pytest.raises(UserError, match="is a FIFO"):
        outfile.write_text(p, '{"format": "mpilens-bench"}\n')
    assert stat.S_ISFIFO(os.lstat(p).st_mode)
    assert [x.name for x in tmp_path.iterdir()] == ["r.json"]


def test_advise_check_outputs(tmp_path: Path) -> None:
    prefix = str(tmp_path / "chk")
    os.mkfifo(tmp_path / "chk-baseline.prof")
    with pytest.raises(UserError, match="chk-baseline.prof is a FIFO: mpilens replaces"):
        check.outputs(prefix, 1, True)
    # the rankfile and hostfile --check writes: replaced with --force; a foreign file not
    for text, ok in (("rank 0=n1 slot=0\nrank 1=n2 slot=0\n", True), ("n1:1\nn2:1\n", True),
                     ("n1\nn2\n", True), ("# my hosts\nn1 slots=4\n", False)):
        p = tmp_path / "chk-rankfile"
        p.write_text(text)
        why = outfile.replace_refusal(p, True, "--check-output", also=check.MAPPING_FILE)
        assert (why is None) == ok, (text, why)


def test_plots_drawn_by_mpilens_are_recognised(tmp_path: Path) -> None:
    """bench --plot's files (Matplotlib's PNG, SVG, PDF) may be replaced with --force."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3])
    for ext in ("png", "svg", "pdf"):
        p = tmp_path / f"plot.{ext}"
        fig.savefig(p)
        assert outfile.replace_refusal(p, True, "--plot") is None, ext
    plt.close(fig)
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    assert "is not a profile" in (outfile.replace_refusal(tmp_path / "photo.png", True,
                                                          "--plot") or "")
