"""The workload store (docs/store.md): records of real profiles with the exact totals of
the profiles they came from, idempotent and crash-safe ingest, concurrent adds with
nothing lost, damaged profiles rejected while the others go in, and the questions
(apps, gains, endings, history, query) on real jobs of the bundled examples."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, read_profile
from test_cli_support import mpilens_inproc, real_profile

pytest.importorskip("duckdb", reason="duckdb is in the test extra (.ci/setup --test)")
pytest.importorskip("pyarrow", reason="pyarrow is in the test extra (.ci/setup --test)")

import mpilens.store  # noqa: E402
from mpilens.report.partial import load_any  # noqa: E402
from mpilens.store import dataset, queries, record  # noqa: E402


def store_cli(*args: str | Path) -> tuple[int, str, str]:
    proc = mpilens_inproc("store", *args)
    return proc.returncode, proc.stdout, proc.stderr


def _add_ingest(store: Path, *profiles: Path) -> None:
    rc, out, err = store_cli("add", store, *profiles)
    assert rc == 0, err
    rc, out, err = store_cli("ingest", store)
    assert rc == 0, err


def assert_exact_totals(s: mpilens.store.Store, job: dict, prof_path: Path) -> None:
    """A job's row of the store and its function rows: exactly the totals, histograms and
    per-rank quantiles of the profile it came from."""
    header, lines = read_profile(prof_path)
    assert job["profile"] == str(prof_path.resolve())
    assert job["wall_s"] == header["wall_s"]["max"]
    assert job["mpi_mean_s"] == header["mpi_s"]["mean"]
    assert job["nnodes"] == 1 and job["node_hours"] == header["wall_s"]["max"] / 3600
    wall = np.array([ln["wall_s"] for ln in lines])
    mpi = np.array([ln["mpi_s"] for ln in lines])
    assert job["wall_q_s"] == np.quantile(wall, record.QUANTILES).tolist()
    assert job["mpi_q_s"] == np.quantile(mpi, record.QUANTILES).tolist()
    fns = {f["function"]: f for f in s.rows(
        "SELECT * FROM functions WHERE job_key = ?", [job["job_key"]])}
    assert set(fns) == set(header["functions"])
    for name, f in header["functions"].items():
        got = fns[name]
        assert (got["calls"], got["bytes_sent"], got["bytes_recv"], got["time_s"]) == \
            (f["calls"], f.get("bytes_sent", 0), f.get("bytes_recv", 0), f["time_s"]), name
        assert got["hist_send"] == f.get("hist_send", []), name
        assert got["hist_recv"] == f.get("hist_recv", []), name
        per_rank = [ln["functions"].get(name, {}).get("time_s", 0.0) for ln in lines]
        assert got["rank_time_q_s"] == np.quantile(per_rank, record.QUANTILES).tolist()


def test_records_hold_the_profiles_exact_totals(tmp_path: Path) -> None:
    profs = [real_profile(4), real_profile(2)]
    st = tmp_path / "st"
    _add_ingest(st, *profs)
    s = mpilens.store.open(st)
    jobs = s.rows("SELECT * FROM jobs ORDER BY nranks")
    assert [j["nranks"] for j in jobs] == [2, 4]
    for prof_path, job in zip(sorted(profs, key=lambda p: read_profile(p)[0]["nranks"]), jobs,
                              strict=True):
        header, lines = read_profile(prof_path)
        assert job["job_id"] == header["job_id"] and job["app"] == "heat2d"
        assert job["command"] == header["command"] and job["ending"] == "completed"
        assert_exact_totals(s, job, prof_path)
    # the same sums through the free SQL and its JSON
    rc, out, _ = store_cli("query", st, "SELECT sum(calls) AS c FROM functions "
                           "WHERE function = 'MPI_Allreduce'", "--format", "json")
    want = sum(read_profile(p)[0]["functions"]["MPI_Allreduce"]["calls"] for p in profs)
    assert rc == 0 and json.loads(out) == [{"c": want}]
    # small: the whole dataset of two jobs is a few KB
    size = sum(p.stat().st_size for p in dataset.parquet_files(st))
    assert size <= 2 * 20_000


def test_adding_twice_is_one_job(tmp_path: Path) -> None:
    st = tmp_path / "st"
    p = real_profile(4)
    _add_ingest(st, p, p)
    rc, out, _ = store_cli("ingest", st)
    assert rc == 0 and out.startswith("ingested 0 job(s)")
    rc, out, err = store_cli("add", st, p)
    assert rc == 0, err
    rc, out, _ = store_cli("ingest", st)
    assert rc == 0 and "ingested 0 job(s) in 0 file(s); 1 already in the store" in out
    assert mpilens.store.open(st).rows("SELECT count(*) AS n FROM jobs") == [{"n": 1}]
    assert not list(dataset.spool_dir(st).iterdir())


def _adder(args: tuple[str, dict, int, int]) -> None:
    st, rec, first, count = args
    for i in range(first, first + count):
        r = dict(rec, job_key=f"job-{i:05d}", job_id=str(i))
        dataset.spool_record(Path(st), r)


def test_concurrent_adds_lose_nothing(tmp_path: Path) -> None:
    """8 processes add 400 records while ingests run: every record in the store once."""
    st = tmp_path / "st"
    rec = record.build(load_any([str(real_profile(4))]), str(real_profile(4)))
    dataset.spool_dir(st).mkdir(parents=True)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(8) as pool:
        pending = pool.map_async(_adder, [(str(st), rec, k * 50, 50) for k in range(8)])
        ingests = 0
        while not pending.ready() or ingests == 0:
            dataset.ingest(st)
            ingests += 1
        pending.get()
    res = dataset.ingest(st)
    assert res["rejected"] == []
    keys = mpilens.store.open(st).rows("SELECT job_key FROM jobs ORDER BY job_key")
    assert [k["job_key"] for k in keys] == [f"job-{i:05d}" for i in range(400)]
    assert not list(dataset.spool_dir(st).iterdir())


def test_damaged_profile_rejected_others_go_in(tmp_path: Path) -> None:
    good4, good2 = real_profile(4), real_profile(2)
    data = good4.read_bytes()
    cut = tmp_path / "cut.prof"
    cut.write_bytes(data[:len(data) // 2])   # truncated in the middle of its rank lines
    junk = tmp_path / "junk.prof"
    junk.write_text("hello\n")
    st = tmp_path / "st"
    rc, out, err = store_cli("add", st, good4, cut, junk, good2)
    assert rc == 1
    assert out.splitlines() == [f"added: {good4} (heat2d, 4 ranks, completed)",
                                f"added: {good2} (heat2d, 2 ranks, completed)"]
    rejected = err.splitlines()
    assert [ln.split(":")[1].strip() for ln in rejected] == [str(cut), str(junk)]
    assert all(ln.startswith("rejected: ") for ln in rejected)
    assert "not an mpilens profile" in rejected[1]
    # a damaged record in the spool is left there and named; the others go in
    (dataset.spool_dir(st) / "broken.json").write_text('{"format": "mpilens-store-rec')
    rc, out, err = store_cli("ingest", st)
    assert rc == 1 and out.startswith("ingested 2 job(s) in 1 file(s)")
    assert err.startswith("rejected: ") and "broken.json" in err and len(err.splitlines()) == 1
    assert [p.name for p in dataset.spool_dir(st).iterdir()] == ["broken.json"]


def test_crash_after_parquet_before_spool_cleanup(tmp_path: Path) -> None:
    """The spool's records left behind by an ingest that died after writing its Parquet
    file (and a temporary file of one that died while writing, of an add that died
    before its rename): no duplicate, no loss, and the next ingest removes the dead
    ones' temporary files, only those (named as mpilens names them; an add's an hour
    old: not one in progress)."""
    st = tmp_path / "st"
    rc, _, err = store_cli("add", st, real_profile(4), real_profile(2))
    assert rc == 0, err
    saved = tmp_path / "saved"
    shutil.copytree(dataset.spool_dir(st), saved)
    assert dataset.ingest(st)["added"] == 2
    month = dataset.parquet_files(st)[0].parent
    dead = month / f".tmp-node1-77-{'c' * 32}"
    dead.write_bytes(b"PAR1 half a file")  # died mid-write
    other = month / ".tmp-host-1-dead"  # not a name mpilens gives
    other.write_bytes(b"PAR1 someone's")
    spool = dataset.spool_dir(st)
    dead_add, live_add = spool / f".tmp-node1-78-{'d' * 32}", spool / f".tmp-node1-79-{'e' * 32}"
    for p in (dead_add, live_add):
        p.write_bytes(b'{"format": "mpilens-store-rec')
    hours_ago = time.time() - 7200
    os.utime(dead_add, (hours_ago, hours_ago))
    for p in saved.iterdir():  # as if the spool had not been cleaned
        shutil.copy(p, spool / p.name)
    res = dataset.ingest(st)
    assert (res["added"], res["duplicates"], res["rejected"]) == (0, 2, [])
    s = mpilens.store.open(st)
    assert s.rows("SELECT count(*) AS n, count(DISTINCT job_key) AS k FROM jobs") == \
        [{"n": 2, "k": 2}]
    assert list(spool.iterdir()) == [live_add]
    assert not dead.exists() and other.read_bytes() == b"PAR1 someone's"
    assert len(s.jobs) == 2 and set(s.functions.app) == {"heat2d"}


def test_partial_profile_of_a_hang(build: Path, tmp_path: Path) -> None:
    from test_flight import _hang_job

    d = _hang_job(build, tmp_path, "deadlock", [0, 1, 2, 3])
    st = tmp_path / "st"
    rc, out, err = store_cli("add", st, d, "--ingest")
    assert rc == 0, err
    assert out.splitlines()[0] == f"added: {d} (flight, 4 ranks, hang)"
    job = mpilens.store.open(st).rows("SELECT * FROM jobs")[0]
    assert (job["ending"], job["verdict"]) == ("hang", "deadlock")
    assert job["verdict_text"].startswith("deadlock: 1 -> 2 -> 1")
    assert job["advise_note"].startswith("partial profile")
    _add_ingest(st, real_profile(4))
    rc, out, _ = store_cli("endings", st)
    lines = out.splitlines()
    assert rc == 0 and all(len(ln) <= 80 for ln in lines)
    assert lines[1].split()[:3] == ["completed", "1", "50.0"] or \
        lines[1].split()[:3] == ["hang", "1", "50.0"]
    assert "deadlock 1" in out
    rc, out, _ = store_cli("endings", st, "--format", "json")
    rows = json.loads(out)
    assert {r["ending"]: (r["jobs"], r["verdicts"]) for r in rows} == \
        {"completed": (1, {}), "hang": (1, {"deadlock": 1})}


def test_a_hang_kept_only_in_the_hang_dumps_is_a_hang(build: Path, tmp_path: Path) -> None:
    """A job that hung, then was ended by a signal: each rank's last dump says signal and
    its first hang dump is rank-N.hang.  With the .prev dumps gone the evidence of the
    hang is only in rank-N.hang, and the job still ended in a hang."""
    from test_flight import _hang_job

    d = _hang_job(build, tmp_path, "deadlock", [0, 1, 2, 3])
    last = {f.name: json.loads(f.read_text().split("\n", 1)[0])["reason"]
            for f in d.glob("rank-*") if not f.suffix}
    hang = {f.name: json.loads(f.read_text().split("\n", 1)[0])["reason"]
            for f in d.glob("rank-*.hang")}
    # a rank the launcher killed (SIGKILL, once another rank had ended) before its SIGTERM
    # dump keeps "hang" as its last (MPICH under a load of 20: 1 of 4 ranks); the job is
    # still one that ended by the signal, and every rank's hang is in its .hang
    assert set(last.values()) <= {"signal", "hang"} and "signal" in last.values(), last
    assert len(last) == 4 and set(hang.values()) == {"hang"} and len(hang) == 4
    for f in d.glob("rank-*.prev"):
        f.unlink()
    st = tmp_path / "st"
    rc, out, err = store_cli("add", st, d, "--ingest")
    assert rc == 0, err
    job = mpilens.store.open(st).rows("SELECT * FROM jobs")[0]
    assert job["ending"] == "hang"


def test_a_job_at_its_time_limit(build: Path, tmp_path: Path) -> None:
    """A real job that reached its time limit (MPILENS_DUMP_AT) and went on, then was
    signalled: its ending is the time limit, with the flight recorder's verdict."""
    from test_flight import _loop_job_until

    d, _ = _loop_job_until(build, tmp_path, {"MPILENS_DUMP_AT": "1.5"}, "time_limit")
    st = tmp_path / "st"
    rc, out, err = store_cli("add", st, d, "--ingest")
    assert rc == 0, err
    job = mpilens.store.open(st).rows("SELECT * FROM jobs")[0]
    assert (job["ending"], job["verdict"]) == ("time_limit", "progressing")
    rc, out, _ = store_cli("endings", st)
    assert rc == 0 and out.splitlines()[1].split()[:3] == ["time", "limit", "1"]


