"""The store on disk (docs/store.md): a spool of records and a Parquet dataset.

    STORE/spool/<job_key>.json             one record per job added (atomic rename)
    STORE/jobs/year=YYYY/month=MM/*.parquet  one row per job, by the month its job ended

`add` writes a record into the spool under a temporary name and renames it: a reader
never sees half a record, and jobs ending at once need no lock.  `ingest` compacts
the spool into the dataset: the records whose job is not in the dataset yet go into
one new Parquet file per month (written under a temporary name, then renamed), and
only then are the spool's records removed.  A crash at any point leaves records that
the next ingest finds either in the dataset (it removes them from the spool) or
still to write: nothing is lost, nothing is counted twice.  Ingests take turns on
STORE/.ingest.lock (adding never waits for it).

A write that fails (disk full, quota, permissions) removes its own temporary file
and raises WriteError, one line: an add leaves no record of that profile, an ingest
leaves the dataset as the files renamed before the failure and the spool's records
in place.  Each ingest first removes the temporary Parquet files of ingests killed
mid-write (only files named as this module names them: see _OURS).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import stat
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import UserError
from .record import RECORD_FORMAT

SPOOL = "spool"
JOBS = "jobs"
_TMP = ".tmp-"
# the temporary names _write_atomic gives: .tmp-<host>-<pid>-<uuid4 hex>
_OURS = re.compile(r"\.tmp-.+-[0-9]+-[0-9a-f]{32}")


class WriteError(UserError):
    """The store could not be written (disk full, quota, permissions): one line."""


def _pa() -> Any:
    import pyarrow as pa
    return pa


def schema() -> Any:
    """The jobs table's Parquet schema (docs/store.md, Schema)."""
    pa = _pa()
    q = pa.list_(pa.float64())
    fn = pa.struct([
        ("function", pa.string()), ("calls", pa.int64()), ("time_s", pa.float64()),
        ("bytes_sent", pa.int64()), ("bytes_recv", pa.int64()), ("outside", pa.bool_()),
        ("rank_time_min_s", pa.float64()), ("rank_time_max_s", pa.float64()),
        ("rank_time_q_s", q), ("median_size_bytes", pa.int64()),
        ("hist_send", pa.list_(pa.int64())), ("hist_recv", pa.list_(pa.int64()))])
    finding = pa.struct([
        ("rule", pa.int32()), ("key", pa.string()), ("title", pa.string()),
        ("gain_s", pa.float64()), ("gain_lo_s", pa.float64()), ("gain_hi_s", pa.float64()),
        ("gain_pct", pa.float64()), ("confidence", pa.string()), ("change", pa.string())])
    ts = pa.timestamp("s", tz="UTC")
    return pa.schema([
        ("job_key", pa.string()), ("job_id", pa.string()), ("user", pa.string()),
        ("account", pa.string()), ("app", pa.string()), ("executable", pa.string()),
        ("exe_sha256", pa.string()), ("command", pa.string()),
        ("start", ts), ("end", ts), ("nranks", pa.int64()), ("nnodes", pa.int64()),
        ("hosts", pa.int64()), ("wall_s", pa.float64()), ("wall_mean_s", pa.float64()),
        ("mpi_mean_s", pa.float64()), ("mpi_pct", pa.float64()),
        ("node_hours", pa.float64()), ("mpi_library", pa.string()),
        ("mpi_flavour", pa.string()), ("ending", pa.string()), ("verdict", pa.string()),
        ("verdict_text", pa.string()), ("ranks_missing", pa.int64()),
        ("latency_share", pa.float64()), ("wall_q_s", q), ("mpi_q_s", q), ("mpi_pct_q", q),
        ("profile", pa.string()), ("advise_note", pa.string()), ("ingested", ts),
        ("functions", pa.list_(fn)), ("findings", pa.list_(finding))])


def spool_dir(store: Path) -> Path:
    return store / SPOOL


def jobs_dir(store: Path) -> Path:
    return store / JOBS


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_atomic(dest: Path, data: bytes, sync_dir: bool = True) -> None:
    """data into dest: written and synced under a temporary name in dest's directory,
    then renamed (a reader sees the whole file or none); the directory synced after
    (sync_dir=False: the caller does it once for many files)."""
    tmp = dest.parent / f"{_TMP}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        _fsync_dir(dest.parent)


def spool_record(store: Path, rec: dict[str, Any], sync_dir: bool = True) -> Path:
    """One record into STORE/spool/ (made if need be): a job added twice overwrites
    its own record (same job key), which ingest counts once anyway.  sync_dir=False:
    the caller syncs the spool once after many (sync_spool)."""
    d = spool_dir(store)
    dest = d / f"{rec['job_key']}.json"
    try:
        d.mkdir(parents=True, exist_ok=True)
        _write_atomic(dest, json.dumps(rec, separators=(",", ":")).encode(), sync_dir)
    except OSError as exc:
        raise WriteError(f"{d}: cannot write a record ({_why(exc)})") from None
    return dest


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def sync_spool(store: Path) -> None:
    """The spool's renames made durable (after spool_record(..., sync_dir=False))."""
    _fsync_dir(spool_dir(store))


