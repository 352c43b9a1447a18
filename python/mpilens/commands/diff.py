"""`mpilens diff A B`: two runs side by side, sorted by what explains the wall-time change."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..report import limits
from ..report.comparison import compare
from ..report.profile import load
from ..units import fmt_time
from .report import positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="compare two profiles", description=__doc__)
    p.add_argument("a", help="the baseline profile")
    p.add_argument("b", help="the profile to compare with it")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--top", type=positive_int, default=None,
                   help="functions to show (default 20 for text, all for json)")
    p.set_defaults(func=run)


def _pct(p: float | None) -> str:
    return "new" if p is None else f"{p:+.1f} %"


def _signed_time(s: float) -> str:
    return ("+" if s > 0 else "") + fmt_time(s) if s else "0"


def render(d: dict[str, Any], top: int) -> None:
    """The diff as tables on the terminal (also `mpilens advise --check`)."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 150))
    a, b = d["a"], d["b"]
    console.print(Text.assemble(("A ", "bold"), f"{a['profile']} ({a['nranks']} ranks)   ",
                                ("B ", "bold"), f"{b['profile']} ({b['nranks']} ranks)"))
    console.print(f"mean wall time per rank: {fmt_time(a['wall_s'])} -> {fmt_time(b['wall_s'])}"
                  f"  ({_signed_time(d['wall_change_s'])}, {_pct(d['wall_change_pct'])})")
    console.print(f"mean MPI time per rank:  {fmt_time(a['mpi_s'])} -> {fmt_time(b['mpi_s'])}"
                  f"  ({_signed_time(b['mpi_s'] - a['mpi_s'])})")
    t = Table(title="Per function (times: mean per rank; calls, bytes: job totals), "
                    "largest time change first", title_justify="left")
    t.add_column("function", no_wrap=True)
    for col in ("time A", "time B", "change", "", "explains", "calls A", "calls B",
                "calls change", "bytes change"):
        t.add_column(col, justify="right", no_wrap=True)
    for r in d["functions"][:top]:
        exp = "" if r["explains_pct"] is None else f"{r['explains_pct']:.1f} %"
        dbytes = r["bytes_sent_change"] + r["bytes_recv_change"]
        t.add_row(r["function"], fmt_time(r["time_a_s"]), fmt_time(r["time_b_s"]),
                  _signed_time(r["time_change_s"]), _pct(r["time_change_pct"]), exp,
                  f"{r['calls_a']:,}", f"{r['calls_b']:,}",
                  f"{r['calls_change']:+,} ({_pct(r['calls_change_pct'])})",
                  f"{dbytes:+,}")
    console.print(t)
    if d["callsites"]:
        c = Table(title="Per call site (function and source line), largest time change first",
                  title_justify="left")
        c.add_column("function", no_wrap=True)
        c.add_column("call site")
        for col in ("time A", "time B", "change", "", "calls A", "calls B", "bytes change"):
            c.add_column(col, justify="right", no_wrap=True)
        for r in d["callsites"][:top]:
            c.add_row(r["function"], Text(r["location"]), fmt_time(r["time_a_s"]),
                      fmt_time(r["time_b_s"]), _signed_time(r["time_change_s"]),
                      _pct(r["time_change_pct"]), f"{r['calls_a']:,}", f"{r['calls_b']:,}",
                      f"{r['bytes_b'] - r['bytes_a']:+,}")
        console.print(c)


def run(args: argparse.Namespace) -> int:
    d = compare(load(args.a), load(args.b))
    if args.format == "json":
        if args.top:
            d["functions"] = d["functions"][: args.top]
            d["callsites"] = d["callsites"][: args.top]
        json.dump(limits.strict(d), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        render(d, args.top or 20)
    return 0
