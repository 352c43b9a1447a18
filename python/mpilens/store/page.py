"""`mpilens store html`: the store's questions on one self-contained HTML page (inline
CSS, matplotlib plots as base64 PNG, no script, nothing fetched)."""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any

from . import Store, queries


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M")
    return html.escape("" if v is None else str(v))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _plots(apps: list[dict[str, Any]], hist: dict[str, Any] | None) -> str:
    from ..report.html import _png, plt

    out = []
    if apps:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        names = [a["app"] for a in apps[:15]]
        ax.barh(names[::-1], [a["node_hours"] for a in apps[:15]][::-1], color="#4c72b0")
        ax.set_xlabel("node-hours")
        ax.set_title("Workload by application")
        out.append(_png(fig, "node-hours per application"))
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.scatter([a["node_hours"] for a in apps], [a["mpi_pct"] or 0 for a in apps],
                   c=["#c44e52" if a["bound"] == "latency" else "#55a868" for a in apps])
        for a in apps[:15]:
            ax.annotate(a["app"], (a["node_hours"], a["mpi_pct"] or 0), fontsize=7)
        ax.set_xlabel("node-hours")
        ax.set_ylabel("% in MPI")
        ax.set_title("MPI share (red: latency-bound, green: bandwidth-bound)")
        out.append(_png(fig, "MPI share against node-hours"))
    if hist and hist["runs"]:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.plot(range(len(hist["runs"])), [r["mpi_pct"] for r in hist["runs"]], ".",
                color="#4c72b0")
        for c in hist["change_points"]:
            ax.axvline(c["run"], color="#c44e52", linestyle="--")
        ax.set_xlabel("run")
        ax.set_ylabel("% in MPI")
        ax.set_title(f"{hist['app']}: MPI share per run ({hist['verdict'][:60]})")
        out.append(_png(fig, f"history of {hist['app']}"))
    return "\n".join(out)


def render(s: Store, since: str | None = None, until: str | None = None) -> str:
    apps = queries.apps(s, since, until)
    ends = queries.endings(s, since, until)
    gains = queries.gains(s, since, until)
    hist = queries.history(s, apps[0]["app"], since, until) if apps else None
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>mpilens store {html.escape(str(s.path))}</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:1em auto}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;"
        "padding:2px 6px;font-size:90%}th{background:#eee}img.plot{display:block}</style>",
        "</head><body>",
        f"<h1>Workload store {html.escape(str(s.path))}</h1>",
        f"<p>{sum(a['jobs'] for a in apps)} jobs, "
        f"{sum(a['node_hours'] or 0 for a in apps):.4g} node-hours.</p>",
        "<h2>Applications</h2>",
        _table(["application", "jobs", "node-hours", "% in MPI", "bound", "top functions"],
               [[a["app"], a["jobs"], a["node_hours"], a["mpi_pct"], a["bound"],
                 ", ".join(f"{f['function']} {f['mpi_time_pct']:.0f}%"
                           for f in a["top_functions"])] for a in apps]),
        "<h2>What advise's changes would buy</h2>",
        _table(["rule", "finding", "jobs", "node-hours", "low", "high", "carried by"],
               [[g["rule"], g["key"], g["jobs"], g["node_hours"], g["node_hours_lo"],
                 g["node_hours_hi"], ", ".join(f"{a['app']} {a['share_pct']:.0f}%"
                                               for a in g["apps"])] for g in gains])
        if gains else "<p>No advise findings in the store.</p>",
        "<h2>How jobs end</h2>",
        _table(["ending", "jobs", "share %", "node-hours", "verdicts"],
               [[e["ending"], e["jobs"], e["jobs_pct"], e["node_hours"],
                 ", ".join(f"{k} {v}" for k, v in e["verdicts"].items())] for e in ends]),
        "<h2>Plots</h2>",
        _plots(apps, hist),
        "</body></html>",
    ]
    return "\n".join(parts)
