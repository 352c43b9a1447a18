"""The Python API (mpilens.api, docs/api.md): mpilens.load(path)'s DataFrames hold the
JSON report's rows exactly, the peer table the traffic the example is known to make,
and the Hatchet GraphFrame of the call sites (mpilens.llnl, the real llnl-hatchet
package) the profile's totals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpilens
import pytest
from test_cli_support import STEPS, N, mpilens_inproc, real_profile
from test_regions import run_prog

REPO_PROFILE = Path(__file__).parent / "data" / "profile_v1.prof"

pd = pytest.importorskip("pandas", reason="pandas is in the test extra (.ci/setup --test); "
                         "skipped only where the suite runs without it")


def _json(path: Path) -> dict:
    proc = mpilens_inproc("report", path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _same(df, rows: list[dict], index: str | None) -> None:
    """Every cell of the frame equals the JSON row's value (NaN for JSON null)."""
    assert len(df) == len(rows)
    frame = df.reset_index() if index else df
    for got, want in zip(frame.to_dict("records"), rows, strict=True):
        for k, v in got.items():
            w = want[k]
            assert (v == w) or (w is None and (v is None or (isinstance(v, float) and
                                                              math.isnan(v)))), (k, v, w)


def test_frames_are_the_json_report() -> None:
    path = real_profile(4)
    doc = _json(path)
    p = mpilens.load(path)
    assert p.nranks == 4 and p.path == path
    _same(p.functions, doc["functions"], "function")
    assert list(p.functions.index[:1]) == [doc["functions"][0]["function"]]
    _same(p.ranks, doc["ranks"], "rank")
    cs = p.callsites
    assert list(cs.index) == [r["id"] for r in doc["callsites"]]
    for r in doc["callsites"]:
        row = cs.loc[r["id"]]
        assert (row["function"], row["location"], row["calls"], row["time_s"],
                row["bytes_sent"], row["bytes_recv"]) == \
            (r["function"], r["location"], r["calls"], r["time_s"], r["bytes_sent"],
             r["bytes_recv"])
        assert (row["file"], row["line"]) == (r["frames"][0]["file"], r["frames"][0]["line"])
    _same(p.communicators, doc["comms"], None)
    tl = doc["timeline"]
    for c in tl["classes"]:
        got = p.timeline[p.timeline["class"] == c["class"]]
        assert list(got["calls"]) == c["calls"] and list(got["time_s"]) == c["time_s"]
        assert list(got["bytes"]) == c["bytes"] and len(got) == tl["nbins"]
    h = p.histogram("MPI_Isend")
    k = (N * 8).bit_length()
    assert h[h["messages"] > 0][["bin", "min_bytes", "max_bytes", "messages"]].values.tolist() \
        == [[k, 1 << (k - 1), (1 << k) - 1, 4 * 2 * STEPS]]


def test_peers_are_the_ring() -> None:
    """heat2d on 4 ranks: each rank sends STEPS rows of N doubles to each ring neighbour
    and receives as many from each (examples/heat2d.c)."""
    p = mpilens.load(real_profile(4))
    peers = p.peers
    assert list(peers.columns) == ["rank", "direction", "peer", "messages", "bytes"]
    got = sorted(map(tuple, peers.values.tolist()))
    want = sorted((r, d, (r + s) % 4, STEPS, STEPS * N * 8)
                  for r in range(4) for d in ("sent", "recv") for s in (1, 3))
    assert got == want


def test_regions_frame(build, tmp_path: Path) -> None:
    out = run_prog(tmp_path, "region_c")
    doc = _json(out)
    df = mpilens.load(out).regions
    assert len(df) >= 2 and set(df["name"]) >= {"outer", "inner"}
    _same(df, doc["regions"], None)


def test_hatchet_graphframe_totals() -> None:
    pytest.importorskip("hatchet", reason="llnl-hatchet is in the test extra "
                        "(.ci/setup --test); skipped only where the suite runs without it")
    path = real_profile(4)
    doc = _json(path)
    gf = mpilens.load(path).to_hatchet()
    df = gf.dataframe
    sites = doc["callsites"]
    total = sum(r["time_s"] for r in sites)
    assert df["time"].sum() == pytest.approx(total, rel=1e-12)
    roots = gf.graph.roots
    assert sum(df.loc[r, "time (inc)"] for r in roots) == pytest.approx(total, rel=1e-12)
    assert df["calls"].sum() == sum(r["calls"] for r in sites)
    assert df["bytes_sent"].sum() == sum(r["bytes_sent"] for r in sites)
    # one MPI leaf per call site, with that site's time and calls
    leaves = [n for n in gf.graph.traverse() if n.frame.get("type") == "mpi"]
    assert len(leaves) == len(sites)
    by_site = {(r["function"], r["frames"][0]["line"]): r for r in sites}
    for n in leaves:
        r = by_site[(n.frame["name"], n.frame["line"])]
        assert df.loc[n, "time"] == pytest.approx(r["time_s"], rel=1e-12)
        assert df.loc[n, "calls"] == r["calls"]
    # every site of heat2d is called from main: one root
    assert [r.frame["name"] for r in roots] == ["main"]


def test_thicket_composes_runs() -> None:
    """Two runs (2 and 4 ranks) in one Thicket: each keyed by its path, each with its own
    call sites' total time."""
    pytest.importorskip("thicket", reason="llnl-thicket is in the test extra "
                        "(.ci/setup --test); skipped only where the suite runs without it")
    from mpilens.llnl import thicket

    paths = [real_profile(2), real_profile(4)]
    t = thicket([mpilens.load(p) for p in paths])
    assert sorted(t.profile_mapping.values()) == sorted(map(str, paths))
    by_profile = t.dataframe["time"].groupby(level="profile").sum()
    for key, path in t.profile_mapping.items():
        total = sum(r["time_s"] for r in _json(Path(path))["callsites"])
        assert by_profile[key] == pytest.approx(total, rel=1e-12)


def test_missing_pandas_names_pandas_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pandas the tables say to install pandas into this Python, not an
    'mpilens[pandas]' extra (mpilens is not on PyPI: pip would fetch another package)."""
    import sys

    p = mpilens.load(REPO_PROFILE)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas: ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError) as e:
        p.functions  # noqa: B018
    assert str(e.value) == (f"mpilens's tables are pandas DataFrames: install pandas into "
                            f"this Python ({sys.executable} -m pip install pandas)")
    monkeypatch.setitem(sys.modules, "hatchet", None)
    with pytest.raises(ModuleNotFoundError) as e:
        p.to_hatchet()
    assert str(e.value) == (f"the Hatchet export needs llnl-hatchet: {sys.executable} -m pip "
                            f"install llnl-hatchet")
    assert "mpilens[" not in (Path(mpilens.api.__file__).read_text()
                              + Path(mpilens.llnl.__file__).read_text())
