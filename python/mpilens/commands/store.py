"""`mpilens store`: every job's profile in one store, and the questions on it.

  add STORE PROFILE...   one record per job into STORE/spool/ (safe when many
                         jobs end at once: no lock)
  ingest STORE           the spool into the Parquet dataset (idempotent)
  apps STORE             the workload by application
  gains STORE            advise's findings summed over jobs, in node-hours
  endings STORE          how jobs end
  history STORE APP      an application's MPI share per run, its change points
  query STORE "SQL"      DuckDB SQL over the views jobs, functions, findings
  html STORE -o F.html   the questions on one page with plots

The store is a directory; docs/store.md describes its layout and schema.
It needs DuckDB and pyarrow (python -m pip install duckdb pyarrow).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..errors import UserError
from .report import positive_int

WIDTH = 80


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="a store of every job's profile, and its questions",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ss = p.add_subparsers(dest="store_command", metavar="SUBCOMMAND")

    a = ss.add_parser("add", help="add profiles to a store's spool")
    a.add_argument("store", help="the store's directory (made if need be)")
    a.add_argument("profiles", nargs="+", metavar="PROFILE",
                   help="a profile, or a partial profile's directory")
    a.add_argument("--model", metavar="NETMODEL.json",
                   help="advise's network model (default: the one kept for the profile's "
                        "hosts, if any; never measured here)")
    a.add_argument("--user", help="the job's user (default: SLURM_JOB_USER, ... USER)")
    a.add_argument("--account", help="the job's account (default: SLURM_JOB_ACCOUNT, ...)")
    a.add_argument("--ingest", action="store_true", help="ingest the spool afterwards")
    a.set_defaults(func=run_add)

    i = ss.add_parser("ingest", help="compact the spool into the dataset")
    i.add_argument("store")
    i.set_defaults(func=run_ingest)

    for name, helptext in (("apps", "the workload by application"),
                           ("gains", "advise's findings summed over jobs, in node-hours"),
                           ("endings", "how jobs end"),
                           ("history", "an application's MPI share per run, change points"),
                           ("query", "free DuckDB SQL over the views jobs, functions, "
                                     "findings")):
        q = ss.add_parser(name, help=helptext)
        q.add_argument("store")
        if name == "history":
            q.add_argument("app", help="the application (jobs.app: the executable's name)")
        if name == "query":
            q.add_argument("sql", help="a query over jobs, functions, findings (docs/store.md)")
        else:
            q.add_argument("--since", metavar="DATE", type=utc_date,
                           help="jobs ended at or after (UTC)")
            q.add_argument("--until", metavar="DATE", type=utc_date,
                           help="jobs ended before (UTC)")
        if name == "apps":
            q.add_argument("--top", type=positive_int, default=3,
                           help="top functions per application (default 3)")
        q.add_argument("--format", choices=("text", "json", "csv"), default="text")
        q.set_defaults(func=run_question, question=name)
    h = ss.add_parser("html", help="the questions on one self-contained HTML page")
    h.add_argument("store")
    h.add_argument("-o", "--output", required=True, help="the page to write")
    h.add_argument("--force", action="store_true", help="overwrite an existing page")
    h.add_argument("--since", metavar="DATE", type=utc_date, help="jobs ended at or after (UTC)")
    h.add_argument("--until", metavar="DATE", type=utc_date, help="jobs ended before (UTC)")
    h.set_defaults(func=run_html)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1], store_command=None)


def run_html(args: argparse.Namespace) -> int:
    _libs()
    import duckdb

    from .. import outfile, store
    from ..store import page

    out = Path(args.output)
    outfile.check_output(out, args.force, "output")
    s = store.open(args.store)
    try:
        text = page.render(s, args.since, args.until)
    except duckdb.Error as exc:
        raise UserError(_one_line(f"the query failed: {exc}")[:300]) from None
    outfile.write_text(out, text)
    print(f"wrote {out}")
    return 0


def utc_date(text: str) -> str:
    """A date (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM[:SS]), UTC, as DuckDB reads it."""
    try:
        d = datetime.fromisoformat(text.rstrip("Z"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a date "
                                         f"(YYYY-MM-DD[THH:MM], UTC)") from None
    return d.strftime("%Y-%m-%d %H:%M:%S") + "+00"


def _libs() -> None:
    from ..store import need_libraries
    need_libraries()


def run_add(args: argparse.Namespace) -> int:
    _libs()
    import os

    from ..report.partial import load_any
    from ..store import dataset, record

    store = Path(args.store)
    dataset.check_store(store, create=True)
    env = dict(os.environ)
    if args.user is not None:
        env["SLURM_JOB_USER"] = args.user
    if args.account is not None:
        env["SLURM_JOB_ACCOUNT"] = args.account
    bad = 0
    for k, path in enumerate(args.profiles):
        try:
            prof = load_any([path])
            findings, note = ([], "partial profile: advise needs a complete one") \
                if prof.partial is not None else record.advise_findings(path, args.model)
            rec = record.build(prof, path, env, findings, note)
            dataset.spool_record(store, rec, sync_dir=False)
        except dataset.WriteError as exc:  # the store, not the profile: stop here
            dataset.sync_spool(store)
            rest = len(args.profiles) - k - 1
            more = f" and {rest} more" if rest else ""
            raise UserError(f"{exc}: {path}{more} not added") from None
        except UserError as exc:
            bad += 1
            print(f"rejected: {_one_line(str(exc))}", file=sys.stderr)
            continue
        print(f"added: {path} ({rec['app']}, {rec['nranks']} ranks, {rec['ending']})")
    if bad < len(args.profiles):
        dataset.sync_spool(store)
    if args.ingest:
        _print_ingest(dataset.ingest(store))
    return 1 if bad else 0


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _print_ingest(res: dict[str, Any]) -> None:
    for line in res["rejected"]:
        print(f"rejected: {_one_line(line)}", file=sys.stderr)
    print(f"ingested {res['added']} job(s) in {len(res['files'])} file(s); "
          f"{res['duplicates']} already in the store")


def run_ingest(args: argparse.Namespace) -> int:
    _libs()
    from ..store import dataset

    res = dataset.ingest(Path(args.store))
    _print_ingest(res)
    return 1 if res["rejected"] else 0


def _plain(v: Any) -> Any:
    if isinstance(v, (datetime, date)):
        return v.strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(v, datetime) else v.isoformat()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item"):  # numpy scalars
        return v.item()
    return v


def _cell(v: Any) -> str:
    v = _plain(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return "" if v is None else str(v)


def table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    """Columns padded to their widest cell; the last column is cut to fit WIDTH."""
    right = right or set()
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(8, min(widths[-1], WIDTH - fixed))
    out = []
    for r in [headers, *rows]:
        cells = []
        for i, c in enumerate(r):
            c = c if len(c) <= widths[i] else c[:widths[i] - 1] + "~"
            cells.append(c.rjust(widths[i]) if i in right else c.ljust(widths[i]))
        out.append("  ".join(cells).rstrip()[:WIDTH])
    return out


def _nh(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} %"


def _short_fn(name: str) -> str:
    return name[4:] if name.startswith("MPI_") else name


def text_apps(rows: list[dict[str, Any]]) -> list[str]:
    heads = ["application", "jobs", "node-h", "MPI", "bound", "top functions (% of MPI)"]
    body = [[r["app"][:18], str(r["jobs"]), _nh(r["node_hours"]), _pct(r["mpi_pct"]),
             r["bound"]] for r in rows]
    room = WIDTH - sum(max([len(heads[i])] + [len(b[i]) for b in body]) + 2 for i in range(5))
    for b, r in zip(body, rows, strict=True):  # the functions that fit whole, heaviest first
        text = ""
        for f in r["top_functions"]:
            more = f"{_short_fn(f['function'])} {f['mpi_time_pct']:.0f}%"
            if len(text) + len(more) + 1 > room and text:
                break
            text = f"{text} {more}".strip()
        b.append(text)
    return table(heads, body, {1, 2, 3})


def text_gains(rows: list[dict[str, Any]]) -> list[str]:
    body = [[f"{r['rule']} {r['key']}"[:26], str(r["jobs"]), _nh(r["node_hours"]),
             "-" if r["node_hours_lo"] is None or r["node_hours_hi"] is None
             else f"[{_nh(r['node_hours_lo'])}, {_nh(r['node_hours_hi'])}]",
             " ".join(f"{a['app'][:12]} {a['share_pct']:.0f}%" for a in r["apps"])]
            for r in rows]
    return table(["rule finding", "jobs", "node-h", "interval", "carried by"], body, {1, 2})


def text_endings(rows: list[dict[str, Any]]) -> list[str]:
    body = [[r["ending"].replace("_", " "), str(r["jobs"]), _pct(r["jobs_pct"]), _nh(r["node_hours"]),
             ", ".join(f"{k} {v}" for k, v in r["verdicts"].items())] for r in rows]
    return table(["ending", "jobs", "share", "node-h", "flight-recorder verdicts"], body,
                 {1, 2, 3})


def text_history(d: dict[str, Any]) -> list[str]:
    cps = {c["run"] for c in d["change_points"]}
    body = [[str(i), _cell(r["start"]), r["job_id"][:22], str(r["nranks"]),
             _pct(r["mpi_pct"]), "<- change" if i in cps else ""]
            for i, r in enumerate(d["runs"])]
    lines = table(["run", "start (UTC)", "job", "ranks", "MPI", ""], body, {0, 3, 4})
    lines.append(d["verdict"][:WIDTH])
    for c in d["change_points"]:
        lines.append(f"  from run {c['run']} ({c['job_id'][:20]}): median MPI share "
                     f"{c['median_before_pct']:.1f} % -> {c['median_after_pct']:.1f} % "
                     f"(p {c['p_bonferroni']:.2g})"[:WIDTH])
    return lines


def _csv(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(list(rows[0]))
    for r in rows:
        w.writerow([json.dumps(_plain(v)) if isinstance(v, (list, dict)) else _cell(v)
                    if isinstance(v, (datetime, date)) else _plain(v) for v in r.values()])


def run_question(args: argparse.Namespace) -> int:
    _libs()
    import duckdb

    from .. import store
    from ..store import queries

    s = store.open(args.store)
    q = args.question
    try:
        if q == "query":
            rows = s.rows(args.sql)
        elif q == "apps":
            rows = queries.apps(s, args.since, args.until, args.top)
        elif q == "gains":
            rows = queries.gains(s, args.since, args.until)
        elif q == "endings":
            rows = queries.endings(s, args.since, args.until)
        else:
            d = queries.history(s, args.app, args.since, args.until)
            if not d["runs"]:
                raise UserError(f"no job of application '{args.app}' in {args.store} "
                                f"(`mpilens store apps {args.store}` lists them)")
            rows = d["runs"]
    except duckdb.Error as exc:
        raise UserError(_one_line(f"the query failed: {exc}")[:300]) from None
    if args.format == "json":
        print(json.dumps(_plain(d if q == "history" else rows), indent=1))
    elif args.format == "csv":
        _csv(rows)
    elif q == "history":
        print("\n".join(text_history(d)))
    elif q in ("apps", "gains", "endings"):
        lines = {"apps": text_apps, "gains": text_gains, "endings": text_endings}[q](rows)
        print("\n".join(lines) if rows else "no jobs in the store" + (
            " with advise findings" if q == "gains" else ""))
    else:
        print("\n".join(table(list(rows[0]), [[_cell(v) for v in r.values()] for r in rows]))
              if rows else "no rows")
    return 0
