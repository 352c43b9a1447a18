"""One job's compact record for the store (docs/store.md): built from a profile (or a
partial profile) through the readers; plain data, no pyarrow or DuckDB needed.

A record holds the header's facts, the per-function totals with their merged size
histograms, the per-rank distributions as quantiles (never one row per rank), the
flight recorder's verdict for a partial profile, advise's findings when a network
model is at hand, and the path of the full profile.  Its size does not grow with
the ranks: a few KB whatever the job.
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..report.analysis import OUTSIDE
from ..report.profile import Profile

RECORD_FORMAT = "mpilens-store-record"
RECORD_VERSION = 1
# the quantiles kept of every per-rank distribution (wall, MPI time, % in MPI, and each
# function's time): min, p10, p25, median, p75, p90, max
QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
# a function whose median message is below this many bytes is latency-bound (its
# messages cost their start-up more than their bytes: docs/store.md)
LATENCY_BYTES = 16 * 1024
# where the batch system gives who ran the job (the epilog's environment, or the job's)
USER_VARS = ("SLURM_JOB_USER", "PBS_O_LOGNAME", "LSB_JOB_USER", "USER")
ACCOUNT_VARS = ("SLURM_JOB_ACCOUNT", "PBS_ACCOUNT", "LSB_PROJECT_NAME")
# how a partial profile's dumps say the job ended (docs/flight-recorder.md, reason)
ENDINGS = {"time_limit": "time_limit", "hang": "hang", "crash": "crash", "abort": "abort",
           "signal": "signal"}

_hash_cache: dict[tuple[str, int, int], str] = {}


def _first(env: dict[str, str], names: tuple[str, ...]) -> str:
    return next((env[n] for n in names if env.get(n)), "")


def _created(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return None


def executable_of(command: str) -> str:
    """The program of a command line: its first word (a wrapper's is its target's)."""
    words = command.split()
    return words[0] if words else ""


def file_hash(path: str) -> str:
    """sha256 of the executable when it is readable here ("" otherwise); once per file."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    k = (path, st.st_size, st.st_mtime_ns)
    if k not in _hash_cache:
        h = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
        except OSError:
            return ""
        _hash_cache[k] = h.hexdigest()
    return _hash_cache[k]


def app_name(executable: str) -> str:
    """An application's name: the executable's base name (a version suffix kept)."""
    return Path(executable).name or "unknown"


def _quantiles(values: np.ndarray) -> list[float]:
    if values.size == 0:
        return []
    return [float(x) for x in np.quantile(values, QUANTILES)]


def median_class(hist: list[int]) -> int | None:
    """The size class holding the median message (None without messages)."""
    total = sum(hist)
    if not total:
        return None
    acc = 0
    for i, c in enumerate(hist):
        acc += c
        if 2 * acc >= total:
            return i
    return len(hist) - 1


def class_low_bytes(b: int) -> int:
    """The smallest size of class b (0, 1, 2, 4, ... bytes)."""
    return 0 if b == 0 else 1 << (b - 1)


def _ending(prof: Profile) -> tuple[str, str, str]:
    """How the job ended, the verdict's kind and its text (partial profiles only)."""
    if prof.partial is None:
        return "completed", "", ""
    from ..report import waitsfor

    # every dump a rank kept counts (its first hang dump rank-N.hang, .prev, the last):
    # a hang dump, then the SIGTERM that ended the job, is a hang
    reasons = [d.get("reason") for d in prof.partial.get("dumps", {}).values()]
    reasons += [hd[0].get("reason") for hd in prof.partial.get("prev", {}).values()]
    reasons += [hd[0].get("reason") for hds in prof.partial.get("history", {}).values()
                for hd in hds]
    order = ("crash", "abort", "hang", "time_limit", "signal")
    ending = next((ENDINGS[r] for r in order if r in reasons), "unknown")
    try:
        verdict = waitsfor.analyse(prof)["verdict"]
        return ending, str(verdict.get("kind", "")), str(verdict.get("text", ""))
    except Exception as exc:  # noqa: BLE001 - a verdict that fails is left out, said why
        return ending, "", f"no verdict: {exc}"


def _functions(prof: Profile) -> list[dict[str, Any]]:
    t = prof.columns() if prof.ranks else None
    fq = None
    if t is not None and len(t.functions):  # every function's quantiles in one call
        keep = _present(prof)
        if keep.any():
            fq = np.quantile(t.fn_time[:, keep], QUANTILES, axis=1).T
    rows = []
    for name, f in sorted(prof.functions.items()):
        rt = f.get("rank_time_s", {})
        q: list[float] = []
        if fq is not None:
            i = t.function_index(name)  # type: ignore[union-attr]
            if i is not None:
                q = [float(x) for x in fq[i]]
        hs = [int(x) for x in f.get("hist_send") or []]
        hr = [int(x) for x in f.get("hist_recv") or []]
        med = median_class(hs) if sum(hs) else median_class(hr)
        rows.append({
            "function": name,
            "calls": int(f.get("calls", 0)),
            "time_s": float(f.get("time_s", 0.0)),
            "bytes_sent": int(f.get("bytes_sent", 0)),
            "bytes_recv": int(f.get("bytes_recv", 0)),
            "outside": name in OUTSIDE,
            "rank_time_min_s": float(rt.get("min", q[0] if q else 0.0)),
            "rank_time_max_s": float(rt.get("max", q[-1] if q else 0.0)),
            "rank_time_q_s": q,
            "median_size_bytes": None if med is None else class_low_bytes(med),
            "hist_send": hs,
            "hist_recv": hr,
        })
    return rows


