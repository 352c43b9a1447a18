#!/usr/bin/env python3
"""Both profile readers on fuzzed profiles: the fast path (report/fastread.py) and the
Python reader must give the same columns and views, or the same one-line refusal
(docs/scale.md, The fast path).  Run by hand (tests/test_fastread.py runs a sample):

    PYTHONPATH=python:tests .venv/bin/python bench/reader/fuzz_compare.py REAL.prof \
        [--random 1500] [--seed 5]

The profile is made canonical and mutated as tests/test_profile_fuzz.py does (its 410
fixed mutations, then --random random ones); prints one JSON line of counts and exits
1 if any profile reads differently.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from fastread_check import compare
from test_profile_fuzz import _canonical, deletions, mutations, random_mutation


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real")
    ap.add_argument("--random", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--tmp", default="/tmp/mpilens-fuzz-compare.prof")
    a = ap.parse_args()
    lines = Path(a.real).read_text().splitlines()
    text = "".join(json.dumps(_canonical(json.loads(ln)), separators=(",", ":")) + "\n"
                   for ln in lines)
    rng = random.Random(a.seed)
    cases = list(mutations(text)) + list(deletions(text))
    cases += [("random", random_mutation(rng, text.encode())) for _ in range(a.random)]
    path = Path(a.tmp)
    n = {"profiles": len(cases), "fast_path": 0, "python": 0, "different": 0}
    t0 = time.monotonic()
    for label, data in cases:
        path.write_bytes(data)
        diffs, used = compare(path)
        n["fast_path" if used else "python"] += 1
        if diffs:
            n["different"] += 1
            print(label, diffs[:3], file=sys.stderr)
    path.unlink(missing_ok=True)
    print(json.dumps({**n, "seconds": round(time.monotonic() - t0, 1)}))
    return 1 if n["different"] else 0


if __name__ == "__main__":
    sys.exit(main())
