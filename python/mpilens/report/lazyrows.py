"""A sequence of dict rows made only when read (the reader keeps columns, not rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload


class LazyRows(Sequence[dict[str, Any]]):
    """Rows {key: value} made when read.  A subclass gives `__len__`, `__iter__` and
    `_row(i)` (0 <= i < len); a slice reads the rows it selects through `_rows`, which
    a subclass whose rows are costly to reach one by one makes one pass."""

    def _row(self, i: int) -> dict[str, Any]:
        raise NotImplementedError

    def _rows(self, idx: range) -> list[dict[str, Any]]:
        return [self._row(j) for j in idx]

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        n = len(self)
        if isinstance(i, slice):
            return self._rows(range(n)[i])
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._row(i)
