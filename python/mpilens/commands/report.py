"""`mpilens report PROFILE`: where does the communication time go (one page)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

from ..errors import UserError
from ..report import analysis, commpattern, terminal
from ..report.profile import load

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
    p.add_argument("profile", help="profile file written by mpilens (mpilens-<job>.prof)")
    p.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text (default): rich tables; json: everything, exact numbers; "
                        "csv: the function table (or the --function histogram)")
    p.add_argument("--top", type=positive_int, default=None,
                   help=f"functions to show (default {DEFAULT_TOP} for text, all for json/csv)")
    p.add_argument("--function", metavar="NAME",
                   help="message-size histogram of one function (MPI_Bcast, bcast, ...)")
    p.set_defaults(func=run)


def report_data(args: argparse.Namespace) -> dict[str, Any]:
    prof = load(args.profile)
    rows = analysis.function_rows(prof)
    data: dict[str, Any] = {
        "summary": analysis.summary(prof),
        "functions": rows[: args.top] if args.top else rows,
        "communication": commpattern.summary(prof),
        "alltoall": analysis.alltoall_rows(prof),
    }
    if args.function:
        data["histogram"] = analysis.histogram(prof, args.function)
    return data


def write_csv(data: dict[str, Any]) -> None:
    w = csv.writer(sys.stdout, lineterminator="\n")
    hist = data.get("histogram")
    if hist:
        w.writerow(["function", "direction", "bin", "size_class", "messages"])
        for direction, d in hist["directions"].items():
            for i, c in enumerate(d["bins"]):
                w.writerow([hist["function"], direction, i, hist["labels"][i], c])
        return
    rows = data["functions"]
    cols = list(rows[0]) if rows else ["function"]
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r[c] is None else r[c] for c in cols])


def run(args: argparse.Namespace) -> int:
    if args.format == "text":
        prof = load(args.profile)
        if args.function:
            analysis.resolve_function(prof, args.function)  # fail before printing anything
        terminal.render(prof, args.top or DEFAULT_TOP, args.function)
        return 0
    data = report_data(args)
    if args.format == "json":
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif args.format == "csv":
        write_csv(data)
    else:  # pragma: no cover - argparse restricts the choices
        raise UserError(f"unknown format {args.format}")
    return 0
