#!/usr/bin/env python3
"""advise's view (advise/ranks.py) on fuzzed profiles: folded by the C library in the
fast path's pass (runtime/reader/fastread.c, advise's view) and by ranks._Fold from the
Python reader's lines, it must hold the same arrays bit for bit, or both loads must
refuse the file with the same one line (docs/scale.md).  Run by hand:

    PYTHONPATH=python:tests .venv/bin/python bench/reader/fuzz_advise.py ADVISE.prof \
        [--random 1000] [--seed 5]

ADVISE.prof: a profile with the fields advise folds (cpus_online, affinity,
late_arrival, peers.recv, collective call sites), e.g. tests/test_advise.py's
advise_app "imbalance" run.  The mutations are tests/test_profile_fuzz.py's (its fixed
ones, then --random random ones); prints one JSON line of counts, exits 1 if any
profile folds differently.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from fastread_check import differences
from fuzz_compare import arguments, run
from mpilens.advise import ranks
from mpilens.errors import UserError
from mpilens.report import fastread


def _fold(path: Path, fast: bool) -> tuple[Any, bool]:
    if fast:
        os.environ.pop("MPILENS_FASTREAD", None)
    else:
        os.environ["MPILENS_FASTREAD"] = "off"
    fastread._lib.cache_clear()
    try:
        prof = ranks.load(path)
        got: Any = vars(prof.ranks.folded) if isinstance(prof.ranks, ranks.AdviseRanks) \
            else len(prof.ranks)
    except UserError as exc:
        got = str(exc)
    return got, fastread.last_used


def _both(path: Path) -> tuple[list[str], bool]:
    fast, used = _fold(path, True)
    ref, _ = _fold(path, False)
    return differences(fast, ref), used


def main() -> int:
    return run(arguments(__doc__, 1000, "/tmp/mpilens-fuzz-advise.prof"), _both)


if __name__ == "__main__":
    sys.exit(main())
