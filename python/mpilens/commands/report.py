"""`mpilens report PROFILE`: where does the communication time go (one page)."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
from typing import Any

from ..errors import UserError
from ..report import (
    analysis,
    callsites,
    commpattern,
    comms,
    conventions,
    headercheck,
    jsonout,
    layout,
    nodes,
    ranks,
    regions,
    spread,
    spread_text,
    fastread,
    terminal,
    timeline,
    waitsfor,
)
from ..report.partial import is_partial, load_any
from ..report.profile import Profile

DEFAULT_TOP = 15


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return v


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="one-page report of a profile",
                       description=__doc__)
    p.add_argument("profile", nargs="+",
                   help="profile file written by mpilens (mpilens-<job>.prof), or a partial "
                        "profile of a job that did not finish: its directory "
                        "(mpilens-<job>.prof.partial) or some of its rank files")
    p.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text (default): rich tables; json: everything, exact numbers; "
                        "csv: the function table (or the --function histogram)")
    p.add_argument("--top", type=positive_int, default=None,
                   help=f"functions to show (default {DEFAULT_TOP} for text, all for json/csv)")
    p.add_argument("--function", metavar="NAME",
                   help="message-size histogram of one function (MPI_Bcast, bcast, ...)")
    p.add_argument("--bytes-as", choices=("mpilens", "mpip"), default="mpilens",
                   help="csv function table: mpilens's bytes_sent and bytes_recv (default), or "
                        "mpip: mpiP's sent bytes per function (docs/runtime.md, byte conventions)")
    p.add_argument("--ranks", nargs="?", const="all", choices=("all",), default=None,
                   help="'--ranks all' (or '--ranks'): the full per-rank table: node, time in "
                        "MPI, wall time, calls, bytes, intra/inter-node bytes, top function "
                        "(text: in place of the spread over ranks; csv: instead of the "
                        "function table; json: included without it only below "
                        f"{JSON_RANKS_MAX:,} ranks)")
    p.add_argument("--node-matrix", action="store_true",
                   help="text: also print the node x node matrix of point-to-point bytes and "
                        "messages (JSON: always, under nodes)")
    p.add_argument("--callsite", type=positive_int, metavar="N",
                   help="call site N of the 'top call sites' table in detail: its stack, "
                        "per-rank calls and time, message sizes")
    p.add_argument("--region", metavar="NAME",
                   help="only the MPI calls made inside region NAME (MPI_Pcontrol labels, "
                        "mpilens_region_begin/end): the function table and histograms")
    add_width(p)
    p.set_defaults(func=run)


def width_int(text: str) -> int:
    v = positive_int(text)
    if v < layout.MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"{v} columns are too few: give {layout.MIN_WIDTH} "
                                         f"or more")
    return v


def add_width(p: argparse.ArgumentParser) -> None:
    p.add_argument("--width", type=width_int, metavar="COLUMNS",
                   help="columns of the text output (default: COLUMNS, else the terminal's; "
                        "150 when piped); tables leave out their least important columns "
                        "to fit, and say which")


def region_view(prof: Profile, region: str | None) -> Profile:
    """The profile seen through --region: its functions are the region's calls."""
    if region is None:
        return prof
    return dataclasses.replace(prof, header={**prof.header,
                                             "functions": regions.region_functions(prof, region)})


def callsite_detail(prof: Profile, n: int) -> dict[str, Any]:
    rows = callsites.callsite_rows(prof)
    if not rows:
        raise UserError(f"{prof.path}: the profile has no call sites (written with "
                        "MPILENS_CALLSITES=0, MPILENS_DETAIL=off or by a version 1 mpilens)")
    if n > len(rows):
        raise UserError(f"--callsite {n}: the profile has {len(rows)} call sites (1..{len(rows)})")
    return rows[n - 1]


# --format json includes the per-rank rows of a profile of fewer ranks than this without
# --ranks all (docs/cli.md); above, the spreads over ranks and nodes stand for them
JSON_RANKS_MAX = 1024


