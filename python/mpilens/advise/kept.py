"""The kept network model (docs/advise.md, The network model): measured once per
(hosts, MPI library, ranks per node) with `mpilens-bench logp` and stored beside the
adaptive Alltoall's tuning cache, $XDG_CACHE_HOME/mpilens/netmodel-<digest>.json, with
the 95 % confidence interval of every parameter's median per size (the bench's
`median_ci95`).  `advise` without --model reuses it, so the same profile gives the same
output; `--remeasure` measures it again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from .. import outfile
from ..errors import UserError
from ..report.profile import Profile
from . import netmodel

SAMPLES = 10   # a median's 95 % interval needs some samples (order statistics n/2 -+ 0.98 sqrt n)
CI_KEYS = ("rtt_s", "os_s", "or_s", "g_s")


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/mpilens (~/.cache/mpilens when unset or relative), as the tuning
    cache (docs/alltoall.md, Learning across runs)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "mpilens"


def key(prof: Profile) -> dict[str, Any]:
    """What the model depends on: the profile's hosts, its MPI library and ranks per node
    (the most ranks any host ran)."""
    per_host = Counter(str(r.get("host", "")) for r in prof.ranks)
    return {"hosts": sorted(str(h) for h in prof.header.get("hosts", [])),
            "mpi_library": str(prof.header.get("mpi_library", "")),
            "ranks_per_node": max(per_host.values()) if per_host else 1}


def path_for(k: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(k, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"netmodel-{digest}.json"


def intervals(results: list[dict[str, Any]], model: dict[str, Any]) -> dict[str, list[list[float]]]:
    """Per parameter, the [lo, hi] 95 % interval of the median per size (the bench's
    median_ci95), widened to hold the model's own value (a value the bench replaced, as
    a clamped g, is inside its interval) and never below 0."""
    out: dict[str, list[list[float]]] = {}
    for name in CI_KEYS:
        values = model.get(name)
        if not isinstance(values, list) or len(values) != len(results):
            continue
        row = []
        for r, v in zip(results, values):
            st = r.get(name) if isinstance(r.get(name), dict) else {}
            ci = st.get("median_ci95") or [v, v]
            row.append([min(max(float(ci[0]), 0.0), float(v)), max(float(ci[1]), float(v))])
        out[name] = row
    return out


def load_kept(prof: Profile, need: int) -> netmodel.NetModel | None:
    """The kept model of the profile's key when it covers sizes up to `need`; None when
    there is none (or an unreadable one: it is measured again)."""
    k = key(prof)
    p = path_for(k)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != k:
        return None
    try:
        model = netmodel.parse(doc.get("model"), f"kept {p}")
    except UserError:
        return None
    return model if model.sizes[-1] >= need else None


def measure_and_keep(prof: Profile, max_size: int) -> netmodel.NetModel:
    """Measure the model on this host (bench logp on 2 ranks, SAMPLES samples per size)
    and keep it, with its intervals, under the profile's key."""
    from ..bench.launch import BenchFailed, default_launcher, run_bench

    opts = ["--max-size", str(max_size), "--samples", str(SAMPLES), "--iters", "5",
            "--train", "16"]
    try:
        doc = run_bench(default_launcher(2), "logp", opts, progress=False, timeout=600)
    except BenchFailed as exc:
        raise UserError(f"measuring the network model on this host failed ({exc}): give "
                        f"--model FILE") from None
    model_doc = dict(doc.get("model") or {})
    model_doc["hosts"] = list(doc.get("env", {}).get("hosts", model_doc.get("hosts", [])))
    results = doc.get("results") or []
    if len(results) == len(model_doc.get("sizes", [])):
        model_doc["ci95"] = intervals(results, model_doc)
    k = key(prof)
    p = path_for(k)
    model_doc_checked = netmodel.parse(model_doc, f"kept {p}")  # refuse a bad one before keeping it
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        outfile.write_text(p, json.dumps({"format": "mpilens-kept-netmodel", "version": 1,
                                          "key": k, "samples": SAMPLES, "model": model_doc},
                                         indent=1) + "\n")
    except OSError as exc:
        raise UserError(f"cannot keep the network model in {p}: "
                        f"{exc.strerror or exc}") from None
    model_doc_checked.measured_now = True
    return model_doc_checked
