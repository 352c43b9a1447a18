"""`mpilens diff A B`: two runs side by side, sorted by what explains the wall-time change."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.text import Text

from ..report import fastread, layout, limits
from ..report.comparison import compare
from ..report.layout import Col, fit_table
from ..report.profile import load
from ..units import fmt_bytes, fmt_time
from .report import add_width, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="compare two profiles", description=__doc__)
    p.add_argument("a", help="the baseline profile")
    p.add_argument("b", help="the profile to compare with it")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--top", type=positive_int, default=None,
                   help="functions to show (default 20 for text, all for json)")
    add_width(p)
    p.set_defaults(func=run)


def _pct(p: float | None) -> str:
    return "new" if p is None else f"{p:+.1f} %"


def _signed_time(s: float) -> str:
    return ("+" if s > 0 else "") + fmt_time(s) if s else "0"


def render(d: dict[str, Any], top: int, width: int | None = None) -> None:
    """The diff as tables on the terminal (also `mpilens advise --check`)."""
    console = layout.console(width)
    a, b = d["a"], d["b"]
    console.print(Text.assemble(("A ", "bold"), f"{a['profile']} ({a['nranks']} ranks)   ",
                                ("B ", "bold"), f"{b['profile']} ({b['nranks']} ranks)"))
    console.print(f"mean wall time per rank: {fmt_time(a['wall_s'])} -> {fmt_time(b['wall_s'])}"
                  f"  ({_signed_time(d['wall_change_s'])}, {_pct(d['wall_change_pct'])})")
    console.print(f"mean MPI time per rank:  {fmt_time(a['mpi_s'])} -> {fmt_time(b['mpi_s'])}"
                  f"  ({_signed_time(b['mpi_s'] - a['mpi_s'])})")
    w = console.width
    cells = []
    for r in d["functions"][:top]:
        exp = "" if r["explains_pct"] is None else f"{r['explains_pct']:.1f} %"
        dbytes = r["bytes_sent_change"] + r["bytes_recv_change"]
        cells.append([r["function"], fmt_time(r["time_a_s"]), fmt_time(r["time_b_s"]),
                      _signed_time(r["time_change_s"]), _pct(r["time_change_pct"]), exp,
                      f"{r['calls_a']:,}", f"{r['calls_b']:,}",
                      f"{r['calls_change']:+,} ({_pct(r['calls_change_pct'])})",
                      _signed_bytes(dbytes)])
    console.print(fit_table("Per function (times: mean per rank; calls, bytes: job totals), "
                            "largest time change first", FUNCTION_COLS, cells, w))
    if d["callsites"]:
        cells = [[r["function"], Text(r["location"]), fmt_time(r["time_a_s"]),
                  fmt_time(r["time_b_s"]), _signed_time(r["time_change_s"]),
                  _pct(r["time_change_pct"]), f"{r['calls_a']:,}", f"{r['calls_b']:,}",
                  _signed_bytes(r["bytes_b"] - r["bytes_a"])] for r in d["callsites"][:top]]
        console.print(fit_table("Per call site (function and source line), largest time "
                                "change first", CALLSITE_COLS, cells, w))


# Columns by priority (layout.fit_table): at 80 columns the call-site table keeps its
# call site, the times and the change.
FUNCTION_COLS = [Col("function", 0, "left"), Col("time A", 0), Col("time B", 0),
                 Col("change", 0), Col("", 2), Col("explains", 1), Col("calls A", 4),
                 Col("calls B", 4), Col("calls change", 3), Col("bytes change", 5)]
CALLSITE_COLS = [Col("function", 0, "left"), Col("call site", 0, "left", wrap=True),
                 Col("time A", 1), Col("time B", 0), Col("change", 0), Col("", 2),
                 Col("calls A", 4), Col("calls B", 4), Col("bytes change", 3)]


def _signed_bytes(n: int) -> str:
    return ("+" if n > 0 else "-" if n < 0 else "") + fmt_bytes(abs(n)) if n else "0"


def run(args: argparse.Namespace) -> int:
    a, b = load(args.a), load(args.b)
    fastread.say_fallback(bool(a.ranks) or bool(b.ranks))
    d = compare(a, b)
    if args.format == "json":
        if args.top:
            d["functions"] = d["functions"][: args.top]
            d["callsites"] = d["callsites"][: args.top]
        json.dump(limits.strict(d), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        render(d, args.top or 20, args.width)
    return 0
