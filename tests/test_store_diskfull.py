"""The store on a real full disk (docs/store.md, Adding jobs): a small tmpfs mounted for
the test and filled by a file of the test's own to a known number of free pages, so
that the disk fills at a known step (tmpfs gives a file whole pages: a file of n
bytes takes ceil(n / page) of them, a directory none).  `store add` and `store
ingest` say so in one line, leave no temporary file and no half-written record or
Parquet file, keep the spool's records, and once there is room the next ingest puts
every job in the store exactly once, with the exact totals of its profile.

Mounting needs root: the CI runs as root; elsewhere the tests skip, saying why."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import read_profile
from test_cli_support import real_profile
from test_store import assert_exact_totals, store_cli

import mpilens.store
from mpilens.store import dataset

ENOSPC = os.strerror(28)  # "No space left on device"
MARGIN = 512  # bytes a Parquet file may differ from its probe's (its ingest time)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs of the test's own, unmounted afterwards."""
    # justified: CI runs as root, so it runs there; elsewhere mount is refused
    if os.geteuid() != 0:
        pytest.skip("a real full disk needs a tmpfs mounted by the test: root only "
                    "(the CI runs as root)")
    fs = tmp_path / "fs"
    fs.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(fs)],
                          capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        pytest.skip(f"mount -t tmpfs was refused: {' '.join(proc.stderr.split())}")
    try:
        yield fs
    finally:
        subprocess.run(["umount", str(fs)], capture_output=True, timeout=60, check=True)


def page(fs: Path) -> int:
    return os.statvfs(fs).f_frsize