def test_dask_reads_the_dataset_unchanged(tmp_path: Path) -> None:
    """Another engine on the same files (docs/store.md, Beyond one machine): Dask's
    node-hours per application and calls per function are DuckDB's."""
    dask = pytest.importorskip("dask", reason="dask is in the test extra (.ci/setup --test)")
    st = tmp_path / "st"
    _add_ingest(st, real_profile(4), real_profile(2), real_profile(4, via="exec"))
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "store" / "engines.py"),
                           str(st), "--dask"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n_fn = len(mpilens.store.open(st).rows("SELECT DISTINCT function FROM functions"))
    assert proc.stdout.splitlines() == [f"duckdb: 1 applications, {n_fn} functions",
                                        f"dask {dask.__version__}: same"]


def test_gains_are_advise_findings_in_node_hours(tmp_path: Path) -> None:
    from test_advise import advise, profile, write_model

    prof = profile("p2p", 2, "p2p", 3000, 64)
    model = write_model(tmp_path / "m.json", prof)
    want = advise(prof, model)
    st = tmp_path / "st"
    rc, out, err = store_cli("add", st, prof, "--model", model, "--ingest")
    assert rc == 0, err
    s = mpilens.store.open(st)
    job = s.rows("SELECT * FROM jobs")[0]
    got = s.rows("SELECT * FROM findings ORDER BY rule, key")
    expect = sorted(want["findings"] + want["minor"], key=lambda f: (f["rule"], f["key"]))
    assert [(f["rule"], f["key"], f["gain_s"], f["gain_pct"]) for f in got] == \
        [(f["rule"], f["key"], f["gain_s"], f["gain_pct"]) for f in expect]
    # the latency finding (rule 2), or the imbalance finding (rule 5) that withholds it
    # when the ranks' times differ enough on this machine
    assert got and {f["key"] for f in got} & {"latency", "imbalance"}
    rows = queries.gains(s)
    f = expect[0]
    lat = next(r for r in rows if r["key"] == f["key"])
    # (one app: 100 %, as a ratio of two sums DuckDB may add up in different orders)
    assert lat["jobs"] == 1 and [a["app"] for a in lat["apps"]] == ["advise_app"]
    assert lat["apps"][0]["share_pct"] == pytest.approx(100.0, rel=1e-12)
    assert lat["node_hours"] == pytest.approx(f["gain_pct"] / 100 * job["node_hours"],
                                              rel=1e-12)
    # jobs count jobs, not findings (a job can have several of one rule and key, one a
    # function); an interval only where every finding summed has one
    for r in rows:
        mine = [g for g in got if (g["rule"], g["key"]) == (r["rule"], r["key"])]
        assert (r["jobs"], r["findings"]) == (1, len(mine))
        if all(g["gain_lo_s"] is not None for g in mine):
            assert r["node_hours_lo"] == pytest.approx(sum(
                g["gain_lo_s"] / job["wall_mean_s"] * job["node_hours"] for g in mine))
        else:
            assert r["node_hours_lo"] is None and r["node_hours_hi"] is None
    no_iv = [f for f in expect if not f.get("gain_interval")]
    assert all(g["gain_lo_s"] is None for g in got
               if any((f["rule"], f["key"]) == (g["rule"], g["key"]) for f in no_iv))
    rc, out, _ = store_cli("gains", st)
    assert rc == 0 and all(len(ln) <= 80 for ln in out.splitlines())
    assert any(ln.startswith(f"{f['rule']} {f['key']}") for ln in out.splitlines())


