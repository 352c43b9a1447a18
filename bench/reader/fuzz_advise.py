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

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from fastread_check import differences
from mpilens.advise import ranks
from mpilens.errors import UserError
from mpilens.report import fastread
from test_profile_fuzz import _canonical, deletions, mutations, random_mutation


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real")
    ap.add_argument("--random", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--tmp", default="/tmp/mpilens-fuzz-advise.prof")
    a = ap.parse_args()
    lines = Path(a.real).read_text().splitlines()
    text = "".join(json.dumps(_canonical(json.loads(ln)), separators=(",", ":")) + "\n"
                   for ln in lines)
    rng = random.Random(a.seed)
    cases = [("as is", text.encode()), *mutations(text), *deletions(text)]
    cases += [("random", random_mutation(rng, text.encode())) for _ in range(a.random)]
    path = Path(a.tmp)
    n = {"profiles": len(cases), "fast_path": 0, "python": 0, "different": 0}
    t0 = time.monotonic()
    for label, data in cases:
        path.write_bytes(data)
        fast, used = _fold(path, True)
        ref, _ = _fold(path, False)
        n["fast_path" if used else "python"] += 1
        diffs = differences(fast, ref)
        if diffs:
            n["different"] += 1
            print(label, diffs[:3], file=sys.stderr)
    path.unlink(missing_ok=True)
    print(json.dumps({**n, "seconds": round(time.monotonic() - t0, 1)}))
    return 1 if n["different"] else 0


if __name__ == "__main__":
    sys.exit(main())
