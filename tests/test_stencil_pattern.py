"""Halo exchanges on 2 x 2, 3 x 3 and 2 x 2 x 2 grids (tests/progs/stencil_halo.c), with and
without MPI_Cart_create, and on graph topologies: the profile records the topology the
program created and every message exactly; the report calls the traffic a stencil with
the grid's dimensions (or graph-neighbour), and reports self-sends apart."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import pytest
from conftest import FLAVOUR, read_profile, run_mpi
from mpilens.report.stencil import coords
from mpilens.units import fmt_bytes
from test_cli_support import mpilens_inproc

ITER, SELF_BYTES = 3, 40  # as in stencil_halo.c


def neighbour(r: int, dims: list[int], periods: list[int], k: int, d: int) -> int | None:
    c = coords(r, dims)
    c[k] += d
    if not 0 <= c[k] < dims[k]:
        if not periods[k]:
            return None
        c[k] %= dims[k]
    return int(sum(x * math.prod(dims[j + 1:]) for j, x in enumerate(c)))


def expected_peers(r: int, dims: list[int], periods: list[int]) -> tuple[dict, dict]:
    """peer -> [messages, bytes] sent and received by rank r (stencil_halo.c's loop)."""
    sent: dict[int, list[int]] = {}
    recv: dict[int, list[int]] = {}
    for k, d in itertools.product(range(len(dims)), (-1, 1)):
        size = 64 * (k + 1)
        for peers, q in ((sent, neighbour(r, dims, periods, k, d)),
                         (recv, neighbour(r, dims, periods, k, -d))):
            if q is not None:
                e = peers.setdefault(q, [0, 0])
                e[0] += ITER
                e[1] += ITER * size
    for peers in (sent, recv):  # the self-sends
        e = peers.setdefault(r, [0, 0])
        e[0] += ITER
        e[1] += ITER * SELF_BYTES
    return sent, recv


def run(build: Path, tmp_path: Path, mode: str, dims: list[int], periods: list[int]
        ) -> tuple[Path, dict[int, int]]:
    """Profile of stencil_halo; world rank -> topology rank as the program printed it."""
    out = tmp_path / f"{mode}.prof"
    n = math.prod(dims)
    proc = run_mpi(n, [build / "bin" / "mpilens-exec", build / "tests" / "stencil_halo", mode,
                       "x".join(map(str, dims)), ",".join(map(str, periods)), "self"],
                   env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    topo_rank = {int(w): int(t) for w, t in
                 re.findall(r"stencil_halo: rank=(\d+) topo_rank=(\d+)", proc.stdout)}
    assert sorted(topo_rank) == list(range(n)), proc.stdout
    return out, topo_rank


def check_traffic(path: Path, dims: list[int], periods: list[int]) -> dict:
    """Every message in the profile; the report's communication section."""
    n = math.prod(dims)
    _, lines = read_profile(path)
    for line in lines:
        sent, recv = expected_peers(line["rank"], dims, periods)
        assert {p: [m, b] for p, m, b in line["peers"]["sent"]} == sent
        assert {p: [m, b] for p, m, b in line["peers"]["recv"]} == recv
    proc = mpilens_inproc("report", path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    cp = json.loads(proc.stdout)["communication"]
    assert cp["self_traffic"] == {"bytes": n * ITER * SELF_BYTES, "ranks": list(range(n))}
    pair_bytes: dict[tuple[int, int], int] = {}
    for r in range(n):
        for q, (_, b) in expected_peers(r, dims, periods)[0].items():
            if q != r:
                key = (min(r, q), max(r, q))
                pair_bytes[key] = pair_bytes.get(key, 0) + b
    heaviest = sorted(({"a": a, "b": b, "bytes": v} for (a, b), v in pair_bytes.items()),
                      key=lambda p: (-p["bytes"], p["a"], p["b"]))[:5]
    assert cp["heaviest_pairs"] == heaviest  # never a rank with itself
    assert cp["total_bytes"] == sum(pair_bytes.values())
    text = mpilens_inproc("report", path).stdout
    assert not re.search(r"\b(\d+) <-> \1\b", text)
    assert (f"Self-traffic (point-to-point messages a rank sent to itself; not a peer pair): "
            f"{fmt_bytes(n * ITER * SELF_BYTES)} on {n} ranks") in " ".join(text.split())
    return cp


# (dims, periods): the three grids, periodic and not; MPICH busy-polls when
# oversubscribed (2 cores), so it runs the 9-rank grid once and the 8-rank grid once
GRIDS = [([2, 2], [0, 0]), ([3, 3], [1, 1]), ([2, 2, 2], [0, 1, 0])]
if FLAVOUR == "openmpi":
    GRIDS.append(([3, 3], [1, 0]))


@pytest.mark.parametrize("mode", ["cart", "manual"])
@pytest.mark.parametrize("dims,periods", GRIDS, ids=lambda v: "x".join(map(str, v)))
def test_cartesian_halo_is_a_stencil(build: Path, tmp_path: Path, mode: str, dims: list[int],
                                     periods: list[int]) -> None:
    path, topo_rank = run(build, tmp_path, mode, dims, periods)
    header, _ = read_profile(path)
    cp = check_traffic(path, dims, periods)
    assert cp["pattern"] == "stencil", cp["reason"]
    st = cp["stencil"]
    assert (st["dims"], st["neighbours"], st["share_pct"], st["coverage_pct"]) == (
        dims, "faces", 100.0, 100.0)
    if mode == "cart":
        world = [w for w, _ in sorted(topo_rank.items(), key=lambda kv: kv[1])]
        assert header["topologies"] == [{"kind": "cart", "dims": dims,
                                         "periods": [bool(p) for p in periods], "ranks": world}]
        assert header["topologies_dropped"] == 0
        assert (st["grid"], st["periods"]) == ("MPI_Cart_create", [bool(p) for p in periods])
        assert "the application's MPI_Cart_create grid" in cp["reason"]
    else:
        assert header["topologies"] == [] and header["topologies_dropped"] == 0
        # a dimension of size 2 looks the same periodic or not
        assert st["grid"] == "inferred"
        assert st["periods"] == [bool(p) if d > 2 else None for d, p in zip(dims, periods)]
        assert "grid inferred from the peer offsets" in cp["reason"]
    shape = " x ".join(map(str, dims))
    assert cp["reason"].startswith(f"{len(dims)}-D stencil on a {shape} grid (")
    assert f"{2 * len(dims) + 1}-point (face neighbours)" in cp["reason"]


@pytest.mark.parametrize("mode,kind,maker", [
    ("graph", "graph", "MPI_Graph_create"),
    ("distgraph", "dist_graph", "MPI_Dist_graph_create"),
    ("distgraph1", "dist_graph", "MPI_Dist_graph_create")])
def test_graph_topology_recorded_and_followed(build: Path, tmp_path: Path, mode: str, kind: str,
                                              maker: str) -> None:
    dims, periods = [2, 2], [0, 0]
    path, topo_rank = run(build, tmp_path, mode, dims, periods)
    header, _ = read_profile(path)
    [topo] = header["topologies"]
    world = [w for w, _ in sorted(topo_rank.items(), key=lambda kv: kv[1])]
    assert (topo["kind"], topo["ranks"]) == (kind, world)
    want = [sorted({q for k, d in itertools.product(range(2), (-1, 1))
                    if (q := neighbour(t, dims, periods, k, d)) is not None}) for t in range(4)]
    assert [sorted(e) for e in topo["edges"]] == want
    cp = check_traffic(path, dims, periods)
    assert cp["pattern"] == "graph-neighbour"
    assert cp["reason"] == (f"100 % of the bytes follow the edges of the application's {maker} "
                            "topology (topologies[0], 4 ranks)")


def test_topologies_beyond_the_limit_are_counted(build: Path, tmp_path: Path) -> None:
    """At most 16 topologies are written; the others are counted (docs/profile-format.md)."""
    out = tmp_path / "many.prof"
    run_mpi(4, [build / "bin" / "mpilens-exec", build / "tests" / "stencil_halo", "cart", "2x2",
                "1,1", "noself", "20"], env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    header, lines = read_profile(out)
    cart = {"kind": "cart", "dims": [2, 2], "periods": [True, True], "ranks": [0, 1, 2, 3]}
    assert header["topologies"] == [cart] * 16 and header["topologies_dropped"] == 4
    assert all(ln["functions"]["MPI_Cart_create"]["calls"] == 20 for ln in lines)
    proc = mpilens_inproc("report", out)
    assert proc.returncode == 0 and "4 more not recorded" in proc.stdout