def test_apps_table(tmp_path: Path) -> None:
    st = tmp_path / "st"
    _add_ingest(st, real_profile(4), real_profile(2))
    s = mpilens.store.open(st)
    rows = queries.apps(s)
    assert [(r["app"], r["jobs"]) for r in rows] == [("heat2d", 2)]
    fns: dict[str, float] = {}
    nh = mpi = 0.0
    for p in (real_profile(4), real_profile(2)):
        h, _ = read_profile(p)
        for n, f in h["functions"].items():
            if n not in ("MPI_Init", "MPI_Init_thread", "MPI_Finalize"):
                fns[n] = fns.get(n, 0.0) + f["time_s"]
        nh += h["wall_s"]["max"] / 3600
        mpi += 100 * h["mpi_s"]["mean"] / h["wall_s"]["mean"] * h["wall_s"]["max"] / 3600
    top = sorted(fns.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    assert [f["function"] for f in rows[0]["top_functions"]] == [n for n, _ in top]
    assert rows[0]["top_functions"][0]["mpi_time_pct"] == \
        pytest.approx(100 * top[0][1] / sum(fns.values()), rel=1e-12)
    assert rows[0]["node_hours"] == pytest.approx(nh, rel=1e-12)
    assert rows[0]["mpi_pct"] == pytest.approx(mpi / nh, rel=1e-12)
    assert rows[0]["bound"] == "latency"  # heat2d's messages are all below 16 KiB here
    rc, out, _ = store_cli("apps", st)
    lines = out.splitlines()
    assert rc == 0 and lines[0].split()[:3] == ["application", "jobs", "node-h"]
    assert lines[1].split()[:2] == ["heat2d", "2"] and all(len(ln) <= 80 for ln in lines)
    rc, out, _ = store_cli("apps", st, "--format", "csv")
    assert rc == 0 and out.splitlines()[0].startswith("app,jobs,node_hours,mpi_pct")
    rc, out, _ = store_cli("history", st, "heat2d")
    assert rc == 0 and "cannot tell: 2 runs" in out
    rc, _, err = store_cli("history", st, "nosuch")
    assert rc == 2 and err.startswith("mpilens: no job of application 'nosuch'")
    rc, _, err = store_cli("query", st, "SELECT nosuch FROM jobs")
    assert rc == 2 and err.startswith("mpilens: the query failed:") and \
        len(err.splitlines()) == 1


def test_change_points_beyond_the_noise() -> None:
    noise = [0.3, -0.2, 0.1, -0.4, 0.2, 0.0, -0.1, 0.4, -0.3, 0.15]
    step = np.array([20 + e for e in noise * 2] + [30 + e for e in noise * 2])
    assert queries.change_points(step) == [(20, pytest.approx(
        queries.best_split(step)[1]))]
    assert queries.change_points(step)[0][1] < 1e-4
    flat = np.array([20 + e for e in noise * 4])
    assert queries.change_points(flat) == []
    assert queries.best_split(np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9])) is None  # too few
    # two steps: both found
    two = np.array([10 + e for e in noise * 2] + [20 + e for e in noise * 2]
                   + [12 + e for e in noise * 2])
    assert [k for k, _ in queries.change_points(two)] == [20, 40]