def _present(prof: Profile) -> np.ndarray:
    """The ranks with figures (a partial profile's ranks that left no dump are not)."""
    n = prof.columns().n
    if prof.partial is None:
        return np.ones(n, dtype=bool)
    mask = np.zeros(n, dtype=bool)
    mask[[r for r in prof.partial.get("ranks_dumped", []) if r < n]] = True
    return mask


def latency_share(functions: list[dict[str, Any]]) -> float | None:
    """Share of the time in functions that move messages spent in those whose median
    message is below LATENCY_BYTES (None: no function moved a message)."""
    lat = tot = 0.0
    for f in functions:
        if f["outside"] or f["median_size_bytes"] is None:
            continue
        tot += f["time_s"]
        if f["median_size_bytes"] < LATENCY_BYTES:
            lat += f["time_s"]
    return lat / tot if tot > 0 else None


def build(prof: Profile, profile_path: str, env: dict[str, str] | None = None,
          findings: list[dict[str, Any]] | None = None, advise_note: str = "") -> dict[str, Any]:
    """The record of one loaded profile."""
    env = dict(os.environ if env is None else env)
    h = prof.header
    command = str(h.get("command") or "")
    exe = executable_of(command)
    wall_max = float(h["wall_s"]["max"])
    created = _created(str(h.get("created") or ""))
    if created is None:
        try:
            created = datetime.fromtimestamp(Path(profile_path).stat().st_mtime, UTC)
        except OSError:
            created = datetime.now(UTC)
        created = created.replace(microsecond=0)
    start = created - timedelta(seconds=wall_max)
    nodes = h.get("nodes", {}).get("count") if isinstance(h.get("nodes"), dict) else None
    nnodes = int(nodes) if isinstance(nodes, int) and nodes > 0 else max(1, len(
        {x for x in h.get("hosts") or [] if x}))
    ending, vkind, vtext = _ending(prof)
    if prof.ranks:
        t = prof.columns()
        keep = _present(prof)
        wall, mpi = t.wall_s[keep], t.mpi_s[keep]
        pct = np.where(wall > 0, 100.0 * mpi / np.where(wall > 0, wall, 1.0), 0.0)
        wall_q, mpi_q, pct_q = _quantiles(wall), _quantiles(mpi), _quantiles(pct)
    else:
        wall_q = mpi_q = pct_q = []
    functions = _functions(prof)
    wall_mean, mpi_mean = float(h["wall_s"]["mean"]), float(h["mpi_s"]["mean"])
    job_id = str(h.get("job_id") or "")
    key_src = f"{job_id}|{start.isoformat()}|{command}|{prof.nranks}"
    rec = {
        "format": RECORD_FORMAT, "version": RECORD_VERSION,
        "job_key": hashlib.sha256(key_src.encode()).hexdigest()[:24],
        "job_id": job_id,
        "user": _first(env, USER_VARS),
        "account": _first(env, ACCOUNT_VARS),
        "app": app_name(exe),
        "executable": exe,
        "exe_sha256": file_hash(exe) if exe else "",
        "command": command,
        "start": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "end": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nranks": prof.nranks,
        "nnodes": nnodes,
        "hosts": len(h.get("hosts") or []),
        "wall_s": wall_max,
        "wall_mean_s": wall_mean,
        "mpi_mean_s": mpi_mean,
        "mpi_pct": 100.0 * mpi_mean / wall_mean if wall_mean > 0 else 0.0,
        "node_hours": nnodes * wall_max / 3600.0,
        "mpi_library": str(h.get("mpi_library") or "unknown"),
        "mpi_flavour": str(h.get("mpi_flavour") or "unknown"),
        "ending": ending,
        "verdict": vkind,
        "verdict_text": vtext,
        "ranks_missing": len(prof.partial.get("missing", [])) if prof.partial else 0,
        "latency_share": latency_share(functions),
        "wall_q_s": wall_q, "mpi_q_s": mpi_q, "mpi_pct_q": pct_q,
        "profile": str(Path(profile_path).resolve()),
        "functions": functions,
        "findings": findings or [],
        "advise_note": advise_note,
    }
    return rec


def finding_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """advise's findings (shown and minor; withheld ones are not) as the store keeps them."""
    out = []
    for f in result.get("findings", []) + result.get("minor", []):
        iv = f.get("gain_interval")  # none: no interval (not a point one)
        out.append({"rule": int(f["rule"]), "key": str(f["key"]), "title": str(f["title"]),
                    "gain_s": float(f["gain_s"]),
                    "gain_lo_s": float(iv[0]) if iv else None,
                    "gain_hi_s": float(iv[1]) if iv else None, "gain_pct": float(f["gain_pct"]),
                    "confidence": str(f["confidence"]), "change": str(f["change"])[:300]})
    return out


def advise_findings(path: str, model_path: str | None) -> tuple[list[dict[str, Any]], str]:
    """advise's findings for a complete profile with the model given, else with the model
    kept for its hosts (never measured here: an epilog must not start jobs)."""
    from ..advise import engine, kept, netmodel
    from ..advise.ranks import load

    try:
        prof = load(path)
        if model_path:
            model = netmodel.load(model_path)
        else:
            size = 1
            while size < min(max(engine.largest_message(prof), engine.DEFAULT_MAX_SIZE),
                             engine.MEASURE_CAP):
                size <<= 1
            model = kept.load_kept(prof, size)
            if model is None:
                return [], "no network model kept for its hosts (store add --model FILE)"
        return finding_rows(engine.advise(prof, model)), ""
    except UserError as exc:
        return [], re.sub(r"\s+", " ", str(exc))[:300]
