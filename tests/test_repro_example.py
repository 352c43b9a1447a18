"""The published reproducibility example (Intel 2015, docs/references.md) under MPILENS_REPRO=1.

Every rank contributes 2^-60 except two that contribute +1.0 and -1.0: the
exact sum is (P-2) * 2^-60.  Intel MPI printed 0 or 48 * 2^-60 for P = 64
depending on the layout; mpilens must print exactly 62 * 2^-60 (6 * 2^-60 for
P = 8) for every placement: holder ranks, reversed/shuffled communicator
orders and emulated multi-node layouts (tests/progs/repro_example.c), through
MPI_Reduce, MPI_Allreduce (also in place), MPI_Reduce_scatter_block and MPI_Scan.
"""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FLAVOUR, read_profile, run_mpi

COLLS = ["reduce", "reduce_last", "allreduce", "allreduce_inplace", "reduce_scatter_block", "scan"]
SERVED = {"MPI_Reduce": 2, "MPI_Allreduce": 2, "MPI_Reduce_scatter_block": 1, "MPI_Scan": 1}


def _hex(x: float) -> str:
    return struct.pack(">d", x).hex()


def _run_example(build: Path, tmp: Path, p: int, args: list[str], repro: str,
                 timeout: float = 170, run: Callable[..., subprocess.CompletedProcess] = run_mpi
                 ) -> tuple[dict[tuple[str, str], tuple[str, str]], Path]:
    proc = run(p, [build / "bin" / "mpilens-exec", build / "tests" / "repro_example", *args],
                   env={"MPILENS_REPRO": repro, "MPILENS_OUTPUT": str(tmp / "ex.prof")},
                   cwd=tmp, timeout=timeout)
    got: dict[tuple[str, str], tuple[str, str]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("case="):
            f = dict(kv.split("=", 1) for kv in line.split())
            got[(f["case"], f["coll"])] = (f["min"], f["max"])
    return got, tmp / "ex.prof"


# 64 ranks oversubscribed on two cores is quick with Open MPI (~11 s).  MPICH
# busy-polls: 8 ranks already take ~15 s for every case, 64 would take many
# minutes, so MPICH runs 16 ranks with two holder pairs per order instead.
BIG = [(64, [])] if FLAVOUR != "mpich" else [(16, ["7", "2"])]


@pytest.mark.parametrize("p,args", [(8, [])] + BIG)
def test_published_example_every_placement(p: int, args: list[str], build: Path,
                                           tmp_path: Path) -> None:
    got, prof = _run_example(build, tmp_path, p, args, "1")
    check_every_placement(got, prof, p, args)


def check_every_placement(got: dict[tuple[str, str], tuple[str, str]], prof: Path, p: int,
                          args: list[str]) -> None:
    """Exactly (p - 2) * 2^-60 for every case, and every call served by the engine
    (also run on the virtual cluster, tests/test_cluster.py)."""
    n_orders = int(args[0]) if args else 7
    n_holders = int(args[1]) if args else 5
    assert len(got) == n_orders * n_holders * len(COLLS)
    want = _hex((p - 2) * 2.0**-60)
    bad = {k: v for k, v in got.items() if v != (want, want)}
    assert not bad, f"expected {want} everywhere, got: {sorted(bad.items())[:10]}"
    # The profile shows that these calls went through the reproducible path.
    header, _ = read_profile(prof)
    cases = n_orders * n_holders
    for name, per_case in SERVED.items():
        fn = header["functions"][name]
        assert fn["calls"] == per_case * cases * p, name
        assert fn["repro_calls"] == per_case * cases * p, name
    assert header["functions"]["MPI_Gather"]["repro_calls"] == 0


def test_native_is_not_marked(build: Path, tmp_path: Path) -> None:
    got, prof = _run_example(build, tmp_path, 4, ["2", "1"], "0")
    assert len(got) == 2 * len(COLLS)
    header, _ = read_profile(prof)
    assert header["functions"]["MPI_Allreduce"]["calls"] == 2 * 2 * 4
    assert all(f.get("repro_calls", 0) == 0 for f in header["functions"].values())


def test_fortran_bindings(build: Path, tmp_path: Path) -> None:
    p = 8
    proc = run_mpi(p, [build / "bin" / "mpilens-exec", build / "tests" / "repro_fortran"],
                   env={"MPILENS_REPRO": "1", "MPILENS_PROFILE": "off"}, cwd=tmp_path)
    got = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
    s = (p - 2) * 2.0**-60
    f32 = struct.unpack(">I", struct.pack(">f", s))[0]
    assert got == {
        "dp_allreduce": _hex(s).upper(), "dp_reduce": _hex(s).upper(),
        "dp_allreduce_inplace_1": _hex(s).upper(), "dp_allreduce_inplace_2": _hex(-s).upper(),
        "real_allreduce": f"{f32:016X}",
        "dc_allreduce_re": _hex(s).upper(), "dc_allreduce_im": _hex(-s).upper(),
    }


@pytest.mark.parametrize("value", ["2", "yes"])
def test_bad_value_is_one_line(value: str, build: Path, tmp_path: Path) -> None:
    proc = run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "repro_example", "1", "1"],
                   env={"MPILENS_REPRO": value}, cwd=tmp_path, check=False, timeout=60)
    assert proc.returncode != 0
    line = f"mpilens: MPILENS_REPRO='{value}' is invalid: expected 0 or 1"
    assert proc.stderr.count(line) == 1, proc.stderr
    assert "case=" not in proc.stdout
