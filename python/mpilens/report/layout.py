"""Tables that fit the terminal: columns are left out by priority, never cut.

rich shrinks a table wider than the console by cutting its cells (`4…`,
`MPI_Wait…`); a number cut that way is wrong, not short.  `fit_table` measures
each column (its header and its cells), then leaves out the least important
columns until the table fits the width, and says in the table's caption which
columns it left out and the width that shows them all.  Columns marked `wrap`
(file:line call sites, communicator descriptions) may wrap or fold across lines
and count with a small minimum width; the others are never narrower than their
widest cell.

The console's width (`console`): `--width` when given, else `COLUMNS`, else the
terminal's; piped or redirected without either, PIPED_WIDTH (wide enough for
every table, as a file has no width).  Never below MIN_WIDTH: `--width` smaller is
refused, a smaller COLUMNS or terminal gets MIN_WIDTH.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

PIPED_WIDTH = 150
MIN_WIDTH = 40  # the narrowest report: a table's borders and one readable column
OPTIONAL = 3  # columns of this priority and above are left out before text wraps
WRAP_MIN = 16  # narrowest a wrapping text column is made (its words fold beyond that)


@dataclass(frozen=True)
class Col:
    name: str
    priority: int = 0         # 0: essential, never left out; higher: left out first
    justify: str = "right"
    wrap: bool = False        # text that may wrap/fold (call sites); numbers never do


class _Console(Console):
    """rich's Console, but a closed pipe (`mpilens report | head`) raises BrokenPipeError
    as print() does, so that every format ends the same way (cli.main: status 141)
    instead of rich's own exit(1)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def console(width: int | None = None) -> Console:
    """The console reports are printed to (module docstring: which width)."""
    if width:
        return _Console(width=width)
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return _Console(width=max(int(env), MIN_WIDTH))
    c = _Console()
    if not c.is_terminal:
        return _Console(width=PIPED_WIDTH)
    return c if c.width >= MIN_WIDTH else _Console(width=MIN_WIDTH)


def _cell_len(cell: Any) -> int:
    text = cell if isinstance(cell, Text) else Text(str(cell))
    return max((len(line) for line in text.plain.split("\n")), default=0)


def table_width(widths: Sequence[int]) -> int:
    """Width of a rich Table with the default box, edges and padding (0, 1): a border
    before each column and after the last, one space each side of a cell."""
    return sum(w + 3 for w in widths) + 1 if widths else 0


def fit_table(title: str, cols: list[Col], rows: list[list[Any]],
              width: int | None) -> Table:
    """A rich Table of rows (one cell per column) that fits width (None: all columns).
    Columns empty in every row are left out at any width."""
    keep = [i for i, c in enumerate(cols)
            if c.priority == 0 or any(_cell_len(r[i]) for r in rows)]
    need = {i: max([len(cols[i].name), *(_cell_len(r[i]) for r in rows)]) for i in keep}
    least = {i: min(need[i], WRAP_MIN) if cols[i].wrap else need[i] for i in keep}
    dropped: list[str] = []
    full = table_width([need[i] for i in keep])
    if width is not None:
        # the least important first; among equals, the rightmost first
        # Optional columns (priority >= OPTIONAL) go before a text column wraps, the
        # others only when the table does not fit even with its text columns wrapped.
        order = sorted((i for i in keep if cols[i].priority > 0),
                       key=lambda i: (-cols[i].priority, -i))
        for least_ok in (False, True):
            while order and (least_ok or cols[order[0]].priority >= OPTIONAL) and \
                    table_width([(least if least_ok else need)[i] for i in keep]) > width:
                i = order.pop(0)
                keep.remove(i)
                dropped.append(cols[i].name or "flag")
    t = Table(title=title, title_justify="left", caption_justify="left")
    for i in keep:
        c = cols[i]
        t.add_column(c.name, justify=c.justify,  # type: ignore[arg-type]
                     no_wrap=not c.wrap, overflow="fold" if c.wrap else "ellipsis",
                     min_width=least[i])
    for r in rows:
        t.add_row(*(r[i] if isinstance(r[i], Text) else Text(str(r[i])) for i in keep))
    if dropped:
        t.caption = (f"left out at {width} columns: {', '.join(dropped)} "
                     f"(--width={full} or COLUMNS={full} shows them)")
    return t
