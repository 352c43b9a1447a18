"""mpilens-bench families under a real MPI launcher, tiny sizes: data validated,
documented JSON fields present, exact topology/checksums/file contents."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import FLAVOUR, mpi_env, run_mpi
from test_bench_common import (
    bench_exe,
    check_env,
    check_stats,
    estimate_first,
    fnv1a,
    pattern,
    run_family,
)


def test_p2p_pair_sizes_and_osu_reference(tmp_path: Path) -> None:
    doc = run_family(3, "p2p", ["--ranks", "0,2", "--max-size", "1K", "--samples", "4",
                                "--iters", "3", "--bw-iters", "1", "--window", "4",
                                "--warmup", "1", "--reference", "osu", "--osu-iters", "20",
                                "--osu-rounds", "2"], tmp_path)
    check_env(doc, 3, FLAVOUR)
    assert doc["options"]["ranks"] == [0, 2]
    res = doc["results"]
    assert [r["size"] for r in res] == [0] + [1 << k for k in range(11)]
    for r in res:
        for key in ("latency_s", "pingping_s"):
            check_stats(r[key], 4)
            assert r[key]["min"] > 0
        if r["size"] == 0:
            assert r["bw_Bps"] is None and r["bibw_Bps"] is None and "osu_bw" not in r
        else:
            check_stats(r["bw_Bps"], 4)
            check_stats(r["bibw_Bps"], 4)
            assert r["osu_bw"]["iters"] == 1 and len(r["osu_bw"]["runs"]) == 2
        ol = r["osu_latency"]
        assert (ol["iters"], ol["skip"], len(ol["runs"])) == (20, 1, 2)
        assert ol["latency_s"] > 0
    # crossovers only outside the intervals (bench/src/p2p.c): recomputed from the
    # medians' 95 % intervals at the ends least favourable to a step or a drop
    want = []
    for prev, r in itertools.pairwise(res):
        if prev["size"] == 0:
            continue
        lo, hi = r["latency_s"]["median_ci95"][0], prev["latency_s"]["median_ci95"][1]
        if r["size"] >= 64 and lo - 2 * hi + res[0]["latency_s"]["median_ci95"][0] > 0.3 * lo:
            want.append((r["size"], "latency_step"))
        if r["size"] >= 1024 and r["bw_Bps"]["median_ci95"][1] \
                < 0.85 * prev["bw_Bps"]["median_ci95"][0]:
            want.append((r["size"], "bandwidth_drop"))
    assert [(c["size"], c["evidence"]) for c in doc["analysis"]["crossovers"]] == want
    assert doc["expected_s"] > 0  # said before measuring (a probe of 0 B and 1 KiB)


def test_coll_every_operation_two_rank_counts(tmp_path: Path) -> None:
    doc = run_family(3, "coll", ["--max-size", "8", "--samples", "2", "--warmup", "1",
                                 "--nranks", "2,3"], tmp_path)
    res = doc["results"]
    ops = doc["options"]["ops"]
    assert len(ops) == 13
    # barrier once per rank count; the other 12 at 4 and 8 B
    assert len(res) == 2 * (1 + 12 * 2)
    for r in res:
        check_stats(r["time_s"], 2)
        assert len(r["per_rank_mean_s"]) == r["nranks"]
        assert r["late_accepted"] >= 0 and r["late_repeats"] >= 0
    got = {(r["op"], r["nranks"], r["size"]) for r in res}
    assert ("alltoallv", 3, 8) in got and ("barrier", 2, 0) in got
    red = next(r for r in res if r["op"] == "allreduce" and r["size"] == 8)
    assert red["count"] == 2
    assert doc["expected_s"] > 0 and doc["elapsed_s"] > 0  # said before, taken after


def test_coll_announces_its_expected_duration_first(tmp_path: Path) -> None:
    """coll probes each op before starting and sends the expected duration (MLB-ESTIMATE,
    shown by `mpilens bench` from 10 s on) before the first point's progress line."""
    proc = run_mpi(2, [bench_exe(), "coll", "--ops", "allreduce,bcast", "--max-size", "8",
                       "--samples", "2", "--warmup", "0", "--progress",
                       "--out", tmp_path / "c.json"], timeout=120)
    expected = estimate_first(proc.stderr, 4)  # 2 ops x 2 sizes (4 and 8 B)
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["expected_s"] == pytest.approx(expected, rel=1e-5)


def _expected_checksum(partners: list[list[int]], size: int, seed: int) -> str:
    nranks, total = len(partners), 0
    for me, plist in enumerate(partners):
        h = 1469598103934665603
        for q in plist:
            h = fnv1a(h, pattern(((q * nranks + me) << 24), size, seed))
        total = (total + h) & 0xFFFFFFFFFFFFFFFF
    return f"{total:016x}"


