"""`mpilens report` and `mpilens diff` on profiles of real runs of the examples.

Expected numbers come from what the examples do (test_cli_support.per_rank_calls)
and from the profile itself: the report must copy counts and bytes exactly.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import read_profile
from test_cli_support import (
    EVERY,
    STEPS,
    N,
    mpilens,
    mpilens_inproc,
    per_rank_calls,
    real_profile,
)


def report_json(path, *extra: str) -> dict:
    proc = mpilens_inproc("report", path, "--format", "json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def prof4(build):
    return real_profile(4)


@pytest.fixture(scope="module")
def prof2(build):
    return real_profile(2)


def test_json_numbers_agree_with_profile(prof4) -> None:
    header, ranks = read_profile(prof4)
    data = report_json(prof4)
    s = data["summary"]
    assert s["nranks"] == header["nranks"] == 4 == len(ranks)
    assert s["job_id"] == header["job_id"]
    assert s["hosts"] == header["hosts"]
    assert s["wall_s"] == header["wall_s"]
    assert s["mpi_s"] == header["mpi_s"]
    assert s["overhead_ns"] == header["overhead_ns"]
    # mpi_s leaves MPI_Init/Finalize out already: the share is mpi_s / wall_s, never negative
    pct = [100.0 * r["mpi_s"] / r["wall_s"] for r in ranks]
    assert s["mpi_pct"]["min"] == min(pct) and s["mpi_pct"]["max"] == max(pct)
    assert 0 < s["mpi_pct"]["min"] <= s["mpi_pct"]["max"] <= 120
    assert s["caution_functions"] == sorted(n for n, f in header["functions"].items()
                                            if f.get("caution"))
    rows = {r["function"]: r for r in data["functions"]}
    assert set(rows) == set(header["functions"])
    for name, f in header["functions"].items():
        r = rows[name]
        assert r["calls"] == f["calls"]
        assert r["time_s"] == f["time_s"]
        assert r["bytes_sent"] == f.get("bytes_sent", 0)
        assert r["bytes_recv"] == f.get("bytes_recv", 0)
        assert r["slowest_rank"] == f["rank_time_s"]["max_rank"]
        assert r["rank_time_max_s"] == f["rank_time_s"]["max"]
    outside = ("MPI_Init", "MPI_Init_thread", "MPI_Finalize")  # start-up/shut-down, not communication
    comm = [r for r in data["functions"] if r["function"] not in outside]
    assert data["functions"][: len(comm)] == comm  # start-up/shut-down listed last
    times = [r["time_s"] for r in comm]
    assert times == sorted(times, reverse=True)
    assert sum(r["mpi_pct"] for r in comm) == pytest.approx(100.0)
    assert all(r["mpi_pct"] is None for r in data["functions"] if r["function"] in outside)


def test_json_counts_are_what_the_example_does(prof4) -> None:
    rows = {r["function"]: r for r in report_json(prof4)["functions"]}
    for name, per_rank in per_rank_calls().items():
        assert rows[name]["calls"] == 4 * per_rank, name
    halo = 2 * STEPS * N * 8  # per rank: two rows of N doubles per step
    assert rows["MPI_Isend"]["bytes_sent"] == 4 * halo
    assert rows["MPI_Irecv"]["bytes_recv"] == 4 * halo
    # one double per step, then two doubles in the final check
    assert rows["MPI_Allreduce"]["bytes_sent"] == 4 * (8 * STEPS + 16)


def test_histogram_and_dominant_class(prof4) -> None:
    header, _ = read_profile(prof4)
    hist = report_json(prof4, "--function", "isend")["histogram"]
    assert hist["function"] == "MPI_Isend"
    send = hist["directions"]["send"]
    k = (N * 8).bit_length()  # bin of N*8 bytes: 2^(k-1) <= N*8 < 2^k
    expected = [0] * 25
    expected[k] = 4 * 2 * STEPS
    assert send["bins"] == expected == header["functions"]["MPI_Isend"]["hist_send"]
    assert send["dominant"] == {"bins": [k], "labels": [header["hist_labels"][k]],
                                "messages": 4 * 2 * STEPS, "share_pct": 100.0}
    assert "recv" not in hist["directions"]
    # Allreduce: STEPS messages of 8 B and one of 16 B per rank -> 8-15 B dominates
    ar = report_json(prof4, "--function", "MPI_Allreduce")["histogram"]["directions"]["send"]
    assert ar["bins"][4] == 4 * STEPS and ar["bins"][5] == 4
    assert ar["dominant"]["bins"] == [4]
    assert ar["dominant"]["share_pct"] == pytest.approx(100.0 * STEPS / (STEPS + 1))


def test_text_report_shows_the_callout(prof4) -> None:
    header, _ = read_profile(prof4)
    proc = mpilens("report", prof4, "--function", "MPI_Isend")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    label = header["hist_labels"][(N * 8).bit_length()]
    assert (f"100.0 % of MPI_Isend messages sent ({4 * 2 * STEPS} of {4 * 2 * STEPS}) "
            f"are {label} B") in out
    assert "1-D stencil on a ring of 4 ranks" in out  # the halo exchange with rank +-1
    for name in per_rank_calls():
        assert name in out
    assert f"{4 * 2 * STEPS:,}" in out  # Isend calls


def test_communication_pattern(prof4) -> None:
    comm = report_json(prof4)["communication"]
    assert comm["pattern"] == "stencil"
    assert (comm["stencil"]["dims"], comm["stencil"]["periods"], comm["stencil"]["grid"]) == (
        [4], [True], "inferred")
    assert comm["self_traffic"] == {"bytes": 0, "ranks": []}
    pair = 2 * STEPS * N * 8  # both directions between ring neighbours
    assert comm["heaviest_pairs"] == [{"a": 0, "b": 1, "bytes": pair},
                                      {"a": 0, "b": 3, "bytes": pair},
                                      {"a": 1, "b": 2, "bytes": pair},
                                      {"a": 2, "b": 3, "bytes": pair}]
    assert comm["total_bytes"] == 4 * 2 * STEPS * N * 8


def test_top_and_csv(prof4) -> None:
    header, _ = read_profile(prof4)
    assert len(report_json(prof4, "--top", "3")["functions"]) == 3
    proc = mpilens("report", prof4, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert {r["function"]: int(r["calls"]) for r in rows} == \
        {n: f["calls"] for n, f in header["functions"].items()}
    proc = mpilens_inproc("report", prof4, "--format", "csv", "--function", "MPI_Alltoall")
    hist = list(csv.DictReader(io.StringIO(proc.stdout)))
    sent = [int(r["messages"]) for r in hist if r["direction"] == "send"]
    assert sent == header["functions"]["MPI_Alltoall"]["hist_send"]
    assert sum(sent) == 4 * (STEPS // EVERY)


def test_diff_with_itself_is_zero(prof4) -> None:
    proc = mpilens("diff", prof4, prof4, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["wall_change_s"] == 0.0
    header, _ = read_profile(prof4)
    assert len(d["functions"]) == len(header["functions"])
    for r in d["functions"]:
        assert r["time_change_s"] == 0.0 and r["calls_change"] == 0
        assert r["bytes_sent_change"] == 0 and r["bytes_recv_change"] == 0
    text = mpilens_inproc("diff", prof4, prof4)
    assert text.returncode == 0 and "+0.0 %" in text.stdout


def test_diff_2_vs_4_ranks(prof2, prof4) -> None:
    proc = mpilens_inproc("diff", prof2, prof4, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["a"]["nranks"] == 2 and d["b"]["nranks"] == 4
    rows = {r["function"]: r for r in d["functions"]}
    for name, per_rank in per_rank_calls().items():
        assert rows[name]["calls_a"] == 2 * per_rank
        assert rows[name]["calls_b"] == 4 * per_rank
        assert rows[name]["calls_change"] == 2 * per_rank
        assert rows[name]["calls_change_pct"] == 100.0
    # halo bytes double with the ranks; per-rank Alltoall bytes stay N*N*8/ranks each
    assert rows["MPI_Isend"]["bytes_sent_change"] == 2 * 2 * STEPS * N * 8
    # MPI_Init and MPI_Finalize (outside the wall-time window) come last and explain nothing
    assert {r["function"] for r in d["functions"][-2:]} == {"MPI_Init", "MPI_Finalize"}
    assert all(r["explains_pct"] is None for r in d["functions"][-2:])
    comm = d["functions"][:-2]
    assert all(r["explains_pct"] is not None for r in comm)
    changes = [abs(r["time_change_s"]) for r in comm]
    assert changes == sorted(changes, reverse=True)


def test_node_view_one_host(prof4):
    """One host: every point-to-point byte stays within the node (the rank lines'
    peers give the total), no node pair, and every collective within one node."""
    header, ranks = read_profile(prof4)
    total = sum(nbytes for r in ranks for _, _, nbytes in r["peers"]["sent"])
    view = report_json(prof4)["nodes"]
    assert (view["count"], view["p2p_bytes"], view["p2p_inter_bytes"]) == (1, total, 0)
    assert total > 0 and view["heaviest_pairs"] == [] and header["nodes"]["matrix_bytes"] == [[total]]
    assert {c["function"]: (c["one_node"], c["multi_node"]) for c in view["collectives"]} == {
        name: (4 * calls, 0) for name, calls in per_rank_calls().items()
        if name in ("MPI_Bcast", "MPI_Allreduce", "MPI_Alltoall")}
    assert [r["node"] for r in view["ranks"]] == [0] * 4
    text = mpilens_inproc("report", prof4).stdout
    assert "of point-to-point bytes stay within it" in text
