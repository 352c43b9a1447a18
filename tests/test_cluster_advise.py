"""mpilens advise on the virtual cluster (docs/advise.md, rule 1 and --check; seed 004):
4 nodes, 2 rails of 500 Mbit/s each (tbf), one rank per node, Open MPI's TCP BTL.

The jobs and the model run over the first rail (OMPI_MCA_btl_tcp_if_include=rail0 in
the environment, as the baseline of a site that has not enabled its second rail);
`--rail-interfaces rail0,rail1` names both.  The bandwidth-bound mini-app
(examples/bigexchange: 4 MiB ring exchanges) gets rails as its top finding, the
latency-bound one (examples/smallbcast: 8-15 B Bcasts) none; `--check` applies the
rails, and its verdict is the judge's on the runs' measured times (which verdict comes
out depends on the shared machine's load, not on the code).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import BUILD, FLAVOUR, read_profile
from mpilens.advise import stats
from test_cli_support import mpilens
from test_cluster import Cluster, make_cluster

# MPICH's nodes talk through UCX's shared memory here (docs/cluster.md), so its jobs do
# not use the rails; Intel MPI has no vcluster launcher line
pytestmark = pytest.mark.skipif(FLAVOUR != "openmpi",
                                reason="rails are Open MPI's btl_tcp_if_include lists here "
                                       "(MPICH's nodes use UCX shared memory: docs/cluster.md)")

CLUSTER_ID, NODES, RATE = 6, 4, "500mbit"
EXEC = BUILD / "bin" / "mpilens-exec"
ONE_RAIL = {"OMPI_MCA_btl_tcp_if_include": "rail0"}
MIB, STEPS, BCASTS = 4, 5, 400


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Cluster:
    return make_cluster(request, CLUSTER_ID, "--nodes", str(NODES), "--rails", "2", "--rate", RATE)


@pytest.fixture(scope="module")
def model(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bench logp between two nodes over one rail, up to the apps' 4 MiB."""
    path = tmp_path_factory.mktemp("model") / "net.json"
    cluster.run(2, [BUILD / "bin" / "mpilens-bench", "logp", "--max-size", "4M", "--samples", "3",
                    "--iters", "3", "--train", "8", "--model", path], env=ONE_RAIL,
                per_node=[1, 1], any_rail=True, timeout=240)
    return path


