#!/usr/bin/env python3
"""The same questions through DuckDB (mpilens.store) and through Dask and Spark reading
the store's dataset unchanged (docs/store.md, Beyond one machine).

    PYTHONPATH=python .venv/bin/python bench/store/engines.py STORE [--spark] [--dask]

Node-hours per application (jobs) and calls per function (the functions column
exploded) must be equal, up to the order of floating-point sums.  Dask and pyspark
are not dependencies of mpilens: install them to run their part (pyspark needs Java).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))


def close(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(abs(a[k] - b[k]) <= 1e-9 * max(abs(b[k]), 1e-300)
                                    for k in b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store")
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--dask", action="store_true")
    a = ap.parse_args()
    import mpilens.store

    s = mpilens.store.open(a.store)
    nh = {r["app"]: r["nh"] for r in s.rows("SELECT app, sum(node_hours) AS nh FROM jobs "
                                            "GROUP BY app")}
    calls = {r["function"]: r["c"] for r in s.rows("SELECT function, sum(calls) AS c "
                                                   "FROM functions GROUP BY function")}
    print(f"duckdb: {len(nh)} applications, {len(calls)} functions")
    ok = True
    if a.dask:
        import dask
        import dask.dataframe as dd

        jobs = dd.read_parquet(f"{a.store}/jobs", columns=["app", "node_hours", "functions"])
        got = jobs.groupby("app").node_hours.sum().compute().to_dict()
        fns = jobs.functions.compute().explode().dropna()
        gotc: dict[str, int] = {}
        for f in fns:
            gotc[f["function"]] = gotc.get(f["function"], 0) + int(f["calls"])
        same = close(got, nh) and gotc == calls
        ok &= same
        print(f"dask {dask.__version__}: {'same' if same else 'DIFFERENT'}")
    if a.spark:
        import pyspark
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[2]")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        jobs = spark.read.parquet(f"{a.store}/jobs")
        got = {r[0]: r[1] for r in jobs.groupBy("app").sum("node_hours").collect()}
        fns = jobs.selectExpr("app", "explode(functions) AS f").select("app", "f.*")
        gotc = {r[0]: r[1] for r in fns.groupBy("function").sum("calls").collect()}
        same = close(got, nh) and gotc == calls
        ok &= same
        print(f"spark {pyspark.__version__} (local mode): {'same' if same else 'DIFFERENT'}")
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