def test_without_duckdb_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    rc, out, err = store_cli("apps", tmp_path)
    assert (rc, out) == (2, "")
    assert err == (f"mpilens: the store needs duckdb: {sys.executable} -m pip install "
                   f"duckdb pyarrow\n")
    assert "mpilens[" not in err  # mpilens is not on PyPI: pip would fetch another package


def test_thicket_of_one_application(tmp_path: Path) -> None:
    """The runs of one application as one Thicket, each keyed by the full profile its
    record points to, with that profile's call-site time; a profile gone is left out."""
    pytest.importorskip("thicket", reason="llnl-thicket is in the test extra (.ci/setup --test)")
    st = tmp_path / "st"
    profs = [tmp_path / "a.prof", tmp_path / "b.prof", tmp_path / "c.prof"]
    for src, dst in zip([real_profile(2), real_profile(4), real_profile(4, via="exec")], profs,
                        strict=True):
        shutil.copyfile(src, dst)
    _add_ingest(st, *profs)
    profs[2].unlink()
    s = mpilens.store.open(st)
    t = s.thicket("heat2d")
    assert sorted(t.profile_mapping.values()) == sorted(str(p.resolve()) for p in profs[:2])
    by_profile = t.dataframe["time"].groupby(level="profile").sum()
    for key, path in t.profile_mapping.items():
        proc = mpilens_inproc("report", path, "--format", "json")
        assert proc.returncode == 0, proc.stderr
        total = sum(r["time_s"] for r in json.loads(proc.stdout)["callsites"])
        assert by_profile[key] == pytest.approx(total, rel=1e-12)
    with pytest.raises(ValueError, match="no readable profile of 'nosuch'"):
        s.thicket("nosuch")


def test_html_page_and_dates(tmp_path: Path) -> None:
    st = tmp_path / "st"
    _add_ingest(st, real_profile(4), real_profile(2))
    out = tmp_path / "store.html"
    rc, text, err = store_cli("html", st, "-o", out)
    assert rc == 0 and text == f"wrote {out}\n", err
    page = out.read_text()
    assert page.count('src="data:image/png;base64,') == 3  # apps, MPI share, history
    assert "<td>heat2d</td><td>2</td>" in page and "http" not in page
    rc, _, err = store_cli("html", st, "-o", out)
    assert rc == 2 and "exists" in err
    # --since / --until: the jobs' end, UTC; a bad date is one line
    rc, text, _ = store_cli("apps", st, "--since", "2000-01-01", "--format", "json")
    assert rc == 0 and [r["jobs"] for r in json.loads(text)] == [2]
    rc, text, _ = store_cli("apps", st, "--until", "2000-01-01T00:00", "--format", "json")
    assert rc == 0 and json.loads(text) == []
    rc, _, err = store_cli("apps", st, "--since", "yesterday")
    assert rc == 2 and err.splitlines()[-1].endswith(
        "'yesterday' is not a date (YYYY-MM-DD[THH:MM], UTC)")
