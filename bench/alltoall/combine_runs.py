"""Combine runs of mpilens-bench-alltoall written to files into `mpilens bench alltoall`'s table.

    python bench/alltoall/combine_runs.py RUN.json [RUN.json ...] [--json OUT]

Each RUN.json is the standard output of one `mpilens-bench-alltoall` job (one rank count),
for example jobs started by hand on a slow cluster, several at once:

    $(vcluster launch openmpi 4 --id 6) build/openmpi/bin/mpilens-bench-alltoall \\
        --sizes 64,1024 --calls 120 --learn 10 --chunks 12 --skip nomodel > run1.json

A RUN.json may also be a `mpilens bench alltoall --json` document (one rank count):
each of its runs counts as one job, so separate invocations of the CLI combine too:

    python bench/alltoall/combine_runs.py cli1.json cli2.json --json both.json

A job stopped early leaves its finished sizes (the program flushes each size): they are
read, and only the sizes every file holds are combined.  Prints the table of `mpilens
bench alltoall` (medians over the runs, the ratios after learning with their 95 %
intervals over the chunks) and the summary; --json writes the combined document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from mpilens.bench.alltoall import combine, summary, table, targets


def read_run(path: Path) -> dict[str, Any]:
    """One job's JSON, completed if the job stopped between two sizes."""
    text = path.read_text()
    start = text.find("{")
    if start < 0:
        raise SystemExit(f"combine_runs: {path}: no result")
    body = text[start:].strip()
    for tail in ("", "]}", "}]}"):
        try:
            run: dict[str, Any] = json.loads(body + tail)
            break
        except json.JSONDecodeError:
            continue
    else:  # cut inside a size: drop it
        cut = body.rfind(',{"bytes"')
        if cut < 0:
            raise SystemExit(f"combine_runs: {path}: no complete size")
        run = json.loads(body[:cut] + "]}")
    for r in run["results"]:
        r["targets"] = targets(r)
    return run


def read_doc(path: Path) -> list[dict[str, Any]]:
    """The jobs of one file: a job's output, or every run of a CLI document."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        doc = None
    if not (isinstance(doc, dict) and doc.get("family") == "alltoall" and "runs" in doc):
        return [read_run(path)]
    if len(doc["runs"]) != 1:
        raise SystemExit(f"combine_runs: {path}: one rank count expected, "
                         f"found {len(doc['runs'])}")
    [cli] = doc["runs"]
    jobs = []
    for j in range(len(cli["results"][0]["runs"])):
        run = {"nranks": cli["nranks"], "results": [r["runs"][j] for r in cli["results"]]}
        for r in run["results"]:
            r["targets"] = targets(r)
        jobs.append(run)
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    runs = [job for p in args.runs for job in read_doc(p)]
    common = set.intersection(*({r["bytes"] for r in run["results"]} for run in runs))
    for run in runs:
        run["results"] = [r for r in run["results"] if r["bytes"] in common]
    combined = combine(runs)
    print(table(combined))
    doc = {"family": "alltoall", "runs": [combined], "summary": summary([combined]),
           "files": [str(p) for p in args.runs]}
    print(json.dumps({"summary": doc["summary"]}))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
