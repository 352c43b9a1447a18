"""Read the flight recorder's partial profile (docs/flight-recorder.md).

A job that never reached MPI_Finalize leaves `<output>.partial/rank-N`, one file per
rank that could write one, each two JSON lines: the dump's header (why, when, what each
thread is inside, outstanding requests) and the rank's records in the profile's
rank-line format.  `rank-N.prev` is the rank's dump before, if any, and `rank-N.hang`
its first hang dump (kept for good: a later dump never erases the evidence of a hang).

`load_partial(paths)` takes the directory or some of its files (ranks may be missing)
and returns a `Profile` whose header is built from the rank lines (the usual tables
work on it) and whose `partial` holds the dumps, for the waits-for analysis
(waitsfor.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import UserError
from . import limits
from .profile import Profile, _check_fields, _check_function, load
from .schema import FORMAT, HIST_LABELS, NBINS, RANK_KEYS, VERSION
from .validate import _Checker

PARTIAL_FORMAT = "mpilens-partial"
PARTIAL_VERSION = 1
_RANK_FILE = re.compile(r"^rank-(\d+)(\.prev|\.hang)?$")
# a dump's reason in words, for the reports (the file's own word: time_limit)
REASON_WORDS = {"signal": "signal", "time_limit": "time limit", "hang": "hang",
                "abort": "MPI_Abort", "crash": "crash"}


def dump_label(reason: str | None, dump: int | None) -> str:
    """'time limit, dump 1': why a rank's last dump was written, and its number."""
    return "-" if not reason else f"{REASON_WORDS.get(reason, reason)}, dump {dump}"


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
    if not 1 <= head["nranks"] < 2**31 or isinstance(head["nranks"], bool) or \
            rank["rank"] != head["rank"] or not 0 <= head["rank"] < head["nranks"]:
        raise UserError(f"{p}: corrupted partial profile: rank {head['rank']} of "
                        f"{head['nranks']} with a rank line of rank {rank['rank']}")
    c = _Checker(p, head["nranks"])
    c.rank_line(rank)  # every count, time and rank in range, as in a profile (validate.py)
    return _clean_head(c, head), rank


_KINDS = ("other", "send", "recv", "sendrecv", "coll", "wait")
_PEER_WORDS = ("any", "proc_null", "unknown")


def _clean_comm(c: _Checker, w: str, v: Any) -> Any:
    if v is None or v in ("world", "unknown"):
        return v
    o = c.obj(w, v)
    ranks = [c.rank(f"{w}.ranks[{i}]", x)
             for i, x in enumerate(c.seq(f"{w}.ranks", o.get("ranks")))]
    return {"size": c.count(f"{w}.size", o.get("size", len(ranks))), "ranks": ranks}


def _clean_call(c: _Checker, w: str, v: Any, top: bool) -> dict[str, Any]:
    """A CALL or REQUEST of a dump (docs/flight-recorder.md), checked field by field."""
    o = c.obj(w, v)
    out: dict[str, Any] = {"function": c.text(f"{w}.function", o.get("function"))}
    kind = o.get("kind", "other")
    if kind not in _KINDS:
        raise c.fail(f"{w}.kind", kind, "one of " + ", ".join(_KINDS))
    out["kind"] = kind
    out["comm"] = _clean_comm(c, f"{w}.comm", o.get("comm"))
    for key in ("dest", "source", "root"):
        if key in o:
            x = o[key]
            if x is not None and x not in _PEER_WORDS:
                x = c.rank(f"{w}.{key}", x)
            out[key] = x
    for key in ("tag", "recv_tag"):
        if key in o:
            out[key] = c.count(f"{w}.{key}", o[key], -(2**31), 2**31 - 1)
    out["bytes"] = c.count(f"{w}.bytes", o.get("bytes", 0))
    out["since_s"] = c.time(f"{w}.since_s", o.get("since_s", 0.0))
    if "persistent" in o:
        c.flag(f"{w}.persistent", o["persistent"])
        out["persistent"] = o["persistent"]
    if o.get("coll_seq") is not None:
        out["coll_seq"] = c.count(f"{w}.coll_seq", o["coll_seq"])
    if top and kind == "wait":
        out["requests"] = c.count(f"{w}.requests", o.get("requests", 0), 0, 2**31 - 1)
        out["waits_on"] = [_clean_call(c, f"{w}.waits_on[{i}]", q, False)
                           for i, q in enumerate(c.seq(f"{w}.waits_on", o.get("waits_on", [])))]
    return out


