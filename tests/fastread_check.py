"""Both readers of a profile give the same result: the fast path (report/fastread.py,
the C library) and the Python reader (the reference).  Used by tests/test_fastread.py
and by hand: `PYTHONPATH=python:tests .venv/bin/python tests/fastread_check.py FILE...`
(MPILENS_FASTREAD as for mpilens)."""

from __future__ import annotations

import os
import sys
from array import array
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
from mpilens.errors import UserError
from mpilens.report import fastread, profile


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where a and b differ: types, keys and order, every number bit for bit."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return [f"{where}: {x.dtype}{x.shape} != {y.dtype}{y.shape} or values"]
        return []
    if type(a) is not type(b):
        return [f"{where}: {type(a).__name__} != {type(b).__name__}"]
    if isinstance(a, dict):
        if list(a) != list(b):
            return [f"{where}: keys {list(a)[:4]} != {list(b)[:4]}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    if isinstance(a, array):
        return [] if (a.typecode, a.tobytes()) == (b.typecode, b.tobytes()) else [f"{where}"]
    if isinstance(a, float):
        return [] if a.hex() == b.hex() else [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def _load(path: Path, fast: str) -> tuple[Any, bool]:
    old = os.environ.get("MPILENS_FASTREAD")
    os.environ["MPILENS_FASTREAD"] = fast
    fastread._lib.cache_clear()
    try:
        try:
            prof = profile.load(path)
            got: Any = (prof.table, prof.folds, prof.header)
        except UserError as exc:
            got = str(exc)
        return got, fastread.last_used
    finally:
        if old is None:
            os.environ.pop("MPILENS_FASTREAD", None)
        else:
            os.environ["MPILENS_FASTREAD"] = old
        fastread._lib.cache_clear()


def compare(path: Path) -> tuple[list[str], bool]:
    """(differences between the two readers, the fast path read the file)."""
    fast, used = _load(path, os.environ.get("MPILENS_FASTREAD", ""))
    ref, _ = _load(path, "off")
    if isinstance(fast, str) or isinstance(ref, str):
        return ([] if fast == ref else [f"{fast!r} != {ref!r}"]), used
    out = []
    for f in fields(fast[0]):
        out += differences(getattr(fast[0], f.name), getattr(ref[0], f.name), f"table.{f.name}")
    out += differences(fast[1], ref[1], "folds")
    return out, used


if __name__ == "__main__":
    bad = 0
    for arg in sys.argv[1:]:
        diffs, used = compare(Path(arg))
        print(f"{arg}: {'fast path' if used else 'Python reader'}, "
              f"{'identical' if not diffs else 'DIFFERENT: ' + '; '.join(diffs[:5])}")
        bad += bool(diffs)
    sys.exit(1 if bad else 0)
