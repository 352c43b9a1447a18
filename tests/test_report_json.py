"""`report --format json` is written in pieces (report/jsonout.py): the bytes must be
those of json.dump(limits.strict(data), indent=1, allow_nan=False), the reference,
on a real profile made bigger (per-rank call sites, node rows, time line) and on
values chosen to differ (NaN, infinities, -0.0, 2^64-1, empty rows, numpy columns)."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, read_profile
from mpilens.report import jsonout, limits
from mpilens.report.profile import load
from test_cli_support import mpilens_inproc, real_profile


def _reference(data: object) -> str:
    out = io.StringIO()
    json.dump(limits.strict(data), out, indent=1, allow_nan=False)
    return out.getvalue()


def _pieces(data: object) -> str:
    out = io.StringIO()
    jsonout.dump(data, out)
    return out.getvalue()


def test_values_that_differ_are_written_as_json_writes_them() -> None:
    inf, nan = math.inf, math.nan
    floats = [0.1, -0.0, 1e-7, 1e16, 2.5e-300, 123456789.123, nan, inf, -inf, 3.0]
    ints = [0, -1, 2**63, 2**64 - 1, 7]
    many = (floats + ints + [None]) * 4
    rows = [floats * 4, [], [1, 2.5, None] * 11, ints * 7]
    rec = jsonout.Records(("rank", "node", "t"),
                          [np.arange(40, dtype=np.int64), [None, 1] * 20,
                           np.array(floats * 4)])
    data = {"many": many, "rows": rows * 10, "short": floats[:3], "rec": rec,
            "empty_rec": jsonout.Records(("a",), [[]]), "tuple": tuple(many), 7: "int key",
            "nested": {"deep": [{"rec": rec, "bools": [True, False] * 20}]},
            "mixed": [1, "two", 3.0] * 20, "npfloat": [np.float64(0.1)] * 40,
            "grid": jsonout.Rows(np.array([floats * 4] * 50)), "no_rows": jsonout.Rows(
                np.zeros((0, 3))), "int_rows": jsonout.Rows(np.arange(12).reshape(3, 4))}
    assert _pieces(data) == _reference(data)
    assert rec[3] == {"rank": 3, "node": 1, "t": 1e16} and type(rec[3]["rank"]) is int
    assert [r["rank"] for r in rec] == list(range(40)) and len(rec) == 40
    assert rec[-2:] == list(rec)[-2:] == [{"rank": 38, "node": None, "t": -inf},
                                          {"rank": 39, "node": 1, "t": 3.0}]


def test_report_json_of_a_synthesized_profile_is_the_reference(build, tmp_path: Path) -> None:
    """300 ranks of a real heat2d profile (bench/reader/synth.py, 8 per node): call sites
    with 300 per-rank entries, 300 node rows and a 300 x bins time line."""
    big = tmp_path / "s300.prof"
    subprocess.run([sys.executable, str(REPO / "bench/reader/synth.py"), str(real_profile(4)),
                    "300", str(big), "--per-node", "8"], check=True, stdout=subprocess.DEVNULL)
    from mpilens.commands.report import report_data

    args = Namespace(region=None, top=None, ranks=None, callsite=None, function=None)
    data = report_data(args, load(big))
    assert len(data["callsites"]) >= 3
    assert all(len(c["per_rank"]) == 300 for c in data["callsites"])
    assert len(data["nodes"]["ranks"]) == 300 and len(data["timeline"]["mpi_fraction"]) == 300
    ref = _reference(data) + "\n"
    r = mpilens_inproc("report", "--format", "json", big)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ref
    # rank 299 is a copy of the real rank 3 (299 mod 4), on node 299 // 8
    _, lines = read_profile(real_profile(4))
    fns = lines[3]["functions"].values()
    intra = [sum(f.get("p2p_intra_node", [0, 0])[k] for f in fns) for k in (0, 1)]
    inter = [sum(f.get("p2p_inter_node", [0, 0])[k] for f in fns) for k in (0, 1)]
    assert json.loads(r.stdout)["nodes"]["ranks"][299] == {
        "rank": 299, "node": 37, "intra_msgs": intra[0], "intra_bytes": intra[1],
        "inter_msgs": inter[0], "inter_bytes": inter[1]}
    assert intra[0] > 0


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, jsonout.CHUNK + 1])
def test_lengths_around_the_chunks(n: int) -> None:
    data = {"x": [0.5] * n, "r": jsonout.Records(("a", "b"), [list(range(n)), [1.5] * n]),
            "rows": [[1, 2]] * n, "grid": jsonout.Rows(np.full((n, 2), 0.25))}
    assert _pieces(data) == _reference(data)
