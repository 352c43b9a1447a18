"""JSON output of the reports, written in pieces: the bytes of
`json.dump(limits.strict(data), out, indent=1, allow_nan=False)`, without a Python
object per element of the per-rank parts.

At 100,000 ranks a report's JSON holds, per call site, one {"rank", "calls",
"time_s"} per rank (callsites.PerRank), one node row per rank and the time line's
ranks x bins fractions: millions of values that the standard encoder walks one by
one in Python (with a dict made for each per-rank entry).  Here those parts
(`Records`, lists of numbers, lists of such lists) are formatted column by column
with one template per entry, written in chunks; the rest goes through `json.dumps`
as before.  tests/test_report_json.py checks the bytes against json.dump.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from typing import IO, Any, overload

import numpy as np

from .lazyrows import LazyRows

CHUNK = 8192  # entries formatted and written at a time
BULK = 32  # lists of at least this many numbers are formatted here
_SPACES = re.compile(" *")


class Records(LazyRows):
    """Rows {key: column[i], ...} kept as columns (sequences or numpy arrays of numbers,
    or None; a numpy value is read as the Python number it holds): a row
    is made only when read; equal to the list of the same dicts, written as that list
    in JSON (by `dump` without making the rows)."""

    def __init__(self, keys: Sequence[str], columns: Sequence[Sequence[Any]]) -> None:
        self.keys, self.columns = tuple(keys), tuple(columns)

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def _row(self, i: int) -> dict[str, Any]:
        return {k: _plain(c[i]) for k, c in zip(self.keys, self.columns)}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        keys = self.keys
        for row in zip(*(c.tolist() if isinstance(c, np.ndarray) else c for c in self.columns)):
            yield dict(zip(keys, row))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"


class Rows(Sequence[list[Any]]):
    """The rows of a 2-D numpy array as lists, each made only when read (the time line's
    ranks x bins fractions: no Python float kept per cell); written as the list of them."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __len__(self) -> int:
        return len(self.a)

    @overload
    def __getitem__(self, i: int) -> list[Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[list[Any]]: ...

    def __getitem__(self, i: int | slice) -> list[Any] | list[list[Any]]:
        return self.a[i].tolist()  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rows({self.a.shape})"


def _plain(x: Any) -> Any:
    """A numpy scalar as the Python number it holds."""
    return x.item() if isinstance(x, np.generic) else x


def _num(x: Any) -> str:
    """A number as json writes it after limits.strict (non-finite floats: null)."""
    if x is None:
        return "null"
    if x is True or x is False:
        return "true" if x else "false"
    if isinstance(x, float):
        return float.__repr__(x) if math.isfinite(x) else "null"
    return int.__repr__(x)


def _texts(col: Sequence[Any]) -> list[str]:
    """Each value of a column of numbers (or None) as json writes it."""
    vals = col.tolist() if hasattr(col, "tolist") else list(col)
    kinds = set(map(type, vals))
    if kinds <= {int}:
        return list(map(int.__repr__, vals))
    if kinds <= {float}:
        out = list(map(float.__repr__, vals))
        if not math.isfinite(sum(vals)):  # a NaN or an infinity among them (or a sum beyond)
            out = ["null" if not math.isfinite(v) else s for v, s in zip(vals, out)]
        return out
    return list(map(_num, vals))


def _plain_numbers(o: Sequence[Any]) -> bool:
    return all(type(x) in (int, float) or x is None for x in o)


def _bulk_kind(o: Any) -> str | None:
    """How `dump` formats o itself: records, numbers, rows (lists of numbers), or None."""
    if isinstance(o, Records):
        return "records"
    if isinstance(o, Rows):
        return "rows" if o.a.ndim == 2 and o.a.dtype.kind in "fiu" else None
    if not isinstance(o, list) or len(o) < BULK:
        return None
    if _plain_numbers(o):
        return "numbers"
    if all(type(r) is list and _plain_numbers(r) for r in o):
        return "rows"
    return None


def _pieces(o: Any, kind: str, ind: int) -> Iterator[str]:
    """The JSON text of o (a value whose line is indented by ind spaces), in chunks."""
    if not len(o):
        yield "[]"
        return
    i0, i1, i2 = " " * ind, " " * (ind + 1), " " * (ind + 2)
    yield "[\n"
    if kind == "records":
        head = f"{i1}{{\n" + ",\n".join(f"{i2}{json.dumps(k)}: %s" for k in o.keys) + f"\n{i1}}}"
        for s in range(0, len(o), CHUNK):
            cols = [_texts(c[s:s + CHUNK]) for c in o.columns]
            yield (",\n" if s else "") + ",\n".join(head % t for t in zip(*cols))
    elif kind == "numbers":
        for s in range(0, len(o), CHUNK):
            yield (",\n" if s else "") + i1 + f",\n{i1}".join(_texts(o[s:s + CHUNK]))
    else:  # rows: formatted a chunk of rows at a time
        step = max(1, CHUNK // max(1, len(o[0])))
        for s in range(0, len(o), step):
            rows = o[s:s + step]
            texts = iter(_texts([x for r in rows for x in r]))
            yield (",\n" if s else "") + ",\n".join(
                f"{i1}[\n{i2}" + f",\n{i2}".join(next(texts) for _ in r) + f"\n{i1}]" if r
                else f"{i1}[]" for r in rows)
    yield f"\n{i0}]"


def dump(data: Any, out: IO[str]) -> None:
    """Write data as json.dump(limits.strict(data), out, indent=1, allow_nan=False) does."""
    tag = f"mpilens-bulk-{os.urandom(8).hex()}-"
    bulk: list[tuple[Any, str]] = []

    def walk(o: Any) -> Any:  # limits.strict, with the bulk parts replaced by a tag
        if isinstance(o, float):
            return o if math.isfinite(o) else None
        if isinstance(o, dict):
            return {k: walk(v) for k, v in o.items()}
        kind = _bulk_kind(o)
        if kind is not None:
            bulk.append((o, kind))
            return f"{tag}{len(bulk) - 1}"
        if isinstance(o, (list, tuple)) or (isinstance(o, Sequence)
                                            and not isinstance(o, (str, bytes))):
            return [walk(v) for v in o]
        return o

    text = json.dumps(walk(data), indent=1, allow_nan=False)
    at = 0
    for m in re.finditer(f'"{re.escape(tag)}(\\d+)"', text):
        out.write(text[at:m.start()])
        line = text.rfind("\n", 0, m.start()) + 1
        ind = _SPACES.match(text, line).end() - line  # type: ignore[union-attr]
        o, kind = bulk[int(m.group(1))]
        for piece in _pieces(o, kind, ind):  # the indent of the value's line
            out.write(piece)
        at = m.end()
    out.write(text[at:])
