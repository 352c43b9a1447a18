"""Read the flight recorder's partial profile (docs/flight-recorder.md).

A job that never reached MPI_Finalize leaves `<output>.partial/rank-N`, one file per
rank that could write one, each two JSON lines: the dump's header (why, when, what each
thread is inside, outstanding requests) and the rank's records in the profile's
rank-line format.  `rank-N.prev` is the rank's dump before, if any.

`load_partial(paths)` takes the directory or some of its files (ranks may be missing)
and returns a `Profile` whose header is built from the rank lines (the usual tables
work on it) and whose `partial` holds the dumps, for the waits-for analysis
(waitsfor.py).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..errors import UserError
from . import limits
from .profile import Profile, _check_fields, _check_function, load
from .schema import FORMAT, HIST_LABELS, NBINS, RANK_KEYS, VERSION
from .validate import check_rank_line

PARTIAL_FORMAT = "mpilens-partial"
PARTIAL_VERSION = 1
_RANK_FILE = re.compile(r"^rank-(\d+)(\.prev)?$")
_DUMP_KEYS: dict[str, type | tuple[type, ...]] = {
    "rank": int, "nranks": int, "reason": str, "dump": int, "elapsed_s": (int, float),
    "threads": list, "requests": list}


def is_partial(path: str | Path) -> bool:
    """A partial directory, or a file whose first line is a partial dump's header."""
    p = Path(path)
    try:
        if p.is_dir():
            return True
        if not p.is_file():  # a FIFO or a device: never opened here (load refuses it, limits.py)
            return False
        with p.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError:
        return False
    return f'"{PARTIAL_FORMAT}"'.encode() in first


def load_any(paths: list[str]) -> Profile:
    """A profile file, or a partial profile (its directory or rank files)."""
    if len(paths) == 1 and not is_partial(paths[0]):
        return load(paths[0])
    complete = [p for p in paths if not is_partial(p)]
    if complete:
        raise UserError(f"{complete[0]}: not a partial profile; give one complete profile, or "
                        "a partial profile's directory or rank files")
    return load_partial(list(paths))


_CALL_INTS = ("tag", "bytes", "requests")
_CALL_PEERS = ("dest", "source", "root", "recv_tag")


def _check_call(p: Path, where: str, c: Any, nested: bool = False) -> None:
    """A CALL or REQUEST of a dump (docs/flight-recorder.md) holds what the waits-for
    analysis reads, of the right types, or the file is refused with one line."""
    def bad(key: str) -> UserError:
        return UserError(f"{p}: corrupted partial profile: {where} has a bad '{key}' value")

    if not isinstance(c, dict):
        raise UserError(f"{p}: corrupted partial profile: {where} is not an object")
    if not isinstance(c.get("function"), str):
        raise bad("function")
    if not isinstance(c.get("kind"), (str, type(None))):
        raise bad("kind")
    comm = c.get("comm")
    if isinstance(comm, dict):
        ranks = comm.get("ranks", [])
        if not isinstance(ranks, list) or \
                not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
            raise bad("comm")
    elif not isinstance(comm, (str, type(None))):
        raise bad("comm")
    for key in _CALL_INTS:
        v = c.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < -1):
            raise bad(key)
    for key in _CALL_PEERS:
        if not isinstance(c.get(key), (int, str, type(None))) or isinstance(c.get(key), bool):
            raise bad(key)
    t = c.get("since_s")
    if t is not None and (not isinstance(t, (int, float)) or isinstance(t, bool)
                          or not math.isfinite(t) or t < 0):
        raise bad("since_s")
    waits = c.get("waits_on", [])
    if nested and "waits_on" in c or not isinstance(waits, list):
        raise bad("waits_on")
    for i, q in enumerate(waits):
        _check_call(p, f"{where} waits_on[{i}]", q, nested=True)


def _check_dump(p: Path, head: dict[str, Any]) -> None:
    for key in ("created", "job_id", "command", "host", "mpi_library", "signal"):
        if not isinstance(head.get(key, ""), (str, type(None)) if key == "signal" else str):
            raise UserError(f"{p}: corrupted partial profile: dump header has a bad '{key}' value")
    for i, t in enumerate(head["threads"]):
        if not isinstance(t, dict):
            raise UserError(f"{p}: corrupted partial profile: threads[{i}] is not an object")
        if t.get("call") is not None:
            _check_call(p, f"threads[{i}] call", t["call"])
    for i, q in enumerate(head["requests"]):
        _check_call(p, f"requests[{i}]", q, nested=True)
    v = head["elapsed_s"]
    if not math.isfinite(v) or v < 0:
        raise UserError(f"{p}: corrupted partial profile: elapsed_s is {v!r}")