def check_store(store: Path, create: bool = False) -> None:
    if store.exists() and not store.is_dir():
        raise UserError(f"{store}: not a store (a directory)")
    if not create and not (spool_dir(store).is_dir() or jobs_dir(store).is_dir()):
        raise UserError(f"{store}: no store there (make one with `mpilens store add "
                        f"{store} PROFILE...`)")


@contextmanager
def ingest_lock(store: Path) -> Iterator[None]:
    try:
        store.mkdir(parents=True, exist_ok=True)
        f = open(store / ".ingest.lock", "a")  # closed by the with below
    except OSError as exc:
        raise WriteError(f"{store}: cannot take the ingest lock ({_why(exc)})") from None
    with f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def parquet_files(store: Path) -> list[Path]:
    d = jobs_dir(store)
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob("year=*/month=*/*.parquet") if not p.name.startswith(_TMP))


def known_keys(store: Path) -> set[str]:
    """The job keys already in the dataset (one column read)."""
    import pyarrow.parquet as pq

    keys: set[str] = set()
    for p in parquet_files(store):
        keys.update(pq.read_table(p, columns=["job_key"]).column(0).to_pylist())
    return keys


def _rows(recs: list[dict[str, Any]], now: Any) -> dict[str, list[Any]]:
    from datetime import UTC, datetime

    cols: dict[str, list[Any]] = {name: [] for name in schema().names}
    for r in recs:
        for name in cols:
            if name in ("start", "end"):
                v = datetime.strptime(r[name], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            elif name == "ingested":
                v = now
            else:
                v = r.get(name)
            cols[name].append(v)
    return cols


# records compacted per pass: one Parquet file per month and pass, memory bounded
BATCH = 5000


def ingest(store: Path, batch: int = BATCH) -> dict[str, Any]:
    """Compact the spool into the dataset (module doc): {"added", "duplicates",
    "rejected": [lines], "files": [new parquet files]}.  The spool is taken `batch`
    records at a time; each pass's records leave the spool once its files are in."""
    from datetime import UTC, datetime

    check_store(store)
    res: dict[str, Any] = {"added": 0, "duplicates": 0, "rejected": [], "files": []}
    with ingest_lock(store):
        sp = spool_dir(store)
        entries = sorted(p for p in sp.glob("*.json") if not p.name.startswith(_TMP)) \
            if sp.is_dir() else []
        # leftovers of adds that died before their rename (an hour old: not one in progress)
        old = datetime.now(UTC).timestamp() - 3600
        stale = _ours(sp.glob(f"{_TMP}*"), old) if sp.is_dir() else []
        # half-written Parquet files of ingests killed mid-write (ingests take turns:
        # none is in progress), first: on a full disk they hold the room this one needs
        for p in _ours(jobs_dir(store).glob(f"year=*/month=*/{_TMP}*")):
            p.unlink(missing_ok=True)
        known = known_keys(store)
        for k in range(0, len(entries), batch):
            _pass(store, entries[k:k + batch], known, res)
        for p in stale:
            p.unlink(missing_ok=True)
    return res


def _ours(paths: Iterable[Path], before: float | None = None) -> list[Path]:
    """The paths named as _write_atomic names its temporary files that are regular files
    (not links), last written before `before` if given; not those gone meanwhile."""
    return [p for p in paths if _OURS.fullmatch(p.name) and _regular(p, before)]


def _regular(p: Path, before: float | None) -> bool:
    try:
        st = p.lstat()
    except FileNotFoundError:  # an add renamed it into the spool: the normal race
        return False
    return stat.S_ISREG(st.st_mode) and (before is None or st.st_mtime < before)


def _pass(store: Path, entries: list[Path], known: set[str], res: dict[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datetime import UTC, datetime

    by_month: dict[tuple[int, int], list[dict[str, Any]]] = {}
    done: list[Path] = []
    for p in entries:
        try:
            rec = json.loads(p.read_bytes())
            if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT:
                raise ValueError("not a store record")
            key = rec["job_key"]
            end = rec["end"]
            month = (int(end[:4]), int(end[5:7]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            res["rejected"].append(f"{p}: unreadable record ({exc}): left in the spool")
            continue
        if key in known:
            res["duplicates"] += 1
        else:
            known.add(key)
            by_month.setdefault(month, []).append(rec)
        done.append(p)
    now = datetime.now(UTC).replace(microsecond=0)
    sch = schema()
    for (y, m), recs in sorted(by_month.items()):
        d = jobs_dir(store) / f"year={y:04d}" / f"month={m:02d}"
        table = pa.Table.from_pydict(_rows(recs, now), schema=sch)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        dest = d / f"part-{now.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}.parquet"
        try:
            d.mkdir(parents=True, exist_ok=True)
            _write_atomic(dest, sink.getvalue().to_pybytes())
        except OSError as exc:  # the pass's records stay in the spool for the next ingest
            raise WriteError(f"{store}: cannot write the dataset ({_why(exc)}): "
                             f"{res['added']} job(s) went in; the spool keeps the others' "
                             f"records for the next ingest") from None
        res["files"].append(str(dest))
        res["added"] += len(recs)
    for p in done:  # only now: every record taken is in the dataset
        p.unlink(missing_ok=True)
