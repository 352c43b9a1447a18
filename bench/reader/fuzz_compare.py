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
from collections.abc import Callable
from pathlib import Path

from fastread_check import compare
from test_profile_fuzz import _canonical, deletions, mutations, random_mutation


def arguments(doc: str, random_default: int, tmp: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("real")
    ap.add_argument("--random", type=int, default=random_default)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--tmp", default=tmp)
    return ap.parse_args()


def fuzz_cases(a: argparse.Namespace) -> list[tuple[str, bytes]]:
    """(label, profile bytes): a.real made canonical, then mutated as
    tests/test_profile_fuzz.py does (its fixed mutations and deletions, a.random random)."""
    lines = Path(a.real).read_text().splitlines()
    text = "".join(json.dumps(_canonical(json.loads(ln)), separators=(",", ":")) + "\n"
                   for ln in lines)
    rng = random.Random(a.seed)
    cases = list(mutations(text)) + list(deletions(text))
    return cases + [("random", random_mutation(rng, text.encode())) for _ in range(a.random)]


def run(a: argparse.Namespace, compare_one: Callable[[Path], tuple[list[str], bool]]) -> int:
    """compare_one (differences, fast path taken) on each fuzzed profile written to a.tmp:
    one JSON line of counts; 1 if any differs."""
    cases = fuzz_cases(a)
    path = Path(a.tmp)
    n = {"profiles": len(cases), "fast_path": 0, "python": 0, "different": 0}
    t0 = time.monotonic()
    for label, data in cases:
        path.write_bytes(data)
        diffs, used = compare_one(path)
        n["fast_path" if used else "python"] += 1
        if diffs:
            n["different"] += 1
            print(label, diffs[:3], file=sys.stderr)
    path.unlink(missing_ok=True)
    print(json.dumps({**n, "seconds": round(time.monotonic() - t0, 1)}))
    return 1 if n["different"] else 0


def main() -> int:
    return run(arguments(__doc__, 1500, "/tmp/mpilens-fuzz-compare.prof"), compare)


if __name__ == "__main__":
    sys.exit(main())