def test_halo_2d_shared_memory_matches_p2p(tmp_path: Path) -> None:
    doc = run_family(4, "halo", ["--dimension", "2", "--npartner", "4", "--max-size", "64",
                                 "--samples", "2", "--iters", "3", "--warmup", "1"], tmp_path)
    topo = doc["topology"]
    assert topo["grid"] == [2, 2]
    assert topo["partners"] == [[1, 2], [0, 3], [3, 0], [2, 1]]
    assert (topo["on_node_links"], topo["off_node_links"]) == (8, 0)
    for i, r in enumerate(doc["results"]):
        want = _expected_checksum(topo["partners"], r["size"], (i + 1) * 2)
        for v in ("p2p", "lockall", "lock", "fence"):
            assert r[v]["checksum"] == want, (v, r["size"])
            check_stats(r[v]["time_s"], 2)
        assert set(r["speedup_vs_p2p"]) == {"lockall", "lock", "fence"}
    assert doc["expected_s"] > 0 and doc["elapsed_s"] > 0  # said before, taken after


def test_halo_1d_partners(tmp_path: Path) -> None:
    doc = run_family(4, "halo", ["--npartner", "4", "--min-size", "8", "--max-size", "8",
                                 "--samples", "1", "--iters", "2", "--warmup", "0",
                                 "--variants", "p2p,lock"], tmp_path)
    assert doc["topology"]["partners"] == [[1, 2], [2, 0, 3], [3, 1, 0], [2, 1]]
    r = doc["results"][0]
    assert r["p2p"]["checksum"] == r["lock"]["checksum"] == _expected_checksum(
        doc["topology"]["partners"], 8, 1)


def check_logp_model(m: dict) -> None:
    """The model's rules, whatever the timings were: a gap is its train median unless that
    median is not above the clock resolution (noise), then os(m) and a not_measured entry;
    L = RTT(0)/2 - g(0) unless that is not above the resolution, then RTT(0)/2 and an entry."""
    res = m["clock_resolution_s"]
    n = len(m["sizes"])
    for key in ("rtt_s", "os_s", "or_s", "g_s", "g_raw_s"):
        assert len(m[key]) == n
    assert min(m["rtt_s"]) > 0 and min(m["g_s"]) > 0
    assert min(m["os_s"]) >= 0 and min(m["or_s"]) >= 0  # a call may be shorter than a clock tick
    bounds = {e["size"]: e for e in m["not_measured"] if e["param"] == "g_s"}
    assert m["g_clamped"] == len(bounds)
    for i, size in enumerate(m["sizes"]):
        raw, g = m["g_raw_s"][i], m["g_s"][i]
        if size in bounds:
            assert raw <= res and g == max(m["os_s"][i], res)
            assert bounds[size]["raw_s"] == raw and bounds[size]["value_s"] == g
        else:
            assert raw > res and g == raw
    ls = [e for e in m["not_measured"] if e["param"] == "L_s"]
    assert m["L_raw_s"] == pytest.approx(m["rtt_s"][0] / 2 - m["g_s"][0], rel=1e-7, abs=1e-15)
    if m["L_clamped"]:
        assert m["L_raw_s"] <= res and m["L_s"] == pytest.approx(m["rtt_s"][0] / 2, rel=1e-7)
        assert len(ls) == 1 and ls[0]["value_s"] == m["L_s"]
    else:
        assert m["L_s"] == m["L_raw_s"] > res and ls == []


def test_logp_parameters_and_model_file(tmp_path: Path) -> None:
    model = tmp_path / "netmodel.json"
    doc = run_family(2, "logp", ["--max-size", "64K", "--samples", "3", "--iters", "3",
                                 "--train", "8", "--model", str(model)], tmp_path)
    m = json.loads(model.read_text())
    assert m == doc["model"]
    assert (m["format"], m["version"], m["model"]) == ("mpilens-netmodel", 1, "plogp")
    assert m["sizes"] == [0] + [1 << k for k in range(17)]
    assert [r["size"] for r in doc["results"]] == m["sizes"]
    for key in ("rtt_s", "os_s", "or_s"):  # the model holds the medians of the samples
        assert m[key] == [r[key]["median"] for r in doc["results"]]
    assert m["g_raw_s"] == [r["g_s"]["median"] for r in doc["results"]]
    check_logp_model(m)
    assert doc["options"]["expected_s"] > 0  # announced before measuring