def _clean_head(c: _Checker, head: dict[str, Any]) -> dict[str, Any]:
    """The dump header with every field the analysis reads checked (one line if not)."""
    h = dict(head)
    for key in ("reason", "created", "job_id", "command", "host", "mpi_library"):
        if h.get(key) is not None:
            c.text(f"dump header {key}", h[key])
    if h["reason"] not in ("signal", "time_limit", "hang", "abort", "crash"):
        raise c.fail("dump header reason", h["reason"],
                     "one of signal, time_limit, hang, abort, crash")
    if h.get("signal") is not None:
        c.text("dump header signal", h["signal"])
    if h.get("errorcode") is not None:
        c.count("dump header errorcode", h["errorcode"], -(2**31), 2**31 - 1)
    c.count("dump header dump", h["dump"], 1)
    c.time("dump header elapsed_s", h["elapsed_s"])
    if h.get("world_collectives") is not None:
        c.count("dump header world_collectives", h["world_collectives"])
    for key in ("time", "cpu_s"):  # the wall clock (epoch seconds) and CPU time at the dump
        if h.get(key) is not None:
            h[key] = c.time(f"dump header {key}", h[key])
    stops = []
    for i, st in enumerate(c.seq("dump header stopped", h.get("stopped", []))):
        st = c.obj(f"dump header stopped[{i}]", st)
        stops.append({k: c.time(f"dump header stopped[{i}].{k}", st.get(k, 0.0))
                      for k in ("from", "for_s", "cpu_s")})
    h["stopped"] = stops
    ops = []  # the rank's last collectives on MPI_COMM_WORLD: place and operation
    for i, op in enumerate(c.seq("dump header world_ops", h.get("world_ops", []))):
        w = f"dump header world_ops[{i}]"
        op = c.obj(w, op)
        root = op.get("root")
        if root is not None and root not in _PEER_WORDS:
            root = c.rank(f"{w}.root", root)
        ops.append({"coll_seq": c.count(f"{w}.coll_seq", op.get("coll_seq"), 1),
                    "function": c.text(f"{w}.function", op.get("function")), "root": root})
    h["world_ops"] = ops
    for key in ("requests_live", "untracked_requests"):
        h[key] = c.count(f"dump header {key}", h.get(key, 0))
    threads = []
    for i, t in enumerate(h["threads"]):
        t = c.obj(f"dump header threads[{i}]", t)
        call = t.get("call")
        ct: dict[str, Any] = {"thread": i, "call": None if call is None else
                              _clean_call(c, f"dump header threads[{i}].call", call, True)}
        if t.get("last_call") is not None:
            ct["last_call"] = c.text(f"dump header threads[{i}].last_call", t["last_call"])
        threads.append(ct)
    h["threads"] = threads
    h["requests"] = [_clean_call(c, f"dump header requests[{i}]", q, False)
                     for i, q in enumerate(h["requests"])]
    return h


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
            "rank_time_s": {"min": min(times), "mean": sum(times) / len(times), "max": tmax,
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


def _stat(values: list[float]) -> dict[str, float]:
    """Over the ranks that left a dump only (a missing rank is not a rank at 0 s)."""
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


def load_partial(paths: list[str | Path]) -> Profile:
    """The partial profile in paths (a directory, or rank files)."""
    latest: dict[int, tuple[dict[str, Any], dict[str, Any], Path]] = {}
    prev: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    hang: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    skipped: list[str] = []  # one line per file left out
    files = _files(paths)
    read: list[tuple[Path, dict[str, Any], dict[str, Any]]] = []
    for p in files:
        try:
            head, rank = _read_dump(p)
        except UserError as exc:
            if len(files) == 1:
                raise
            skipped.append(str(exc))
            continue
        m = _RANK_FILE.match(p.name)
        if m and int(m.group(1)) != head["rank"]:
            skipped.append(f"{p}: corrupted partial profile: the dump of rank {head['rank']} "
                           f"under the name of rank {m.group(1)}: left out")
            continue
        read.append((p, head, rank))
    sizes = [h["nranks"] for _, h, _ in read]
    nranks = max(set(sizes), key=lambda k: (sizes.count(k), -k)) if sizes else None
    for p, head, rank in read:
        if head["nranks"] != nranks:
            skipped.append(f"{p}: a dump of a job of {head['nranks']} ranks, the others are "
                           f"of {nranks} ranks: left out")
            continue
        r = head["rank"]
        if p.name.endswith(".prev"):
            prev[r] = (head, rank)
        elif p.name.endswith(".hang"):
            hang[r] = (head, rank)
        elif r in latest and latest[r][2] != p:
            skipped.append(f"{p}: rank {r} given twice (also {latest[r][2]}): left out")
        else:
            latest[r] = (head, rank, p)
    for r, (head, rank) in list(prev.items()):  # no rank-N given: its .prev is its last dump
        if r not in latest:
            latest[r] = (head, rank, Path(paths[0]))
            del prev[r]
    for r, (head, rank) in hang.items():  # nor rank-N.prev: its hang dump is
        if r not in latest:
            latest[r] = (head, rank, Path(paths[0]))
    # each rank's dumps oldest first, one per dump number (the hang dump may also be
    # rank-N.prev or rank-N)
    history: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for src in (hang, prev, {r: v[:2] for r, v in latest.items()}):
        for r, (head, rank) in src.items():
            history.setdefault(r, [])
            if all(h["dump"] != head["dump"] for h, _ in history[r]):
                history[r].append((head, rank))
    for r in history:
        history[r].sort(key=lambda hr: hr[0]["dump"])
    if nranks is None or not latest:
        raise UserError(skipped[0] + (f" (and {len(skipped) - 1} more files: none usable)"
                                      if len(skipped) > 1 else ""))
    lines = [latest[r][1] for r in sorted(latest)]
    first = latest[min(latest)][0]
    present = sorted(latest)
    header: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "created": first.get("created", ""),
        "job_id": first.get("job_id", ""), "command": first.get("command", ""),
        "mpi_library": first.get("mpi_library", "unknown"), "nranks": nranks,
        "hosts": sorted({str(ln.get("host", "")) for ln in lines}),
        "hist_labels": list(HIST_LABELS), "overhead_ns": None, "detail": True,
        "wall_s": _stat([float(ln["wall_s"]) for ln in lines]),
        "mpi_s": _stat([float(ln["mpi_s"]) for ln in lines]),
        "functions": _aggregate(nranks, lines),
    }
    ranks = [latest[r][1] if r in latest else
             {"rank": r, "host": "", "pid": 0, "wall_s": 0.0, "mpi_s": 0.0, "threads": 0,
              "untracked_requests": 0, "functions": {}, "peers": {"sent": [], "recv": []}}
             for r in range(nranks)]
    partial = {"ranks_dumped": present, "missing": [r for r in range(nranks) if r not in latest],
               "dumps": {r: latest[r][0] for r in present},
               "rank_lines": {r: latest[r][1] for r in present},
               "prev": {r: prev[r] for r in prev}, "history": history, "skipped": skipped}
    src = Path(paths[0]) if len(paths) == 1 else Path(paths[0]).parent
    return Profile(path=src, header=header, ranks=ranks, partial=partial)
