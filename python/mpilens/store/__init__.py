"""The workload store: every job's profile as one compact record in a Parquet dataset,
queried with DuckDB (docs/store.md).

    import mpilens.store
    s = mpilens.store.open("/shared/mpilens-store")
    s.jobs.groupby("app").node_hours.sum()
    s.sql("SELECT app, count(*) FROM jobs GROUP BY app")

record.py builds a job's record from its profile (no extra library); dataset.py
spools records and ingests them into the dataset; queries.py answers the questions
of `mpilens store` (apps, gains, endings, history).  DuckDB and pyarrow are the
optional extra `store` of a checkout's venv (.ci/setup --test installs it; elsewhere
`python -m pip install duckdb pyarrow`); pandas for the DataFrames.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    import pandas as pd

# not 'mpilens[store]': mpilens is not on PyPI, pip would fetch another package
INSTALL = f"{sys.executable} -m pip install duckdb pyarrow"


def need_libraries() -> None:
    """UserError in one line when DuckDB or pyarrow is missing."""
    missing = []
    for name in ("duckdb", "pyarrow"):
        try:
            __import__(name)
        except ModuleNotFoundError:
            missing.append(name)
    if missing:
        raise UserError(f"the store needs {' and '.join(missing)}: {INSTALL}")


# The views every query sees (docs/store.md, Schema)
VIEWS = {
    "jobs": "SELECT * EXCLUDE (functions, findings) FROM _raw",
    "functions": ("SELECT job_key, app, \"end\", nranks, node_hours, "
                  "UNNEST(functions, recursive := true) FROM _raw"),
    "findings": ("SELECT job_key, app, \"end\", node_hours, wall_mean_s, "
                 "UNNEST(findings, recursive := true) FROM _raw"),
}


class Store:
    """A store opened for questions: DuckDB views jobs, functions, findings over its
    dataset; the tables as pandas DataFrames."""

    def __init__(self, path: str | Path) -> None:
        need_libraries()
        import duckdb

        from . import dataset

        self.path = Path(path)
        dataset.check_store(self.path)
        self.con = duckdb.connect()
        files = dataset.parquet_files(self.path)
        if files:
            glob = str(dataset.jobs_dir(self.path) / "year=*" / "month=*" / "*.parquet")
            self.con.execute(f"CREATE VIEW _raw AS SELECT * FROM read_parquet("
                             f"'{_quote(glob)}', hive_partitioning = true)")
        else:  # no job yet: the same columns, no rows
            import pyarrow as pa
            empty = pa.Table.from_pylist([], schema=dataset.schema())
            self.con.register("_empty", empty)
            self.con.execute("CREATE VIEW _raw AS SELECT *, 0::BIGINT AS year, "
                             "0::BIGINT AS month FROM _empty")
        for name, sql in VIEWS.items():
            self.con.execute(f"CREATE VIEW {name} AS {sql}")

    def __repr__(self) -> str:
        return f"<mpilens.store.Store {self.path}>"

    def sql(self, query: str, params: list[Any] | None = None) -> pd.DataFrame:
        """A DuckDB query over the views, as a DataFrame."""
        return self.con.execute(query, params or []).df()

    def rows(self, query: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """A query's rows as dicts (no pandas needed)."""
        cur = self.con.execute(query, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    @property
    def jobs(self) -> pd.DataFrame:
        return self.sql("SELECT * FROM jobs ORDER BY start")

    @property
    def functions(self) -> pd.DataFrame:
        return self.sql("SELECT * FROM functions ORDER BY \"end\", job_key, function")

    @property
    def findings(self) -> pd.DataFrame:
        return self.sql("SELECT * FROM findings ORDER BY \"end\", job_key, rule")

    def thicket(self, app: str) -> Any:
        """The runs of one application as one thicket.Thicket (llnl-thicket): each
        job's full profile, where the store's record points, keyed by its path (the
        call sites of mpilens.llnl.thicket).  Jobs whose profile is gone or cannot be
        read are left out; ValueError when none is left."""
        from .. import api, llnl
        from ..errors import UserError as _UserError

        paths = [r["profile"] for r in self.rows(
            "SELECT DISTINCT profile FROM jobs WHERE app = ? AND profile IS NOT NULL "
            "ORDER BY profile", [app])]
        profiles = []
        for p in paths:
            try:
                profiles.append(api.load(p))
            except (OSError, _UserError):
                continue
        if not profiles:
            raise ValueError(f"no readable profile of '{app}' in {self.path} "
                             f"({len(paths)} recorded)")
        return llnl.thicket(profiles)


def _quote(s: str) -> str:
    return s.replace("'", "''")


def open(path: str | Path) -> Store:  # noqa: A001 - mpilens.store.open(path), as documented
    """The store at path, for questions."""
    return Store(path)