def report_data(args: argparse.Namespace, prof: Profile) -> dict[str, Any]:
    view = region_view(prof, args.region)
    rows = analysis.function_rows(view)
    cs = callsites.callsite_rows(prof)
    data: dict[str, Any] = {
        "summary": analysis.summary(prof),
        "header_check": headercheck.check(prof),
        "functions": rows[: args.top] if args.top else rows,
        "communication": commpattern.summary(prof),
        "alltoall": analysis.alltoall_rows(prof),
        "ranks": (ranks.rank_rows(prof) if args.ranks or prof.nranks < JSON_RANKS_MAX
                  else None),
        "rank_spread": spread.rank_spread(prof),
        "node_spread": spread.node_spread(prof),
        "nodes": nodes.node_view(prof),
        "callsites": cs[: args.top] if args.top else cs,
        "callsites_dropped": callsites.dropped(prof),
        "regions": regions.region_rows(prof),
        "regions_dropped": regions.dropped(prof),
        "timeline": timeline.as_json(timeline.timeline(prof)),
        "comms": comms.comm_rows(prof),
        "comms_dropped": comms.dropped(prof),
    }
    if data["ranks"] is None and prof.ranks:
        data["ranks_omitted"] = (f"{prof.nranks:,} ranks: the per-rank rows only with "
                                 "--ranks all (rank_spread and node_spread summarise them)")
    if args.region:
        data["region"] = args.region
    if args.callsite:
        data["callsite"] = callsite_detail(prof, args.callsite)
    if args.function:
        data["histogram"] = analysis.histogram(view, args.function)
    if prof.partial is not None:
        data["partial"] = waitsfor.analyse(prof)
    return data


def _csv_table(w: Any, cols: list[str], rows: list[dict[str, Any]]) -> None:
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r[c] is None else r[c] for c in cols])


def write_csv(data: dict[str, Any], per_rank: bool = False) -> None:
    w = csv.writer(sys.stdout, lineterminator="\n")
    hist = data.get("histogram")
    if hist:
        w.writerow(["function", "direction", "bin", "size_class", "min_bytes", "max_bytes",
                    "messages"])
        for direction, d in hist["directions"].items():
            for i, c in enumerate(d["bins"]):
                lo, hi = hist["bounds"][i]
                w.writerow([hist["function"], direction, i, hist["labels"][i], lo,
                            "" if hi is None else hi, c])
        return
    if per_rank:
        _csv_table(w, ranks.RANK_COLUMNS, data["ranks"])
        return
    rows = data["functions"]
    _csv_table(w, list(rows[0]) if rows else ["function"], rows)


def check_args(args: argparse.Namespace) -> None:
    """Option combinations that select nothing sensible: one line, before any output."""
    if args.format == "csv" and args.ranks and args.function:
        raise UserError("--ranks and --function select different CSV tables: give one of them")
    if args.bytes_as != "mpilens" and (args.format != "csv" or args.ranks or args.function):
        raise UserError(f"--bytes-as {args.bytes_as} applies to the CSV function table "
                        "(--format csv, without --ranks or --function)")


def run(args: argparse.Namespace) -> int:
    check_args(args)
    prof = load_any(args.profile)
    fastread.say_fallback(bool(prof.ranks) and not is_partial(args.profile[0]))
    if args.format == "text":
        view = region_view(prof, args.region)  # fail before printing anything
        if args.function:
            analysis.resolve_function(view, args.function)
        if args.callsite:  # only the detail of that call site
            con = layout.console(args.width)
            for item in terminal.callsite_block(callsite_detail(prof, args.callsite),
                                                prof.hist_labels()):
                con.print(item)
            return 0
        terminal.render(prof, args.top or DEFAULT_TOP, args.function,
                        per_rank=args.ranks is not None,
                        region=args.region, width=args.width)
        if args.node_matrix:
            print("\n".join(spread_text.node_matrix_lines(prof)))
        return 0
    data = report_data(args, prof)
    if args.format == "json":
        jsonout.dump(data, sys.stdout)  # json.dump(limits.strict(data), indent=1)'s bytes
        sys.stdout.write("\n")
    elif args.format == "csv":
        if args.ranks and data["ranks"] is None:
            raise UserError(f"{prof.path}: the profile has no rank lines (written with "
                            "MPILENS_DETAIL=off): no per-rank table")
        if args.bytes_as == "mpip":
            data["functions"] = conventions.with_mpip_bytes(data["functions"], prof.functions)
        write_csv(data, per_rank=args.ranks is not None)
    else:  # pragma: no cover - argparse restricts the choices
        raise UserError(f"unknown format {args.format}")
    return 0
