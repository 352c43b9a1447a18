"""One profile schema (schema/profile.json) for the C writer and the Python reader.

The C writer takes its constants and histogram labels from the generated ml_schema.h,
the reader from the generated python/mpilens/report/schema.py; here: the Python module is
current, and real profiles (written by real MPI jobs) hold exactly the schema's fields,
every required one, of the declared types."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FLAVOUR, REPO, read_profile, run_mpi
from mpilens.report import profile, schema

SCHEMA = json.loads((REPO / "schema" / "profile.json").read_text())
TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "number": (int, float), "string": (str,),
                                      "bool": (bool,), "object": (dict,), "list": (list,),
                                      "null": (type(None),)}


def test_python_module_is_generated_from_the_schema() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "schema" / "genschema.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_reader_constants_come_from_the_schema() -> None:
    c = SCHEMA["constants"]
    assert (schema.NBINS, schema.CAUTION_FACTOR, schema.ALWAYS_TIME_ABOVE_NS) == (
        c["nbins"]["value"], c["caution_factor"]["value"], c["always_time_above_ns"]["value"])
    assert profile.default_hist_labels() == SCHEMA["hist_labels"]
    assert len(SCHEMA["hist_labels"]) == schema.NBINS
    assert (profile.FORMAT, profile.VERSION) == (SCHEMA["format"], SCHEMA["version"])


def check_record(where: str, rec: dict[str, Any], name: str) -> None:
    """rec holds only the fields of schema record `name`, every required one, well typed."""
    spec = SCHEMA["records"][name]["fields"]
    assert set(rec) <= set(spec), (where, sorted(set(rec) - set(spec)))
    missing = [k for k, f in spec.items() if f.get("required") and k not in rec]
    assert not missing, (where, missing)
    for key, value in rec.items():
        f = spec[key]
        ok = tuple(t for part in f["type"].split("|") for t in TYPES[part])
        assert isinstance(value, ok) and (bool in ok or not isinstance(value, bool)), \
            (where, key, value)
        if "fields" in f:
            assert set(value) <= set(f["fields"]), (where, key, sorted(value))
        if "record" in f:
            check_record(f"{where}.{key}", value, f["record"])
        if "values" in f:
            for k, v in value.items():
                check_record(f"{where}.{key}.{k}", v, f["values"])
        if "items" in f:
            for i, v in enumerate(value):
                check_record(f"{where}.{key}[{i}]", v, f["items"])


@pytest.mark.parametrize("prog,args,env", [
    ("prof_c", ["io.dat"], {}),
    ("a2a_adaptive", ["20", "64"], {"MPILENS_ALLTOALL": "adaptive", "MPILENS_ALLTOALL_LEARN": "2",
                                    "MPILENS_ALLTOALL_CHECK": "0"}),
    ("coll_allreduce", [], {"MPILENS_COLL_ALLREDUCE": "multileader", "MPILENS_COLL_NODES": "2,1"}),
    ("coll_allreduce", ["2"], {"MPILENS_COLL": "adaptive", "MPILENS_COLL_LEARN": "3",
                               "MPILENS_COLL_NODES": "2,1"}),
    ("coll_bcast", [], {"MPILENS_COLL_BCAST": "twolevel", "MPILENS_COLL_NODES": "2,1"}),
    ("coll_allgather", [], {"MPILENS_COLL_ALLGATHER": "twolevel", "MPILENS_COLL_NODES": "2,1"}),
    ("coll_rsb", [], {"MPILENS_COLL_REDUCE_SCATTER_BLOCK": "twolevel",
                      "MPILENS_COLL_NODES": "2,1"}),
])
def test_written_profile_matches_the_schema(build: Path, tmp_path: Path, prog: str,
                                            args: list[str], env: dict[str, str]) -> None:
    if FLAVOUR == "intelmpi" and env.get("MPILENS_COLL") == "adaptive":
        # adaptive MPI_Bcast races under Intel MPI only with its point-to-point
        # intra-node collectives (docs/collectives.md, Intel MPI): the bcast section too
        env = {**env, "I_MPI_COLL_INTRANODE": "pt2pt"}
    out = tmp_path / "s.prof"
    run_mpi(3, [build / "bin" / "mpilens-exec", build / "tests" / prog,
                *[str(tmp_path / a) if a.endswith(".dat") else a for a in args]],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", **env})
    header, ranks = read_profile(out)
    check_record("header", header, "header")
    for r in ranks:
        check_record(f"rank {r['rank']}", r, "rank")
    assert header["hist_labels"] == SCHEMA["hist_labels"]
    assert header["caution_factor"] == SCHEMA["constants"]["caution_factor"]["value"]
    assert header["timing"]["always_above_ns"] == SCHEMA["constants"]["always_time_above_ns"]["value"]
    assert header["timing"]["warmup_calls"] == SCHEMA["constants"]["warmup_calls"]["value"]
    assert header["timing"]["sample_period"] == SCHEMA["constants"]["sample_period"]["value"]
    if prog == "a2a_adaptive":  # the engine's section, with its own version
        assert header["sections"] == {"alltoall": SCHEMA["records"]["alltoall"]["version"]}
        assert [e["bytes"] for e in header["alltoall"]] == [64]
    elif prog == "coll_allreduce":
        assert header["sections"] == {"coll": SCHEMA["records"]["coll"]["version"]}
        sec = header["coll"]["allreduce"]
        if env.get("MPILENS_COLL") == "adaptive":  # learned rows (8 calls or more a class, races of 6), with ratios
            assert sum(sec["calls"].values()) == 3 * 80 * 2
            assert {r["source"] for r in sec["choices"]} == {"learned"}
            assert any("ratio" in r for r in sec["choices"])
        else:
            assert sec["calls"]["twolevel"] == 3 * 80
        assert ("bcast" in header["coll"]) == (env.get("MPILENS_COLL") == "adaptive")
    elif prog == "coll_bcast":  # 2 x (3 roots x 4 types x 3 counts + 1) calls a rank
        assert header["sections"] == {"coll": SCHEMA["records"]["coll"]["version"]}
        assert list(header["coll"]) == ["bcast"]
        assert header["coll"]["bcast"]["calls"] == {"mpi": 0, "twolevel": 3 * 74,
                                                    "scatterallgather": 0}
    elif prog == "coll_allgather":  # 3 x (4 types x 3 counts + 1) x 2 calls a rank
        assert header["sections"] == {"coll": SCHEMA["records"]["coll"]["version"]}
        assert list(header["coll"]) == ["allgather"]
        assert header["coll"]["allgather"]["calls"] == {"mpi": 0, "twolevel": 3 * 78,
                                                        "multileader": 0}
    elif prog == "coll_rsb":  # 3 x (4 types x 3 counts x 2 + 1) calls a rank
        assert header["sections"] == {"coll": SCHEMA["records"]["coll"]["version"]}
        assert list(header["coll"]) == ["reduce_scatter_block"]
        assert header["coll"]["reduce_scatter_block"]["calls"] == {"mpi": 0, "twolevel": 3 * 75,
                                                                   "multileader": 0}
    else:
        assert "sections" not in header and "alltoall" not in header
    assert profile.load(out).nranks == 3


def test_newer_section_version_is_refused(build: Path, tmp_path: Path) -> None:
    out = tmp_path / "n.prof"
    run_mpi(2, [build / "bin" / "mpilens-exec", build / "tests" / "prof_small"],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    lines = out.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["sections"] = {"alltoall": schema.SECTION_VERSIONS["alltoall"] + 1}
    out.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    with pytest.raises(profile.UserError, match="section 'alltoall' version 2 is newer"):
        profile.load(out)