def _read_dump(p: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        text = limits.read_bytes(p).decode("utf-8")  # regular files only, bounded (limits.py)
        lines = [ln for ln in text.split("\n") if ln.strip()]
    except UnicodeDecodeError as exc:
        raise UserError(f"{p}: cannot read the partial profile: {exc}") from None
    try:
        head = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("format") != PARTIAL_FORMAT:
        raise UserError(f"{p}: not an mpilens partial profile (its first line must be a JSON "
                        f"object with \"format\": \"{PARTIAL_FORMAT}\")")
    v = head.get("version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise UserError(f"{p}: corrupted partial profile: bad version {v!r}")
    if v > PARTIAL_VERSION:
        raise UserError(f"{p}: partial profile version {v} is newer than this mpilens "
                        f"understands (up to {PARTIAL_VERSION}): upgrade mpilens to read it")
    _check_fields(p, "dump header", head, _DUMP_KEYS)
    if len(lines) != 2:
        raise UserError(f"{p}: corrupted partial profile: {len(lines)} lines, expected 2")
    try:
        rank = json.loads(lines[1])
    except json.JSONDecodeError:
        raise UserError(f"{p}: corrupted partial profile: line 2 is not valid JSON") from None
    if not isinstance(rank, dict):
        raise UserError(f"{p}: corrupted partial profile: line 2 is not a JSON object")
    _check_fields(p, "line 2", rank, RANK_KEYS)
    for name, frec in rank["functions"].items():
        _check_function(p, f"rank {rank['rank']}", name, frec)
    if rank["rank"] != head["rank"] or not 0 <= head["rank"] < head["nranks"]:
        raise UserError(f"{p}: corrupted partial profile: rank {head['rank']} of "
                        f"{head['nranks']} with a rank line of rank {rank['rank']}")
    check_rank_line(p, head["nranks"], rank)  # every value in range (validate.py)
    _check_dump(p, head)
    return head, rank


def _files(paths: list[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise UserError(f"{p}: no such file or directory")
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if _RANK_FILE.match(f.name))
            if not found:
                raise UserError(f"{p}: no partial profile files (rank-N) in this directory")
            out += found
        else:
            out.append(p)
    return out


def _aggregate(nranks: int, lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The header's cross-rank function records (profile_format.c's), from rank lines."""
    funcs: dict[str, dict[str, Any]] = {}
    for name in sorted({n for ln in lines for n in ln["functions"]}):
        recs = [ln["functions"].get(name, {}) for ln in lines]
        called = [r for r in recs if r.get("calls", 0)]
        times = [float(r.get("time_s", 0.0)) for r in recs]
        tmax = max(times)
        f: dict[str, Any] = {
            "calls": sum(int(r.get("calls", 0)) for r in recs),
            "time_s": sum(times),
            "time_min_s": min((float(r.get("time_min_s", 0.0)) for r in called), default=0.0),
            "time_max_s": max((float(r.get("time_max_s", 0.0)) for r in called), default=0.0),
            "rank_time_s": {"min": min(times), "mean": sum(times) / nranks, "max": tmax,
                            "max_rank": lines[times.index(tmax)]["rank"]},
            "calls_per_rank": {"min": min(int(r.get("calls", 0)) for r in recs),
                               "max": max(int(r.get("calls", 0)) for r in recs)},
            "caution": False,
        }
        if any("bytes_sent" in r for r in recs):
            for key in ("bytes_sent", "bytes_recv", "repro_calls", "hist_send_bytes"):
                f[key] = sum(int(r.get(key, 0)) for r in recs)
            for key in ("hist_send", "hist_recv"):
                f[key] = [sum(int(r.get(key, [0] * NBINS)[i]) for r in recs) for i in range(NBINS)]
        funcs[name] = f
    return funcs


def _stat(values: list[float], nranks: int) -> dict[str, float]:
    return {"min": min(values), "mean": sum(values) / nranks, "max": max(values)}


def load_partial(paths: list[str | Path]) -> Profile:
    """The partial profile in paths (a directory, or rank files)."""
    latest: dict[int, tuple[dict[str, Any], dict[str, Any], Path]] = {}
    prev: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    nranks = None
    for p in _files(paths):
        head, rank = _read_dump(p)
        if nranks is not None and head["nranks"] != nranks:
            raise UserError(f"{p}: a dump of a job of {head['nranks']} ranks, the others are "
                            f"of {nranks} ranks: give the files of one job")
        nranks = head["nranks"]
        r = head["rank"]
        if p.name.endswith(".prev"):
            prev[r] = (head, rank)
        elif r in latest and latest[r][2] != p:
            raise UserError(f"{p}: rank {r} given twice (also {latest[r][2]})")
        else:
            latest[r] = (head, rank, p)
    for r, (head, rank) in list(prev.items()):  # no rank-N given: its .prev is its last dump
        if r not in latest:
            latest[r] = (head, rank, Path(paths[0]))
            del prev[r]
    assert nranks is not None
    lines = [latest[r][1] for r in sorted(latest)]
    first = latest[min(latest)][0]
    present = sorted(latest)
    header: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "created": first.get("created", ""),
        "job_id": first.get("job_id", ""), "command": first.get("command", ""),
        "mpi_library": first.get("mpi_library", "unknown"), "nranks": nranks,
        "hosts": sorted({str(ln.get("host", "")) for ln in lines}),
        "hist_labels": list(HIST_LABELS), "overhead_ns": 0.0, "detail": True,
        "wall_s": _stat([float(ln["wall_s"]) for ln in lines], len(lines)),
        "mpi_s": _stat([float(ln["mpi_s"]) for ln in lines], len(lines)),
        "functions": _aggregate(nranks, lines),
    }
    ranks = [latest[r][1] if r in latest else
             {"rank": r, "host": "", "pid": 0, "wall_s": 0.0, "mpi_s": 0.0, "threads": 0,
              "untracked_requests": 0, "functions": {}, "peers": {"sent": [], "recv": []}}
             for r in range(nranks)]
    partial = {"ranks_dumped": present, "missing": [r for r in range(nranks) if r not in latest],
               "dumps": {r: latest[r][0] for r in present},
               "rank_lines": {r: latest[r][1] for r in present},
               "prev": {r: prev[r] for r in prev}}
    src = Path(paths[0]) if len(paths) == 1 else Path(paths[0]).parent
    return Profile(path=src, header=header, ranks=ranks, partial=partial)