def pages(fs: Path, nbytes: int) -> int:
    return -(-nbytes // page(fs))


def fill(fs: Path, free: int) -> Path:
    """fs/filler (the test's file) grown until `free` pages are left."""
    st = os.statvfs(fs)
    filler = fs / "filler"
    with open(filler, "ab") as f:
        f.write(b"\0" * ((st.f_bavail - free) * st.f_frsize))
    assert os.statvfs(fs).f_bavail == free
    return filler


def tmp_files(d: Path) -> list[Path]:
    return sorted(d.rglob(f"{dataset._TMP}*"))


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file under d (relative path: its bytes)."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("room", ["none", "one record"])
def test_add_on_a_full_disk(small_fs: Path, tmp_path: Path, room: str) -> None:
    """`store add` of two profiles on a disk with room for none of their records, or for
    the first one only: one line, exit status 2, the records written whole or not at all
    (no temporary file left); with room again, both jobs go in, exactly."""
    p4, p2 = real_profile(4), real_profile(2)
    probe = tmp_path / "probe"  # the same add where there is room: the records' sizes
    rc, _, err = store_cli("add", probe, p4)
    assert rc == 0, err
    (rec4,) = dataset.spool_dir(probe).iterdir()
    rc, _, err = store_cli("add", probe, p2)
    assert rc == 0, err
    (rec2,) = set(dataset.spool_dir(probe).iterdir()) - {rec4}
    st = small_fs / "st"
    spool = dataset.spool_dir(st)
    spool.mkdir(parents=True)
    if room == "none":
        filler = fill(small_fs, 0)
    else:  # rec4 fits; rec2 finds a page less than it needs (a part of it written)
        filler = fill(small_fs, pages(small_fs, rec4.stat().st_size)
                      + pages(small_fs, rec2.stat().st_size) - 1)
    rc, out, err = store_cli("add", st, p4, p2)
    assert rc == 2
    if room == "none":
        assert out == ""
        assert err == f"mpilens: {spool}: cannot write a record ({ENOSPC}): {p4} and 1 " \
                      f"more not added\n"
        assert list(spool.iterdir()) == []
    else:
        assert out == f"added: {p4} (heat2d, 4 ranks, completed)\n"
        assert err == f"mpilens: {spool}: cannot write a record ({ENOSPC}): {p2} not added\n"
        assert [p.name for p in spool.iterdir()] == [rec4.name]
        assert (spool / rec4.name).read_bytes() == rec4.read_bytes()
    filler.unlink()
    rc, out, err = store_cli("add", st, p2, p4, "--ingest")
    assert rc == 0, err
    assert out.splitlines()[-1] == "ingested 2 job(s) in 1 file(s); 0 already in the store"
    s = mpilens.store.open(st)
    jobs = s.rows("SELECT * FROM jobs ORDER BY nranks")
    assert [j["nranks"] for j in jobs] == [2, 4]
    for prof, job in zip([p2, p4], jobs, strict=True):
        assert_exact_totals(s, job, prof)
    assert tmp_files(st) == [] and list(spool.iterdir()) == []


def _synthesized(rec: dict, first: int, count: int, month: str) -> list[dict]:
    """count jobs of the record's profile ended in month (YYYY-MM), with their own keys
    (hashes: the Parquet file grows with them, a page every ~100 jobs)."""
    out = []
    for i in range(first, first + count):
        key = hashlib.sha256(f"synth-{i}".encode()).hexdigest()
        out.append(dict(rec, job_key=key, job_id=f"synth-{i}",
                        start=f"{month}-15T10:00:00Z", end=f"{month}-15T11:00:00Z"))
    return out


@pytest.mark.parametrize("fails", ["first file", "second file"])
def test_ingest_on_a_full_disk(small_fs: Path, tmp_path: Path, fails: str) -> None:
    """An ingest of three months' jobs (three Parquet files, the oldest month first) on a
    disk that fills while it writes the first file, or the second: one line, exit status
    2; the dataset holds what it held (and the first month's jobs when only the second
    file failed), each job once, no temporary file; the spool keeps every record.  With
    room again, the next ingest puts every job in exactly once."""
    p2, p4, p4x = real_profile(2), real_profile(4), real_profile(4, via="exec")
    st = small_fs / "st"
    rc, _, err = store_cli("add", st, p2, "--ingest")
    assert rc == 0, err
    before = snapshot(dataset.jobs_dir(st))
    (key2,) = [r["job_key"] for r in mpilens.store.open(st).rows("SELECT job_key FROM jobs")]
    rc, _, err = store_cli("add", st, p4, p4x)
    assert rc == 0, err
    real = {json.loads(p.read_bytes())["job_key"]: p for p in dataset.spool_dir(st).iterdir()}
    rec = json.loads(next(p for p in real.values()
                          if json.loads(p.read_bytes())["profile"] == str(p4.resolve()))
                     .read_bytes())
    jan = _synthesized(rec, 0, 200, "2020-01")
    feb = _synthesized(rec, 200, 400, "2020-02")
    for r in jan + feb:
        dataset.spool_record(st, r, sync_dir=False)
    dataset.sync_spool(st)
    spool = snapshot(dataset.spool_dir(st))
    assert len(spool) == 602
    # the same ingest where there is room: the sizes of its three files
    probe = tmp_path / "probe"
    shutil.copytree(st, probe)
    res = dataset.ingest(probe)
    assert res["added"] == 602
    size = {Path(f).parent.parent.name + "/" + Path(f).parent.name: Path(f).stat().st_size
            for f in res["files"]}
    jan_size, feb_size = size["year=2020/month=01"], size["year=2020/month=02"]
    pg = page(small_fs)
    if fails == "first file":  # a part of January's file written, then the disk is full
        free = (jan_size - MARGIN) // pg
        assert free >= 1, size
        went = 0
    else:  # January's file fits, February's does not
        free = pages(small_fs, jan_size + MARGIN)
        assert feb_size - MARGIN > free * pg - (jan_size - MARGIN), size
        went = len(jan)
    filler = fill(small_fs, free)
    rc, out, err = store_cli("ingest", st)
    assert (rc, out) == (2, "")
    assert err == f"mpilens: {st}: cannot write the dataset ({ENOSPC}): {went} job(s) " \
                  f"went in; the spool keeps the others' records for the next ingest\n"
    assert tmp_files(st) == []
    assert snapshot(dataset.spool_dir(st)) == spool
    after = snapshot(dataset.jobs_dir(st))
    assert {k: v for k, v in after.items() if k in before} == before
    new = sorted(set(after) - set(before))
    assert [k.rsplit("/", 1)[0] for k in new] == ([] if went == 0 else ["year=2020/month=01"])
    rows = mpilens.store.open(st).rows("SELECT job_key FROM jobs")
    assert sorted(r["job_key"] for r in rows) == sorted([key2] + [r["job_key"] for r in
                                                                  jan[:went]])
    # room again: the next ingest completes it
    filler.unlink()
    rc, out, err = store_cli("ingest", st)
    assert (rc, err) == (0, "")
    assert out == f"ingested {602 - went} job(s) in {3 - bool(went)} file(s); {went} " \
                  f"already in the store\n"
    assert list(dataset.spool_dir(st).iterdir()) == [] and tmp_files(st) == []
    s = mpilens.store.open(st)
    keys = [r["job_key"] for r in s.rows("SELECT job_key FROM jobs")]
    assert sorted(keys) == sorted([key2, *real, *(r["job_key"] for r in jan + feb)])
    for key, prof in [(key2, p2)] + [(k, p4 if k == rec["job_key"] else p4x) for k in real]:
        job = s.rows("SELECT * FROM jobs WHERE job_key = ?", [key])[0]
        assert_exact_totals(s, job, prof)
    # the 600 jobs synthesized from p4's record: each function's row is p4's, exactly
    header, _ = read_profile(p4)
    got = s.rows("SELECT function, count(*) AS n, sum(calls) AS calls, min(time_s) AS lo, "
                 "max(time_s) AS hi, sum(bytes_sent) AS sent FROM functions "
                 "WHERE job_key NOT IN (?, ?, ?) GROUP BY function ORDER BY function",
                 [key2, *real])
    want = [{"function": n, "n": 600, "calls": 600 * f["calls"], "lo": f["time_s"],
             "hi": f["time_s"], "sent": 600 * f.get("bytes_sent", 0)}
            for n, f in sorted(header["functions"].items())]
    assert got == want
    assert s.rows("SELECT count(*) AS n, sum(nranks) AS r FROM jobs "
                  "WHERE year = 2020") == [{"n": 600, "r": 2400}]


def test_a_killed_ingests_half_file_makes_room(small_fs: Path) -> None:
    """A disk filled by the half-written Parquet file of an ingest that was killed: the
    next ingest removes it first and goes in.  Files named otherwise, or links, are not
    its own: they stay."""
    p4 = real_profile(4)
    st = small_fs / "st"
    rc, _, err = store_cli("add", st, p4)
    assert rc == 0, err
    month = dataset.jobs_dir(st) / "year=2020" / "month=01"
    month.mkdir(parents=True)
    mine = month / ".tmp-mine"          # not a name ingest gives: someone else's
    mine.write_bytes(b"x")
    outside = small_fs / "kept"
    outside.write_bytes(b"y")
    link = month / f".tmp-node7-4243-{'b' * 32}"  # an ingest's name, but a link
    link.symlink_to(outside)
    dead = month / f".tmp-node7-4242-{'a' * 32}"  # an ingest's name: killed mid-write
    dead.write_bytes(b"PAR1")
    st_fs = os.statvfs(small_fs)
    with open(dead, "ab") as f:  # the disk full of it
        f.write(b"\0" * (st_fs.f_bavail * st_fs.f_frsize))
    assert os.statvfs(small_fs).f_bavail == 0
    rc, out, err = store_cli("ingest", st)
    assert (rc, out, err) == (0, "ingested 1 job(s) in 1 file(s); 0 already in the store\n", "")
    assert not dead.exists()
    assert mine.read_bytes() == b"x" and link.is_symlink() and outside.read_bytes() == b"y"
    s = mpilens.store.open(st)
    (job,) = s.rows("SELECT * FROM jobs")
    assert_exact_totals(s, job, p4)