@pytest.fixture(scope="module")
def big(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bandwidth-bound app's profile, over one rail."""
    out = tmp_path_factory.mktemp("big") / "big.prof"
    return profiled(cluster, out, "bigexchange", MIB, STEPS)


def profiled(cluster: Cluster, out: Path, app: str, *args: object) -> Path:
    proc = cluster.run(NODES, [EXEC, BUILD / "examples" / app, *args],
                       env={**ONE_RAIL, "MPILENS_OUTPUT": str(out), "MPILENS_TIMING": "all"},
                       per_node=[1] * NODES, any_rail=True, timeout=240)
    assert proc.stdout.strip().endswith("OK"), proc.stdout
    return out


def advise(prof: Path, model: Path, *extra: str) -> dict[str, Any]:
    proc = mpilens("advise", prof, "--model", model, "--rail-interfaces", "rail0,rail1",
                   "--format", "json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def interp(sizes: list[int], ys: list[float], x: float) -> float:
    """netmodel.c's interpolation (docs/advise.md): linear between sizes, past the last
    along the last segment (never decreasing), at or below the first its value."""
    if x <= sizes[0]:
        return ys[0]
    i = next((k for k in range(1, len(sizes)) if x <= sizes[k]), len(sizes) - 1)
    rise = ys[i] - ys[i - 1]
    if x > sizes[i] and rise < 0:
        rise = 0.0
    return max(ys[i - 1] + rise * (x - sizes[i - 1]) / (sizes[i] - sizes[i - 1]), 0.0)


def test_rails_first_for_the_bandwidth_bound_app_only(cluster: Cluster, model: Path, big: Path,
                                                      tmp_path: Path) -> None:
    res = advise(big, model)
    top = res["findings"][0]
    assert top["key"] == "rails", [f["key"] for f in res["findings"]]
    # every message is a 4 MiB block to a ring neighbour on another node: exact counts
    msgs, size = 2 * STEPS * NODES, MIB << 20
    m = json.loads(model.read_text())
    band = msgs * (interp(m["sizes"], m["g_s"], size) - interp(m["sizes"], m["g_s"], 0)) / NODES
    fig = top["figures"]
    assert (fig["messages"], fig["inter_messages"], fig["bytes"]) == (msgs, msgs, msgs * size)
    assert fig["p2p_split_bytes"] == [0, msgs * size]
    assert fig["collective_messages"] == {}  # the Allreduce of 8 B is below the crossover
    assert fig["rails"] == 2 and fig["bandwidth_s"] == pytest.approx(band, rel=1e-9)
    assert top["gain_s"] == pytest.approx(min(band / 2, res["mpi_s"]), rel=1e-9)
    assert fig["gain_4x_s"] == pytest.approx(band * 3 / 4, rel=1e-9)
    assert top["apply"] == {"env": {"OMPI_MCA_btl_tcp_if_include": "rail0,rail1",
                                    "UCX_NET_DEVICES": "rail0,rail1", "UCX_MAX_RNDV_RAILS": "2"},
                            "launcher_args": [], "rails": ["rail0", "rail1"]}
    header, ranks = read_profile(big)
    assert header["nodes"]["count"] == NODES and [r["node"] for r in ranks] == list(range(NODES))

    small = profiled(cluster, tmp_path / "small.prof", "smallbcast", BCASTS)
    res = advise(small, model)
    keys = [f["key"] for f in res["findings"] + res["minor"] + res["withheld"]]
    assert "rails" not in keys, keys  # seed 004's NICAM: more rails do not help
    f = next(f for f in res["findings"] if f["key"] == "latency-collectives")
    assert f["figures"]["functions"]["MPI_Bcast"]["calls_per_rank"] == BCASTS


def test_check_adds_the_rail_and_measures_the_gain(cluster: Cluster, model: Path, big: Path,
                                                   tmp_path: Path) -> None:
    line = cluster.line(NODES, [1] * NODES, any_rail=True)
    proc = mpilens("advise", big, "--model", model, "--rail-interfaces", "rail0,rail1",
                   "--format", "json", "--check", "--runs", "5", "--check-output",
                   tmp_path / "chk", "--", *line, BUILD / "examples" / "bigexchange", MIB, STEPS,
                   env=ONE_RAIL, timeout=600)
    chk = json.loads(proc.stdout)["check"]
    assert chk["finding"]["key"] == "rails"
    assert chk["applied"] == ("OMPI_MCA_btl_tcp_if_include=rail0,rail1 UCX_NET_DEVICES=rail0,rail1 "
                              "UCX_MAX_RNDV_RAILS=2")
    per = []
    for i in range(1, 6):  # every run over all 4 nodes, the same traffic
        pair = []
        for kind in ("baseline", "changed"):
            header, _ = read_profile(tmp_path / f"chk-{kind}-{i}.prof")
            assert header["nodes"]["count"] == NODES
            sendrecv = header["functions"]["MPI_Sendrecv"]
            assert sendrecv["p2p_inter_node"][1] == 2 * STEPS * NODES * (MIB << 20)
            pair.append(sendrecv["time_s"] / sendrecv["calls"])
        per.append(pair)
    # the verdict is the judge's on the measured times per call, whichever it is (on a
    # shared virtual cluster the measured gain is not a property of the code: the
    # judge is tested on given times in tests/test_advise_measure.py)
    gains = chk["relative_gains"]
    assert chk["per_call_baseline_s"] == pytest.approx([b for b, _ in per], rel=1e-6)
    assert chk["per_call_changed_s"] == pytest.approx([c for _, c in per], rel=1e-6)
    assert gains == pytest.approx([(b - c) / b for b, c in per], rel=1e-6, abs=1e-6)
    v = stats.decide(gains, chk["predicted_relative"])
    assert (chk["verdict"], chk["exit_status"], proc.returncode) == \
        (v.verdict, v.exit_status, v.exit_status), (gains, proc.stderr[-3000:])
    assert v.interval is not None and chk["measured_interval"] == [v.interval.lo, v.interval.hi]
    # the measured and predicted gains side by side: exactly the record's own figures
    assert chk["predicted_s"] == chk["finding"]["gain_s"] > 0
    assert chk["same_sign"] == (chk["measured_s"] > 0)
    assert chk["ratio"] == pytest.approx(chk["measured_s"] / chk["predicted_s"], rel=1e-12)

def test_check_of_rails_refuses_a_pinned_launcher_line(cluster: Cluster, model: Path,
                                                       big: Path) -> None:
    proc = mpilens("advise", big, "--model", model, "--rail-interfaces", "rail0,rail1", "--check",
                   "--", *cluster.line(NODES, [1] * NODES), BUILD / "examples" / "bigexchange", 1, 1)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("mpilens: --check of rails chooses the interfaces of the changed run: "
                           "remove 'btl_tcp_if_include' from the launcher line (set the "
                           "baseline's in the environment, e.g. "
                           "OMPI_MCA_btl_tcp_if_include=<dev0>)\n")
    bad = mpilens("advise", big, "--model", model, "--rail-interfaces", "rail0")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].endswith(
        "argument --rail-interfaces: 'rail0' is invalid (accepted: two or more distinct network "
        "device names, comma-separated, such as eth0,eth1)")