def test_logp_announces_its_expected_duration_first(tmp_path: Path) -> None:
    """logp measures round trips at 0 B and the largest size before starting and sends
    the expected duration (MLB-ESTIMATE, shown by `mpilens bench` from 10 s on) before
    the first size's progress line."""
    proc = run_mpi(2, [bench_exe(), "logp", "--max-size", "4K", "--samples", "2",
                       "--iters", "2", "--train", "4", "--progress",
                       "--out", tmp_path / "l.json"], timeout=120)
    estimate_first(proc.stderr, 14)


def test_logp_model_rules_on_chosen_medians(build: Path) -> None:
    """ml_logp_model (bench/src/logp.c) on medians chosen so that every rule fires
    (tests/progs/logp_model.c): a gap at or below the clock resolution is not a
    measurement; the file holds os(m) and says so, and likewise for L."""
    proc = run_mpi(1, [build / "tests" / "logp_model"])
    a, b = (json.loads(ln) for ln in proc.stdout.splitlines())
    for m in (a, b):
        check_logp_model(m)
    assert (a["g_s"], a["g_clamped"], a["L_s"], a["L_clamped"]) == ([3e-7, 5e-7, 4e-7], 2, 7e-7, False)
    assert [(e["param"], e["size"], e["raw_s"], e["value_s"]) for e in a["not_measured"]] == [
        ("g_s", 0, -1e-8, 3e-7), ("g_s", 64, 1e-9, 4e-7)]
    assert (b["g_s"], b["g_clamped"], b["L_s"], b["L_raw_s"], b["L_clamped"]) == (
        [3.5e-7, 5e-7, 6e-7], 0, 2.5e-7, -1e-7, True)
    assert [(e["param"], e["raw_s"], e["value_s"]) for e in b["not_measured"]] == [
        ("L_s", -1e-7, 2.5e-7)]


def test_io_files_hold_the_pattern(tmp_path: Path) -> None:
    d = tmp_path / "io"
    d.mkdir()
    doc = run_family(3, "io", ["--dir", str(d), "--size", "3000", "--block", "100",
                               "--nblocks", "5", "--samples", "2", "--keep"], tmp_path)
    byname = {r["pattern"]: r for r in doc["results"]}
    assert set(byname) == {"shared", "fpp", "master", "strided_indep", "strided_coll"}
    for r in doc["results"]:
        assert r["verified"] and r["seed"] == 2
        check_stats(r["write_s"], 2)
        assert r["write_sync_s"]["median"] >= r["write_s"]["median"]
    for name in ("shared", "master"):
        assert Path(byname[name]["files"][0]).read_bytes() == pattern(0, 9000, 2)
    for name in ("strided_indep", "strided_coll"):
        assert Path(byname[name]["files"][0]).read_bytes() == pattern(0, 1500, 2)
    for r, f in enumerate(byname["fpp"]["files"]):
        assert Path(f).read_bytes() == pattern(r * 3000, 3000, 2)
    assert doc["expected_s"] > 0 and doc["elapsed_s"] > 0  # said after the first sample


def test_io_removes_files_and_temporary_dir(tmp_path: Path) -> None:
    d = tmp_path / "io"
    d.mkdir()
    doc = run_family(2, "io", ["--dir", str(d), "--size", "1K", "--block", "64",
                               "--nblocks", "2", "--samples", "1"], tmp_path)
    assert doc["files_removed"] and list(d.iterdir()) == []
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    doc = run_family(2, "io", ["--size", "1K", "--block", "64", "--nblocks", "2",
                               "--samples", "1", "--patterns", "shared,fpp"], tmp_path,
                     env=mpi_env({"TMPDIR": str(tmp)}))
    assert doc["options"]["temporary_dir"] and doc["dir_removed"]
    assert doc["options"]["dir"].startswith(str(tmp)) and list(tmp.iterdir()) == []


def test_memory_per_rank_and_node(tmp_path: Path) -> None:
    doc = run_family(3, "memory", ["--size", "16K", "--repeats", "2"], tmp_path)
    res = doc["results"]
    assert res["nranks"] == 3
    ranks = res["per_rank"]
    assert [r["rank"] for r in ranks] == [0, 1, 2]
    for r in ranks:
        assert r["mpi_init_kib"] == r["init_kib"] - r["start_kib"]
        assert r["mpi_contact_kib"] == r["alltoall_last_kib"] - r["buffers_kib"]
        assert r["init_kib"] > r["start_kib"] > 0
    nodes = res["per_node"]
    assert sum(n["ranks"] for n in nodes) == 3
    assert sum(n["mpi_total_kib"] for n in nodes) == sum(r["mpi_total_kib"] for r in ranks)
    assert res["summary"]["mpi_total_kib_max"] == max(r["mpi_total_kib"] for r in ranks)
