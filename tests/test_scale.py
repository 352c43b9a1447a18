"""Profiles at scale (issue 29, docs/scale.md): compressed profiles (one gzip member for
the header, one per block of MPILENS_COMPRESS_GROUP ranks) read as the plain ones; the header's totals equal the
sums of the rank lines, and the report says so when they do not; the spread over
ranks and nodes with exact figures on a synthesized 10,000-rank profile whose
per-rank values are known; sparse traffic and heat maps binned to <= 256 cells."""

from __future__ import annotations

import gzip
import json
import statistics
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import BUILD, REPO, read_profile, run_mpi
from mpilens.errors import UserError
from mpilens.report import commpattern, spread
from mpilens.report.profile import load
from test_cli_support import EVERY, STEPS, N, example, mpilens_inproc

P = 4
EXEC = BUILD / "bin" / "mpilens-exec"


def members(data: bytes) -> list[bytes]:
    """The decompressed gzip members of a file, in order."""
    out = []
    while data:
        z = zlib.decompressobj(31)
        out.append(z.decompress(data))
        assert z.eof, "a gzip member is incomplete"
        data = z.unused_data
    return out


@pytest.fixture(scope="module")
def gz_and_plain(build, tmp_path_factory) -> tuple[Path, Path, Path]:
    d = tmp_path_factory.mktemp("scale")
    app = [EXEC, example("heat2d"), N, STEPS, EVERY]
    gz, plain, forced = d / "run.prof.gz", d / "run.prof", d / "forced.prof"
    run_mpi(P, app, env={"MPILENS_OUTPUT": str(gz), "MPILENS_QUIET": "1"})
    run_mpi(P, app, env={"MPILENS_OUTPUT": str(plain), "MPILENS_QUIET": "1"})
    run_mpi(P, app, env={"MPILENS_OUTPUT": str(forced), "MPILENS_QUIET": "1",
                         "MPILENS_COMPRESS": "gzip"})
    return gz, plain, forced


def test_compressed_profile_is_one_gzip_stream(gz_and_plain) -> None:
    gz, plain, forced = gz_and_plain
    raw = gz.read_bytes()
    parts = members(raw)
    # the header, then one member for the block of MPILENS_COMPRESS_GROUP (16) ranks
    assert len(parts) == 2 and parts[0].count(b"\n") == 1 and parts[1].count(b"\n") == P
    assert all(p.endswith(b"\n") for p in parts)
    header = json.loads(parts[0])
    assert header["format"] == "mpilens-profile" and header["nranks"] == P
    assert [json.loads(ln)["rank"] for ln in parts[1].splitlines()] == list(range(P))
    assert gzip.decompress(raw) == b"".join(parts)  # what gunzip and zcat read
    assert plain.read_bytes()[:2] != b"\x1f\x8b"      # auto: a name without .gz stays plain
    assert len(members(forced.read_bytes())) == 2  # MPILENS_COMPRESS=gzip


def test_compressed_and_plain_read_the_same(gz_and_plain, tmp_path) -> None:
    gz, _, _ = gz_and_plain
    unpacked = tmp_path / "unpacked.prof"
    unpacked.write_bytes(gzip.decompress(gz.read_bytes()))
    a = json.loads(mpilens_inproc("report", gz, "--format", "json").stdout)
    b = json.loads(mpilens_inproc("report", unpacked, "--format", "json").stdout)
    a["summary"]["profile"] = b["summary"]["profile"] = ""
    assert a == b
    # and the per-rank CSV, and a diff of the two: no change anywhere
    assert mpilens_inproc("report", gz, "--format", "csv", "--ranks").stdout == \
        mpilens_inproc("report", unpacked, "--format", "csv", "--ranks").stdout
    d = json.loads(mpilens_inproc("diff", gz, unpacked, "--format", "json").stdout)
    assert all(r["time_change_s"] == 0 and r["calls_change"] == 0 for r in d["functions"])


def test_compress_off_keeps_plain(build, tmp_path) -> None:
    out = tmp_path / "plain.prof.gz"
    run_mpi(2, [EXEC, example("heat2d"), N, STEPS, EVERY],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", "MPILENS_COMPRESS": "off"})
    header, lines = read_profile(out)  # plain text despite the name
    assert header["nranks"] == 2 and len(lines) == 2


def test_truncated_compressed_profile_one_line(gz_and_plain, tmp_path) -> None:
    gz, _, _ = gz_and_plain
    cut = tmp_path / "cut.prof.gz"
    cut.write_bytes(gz.read_bytes()[: len(gz.read_bytes()) - 40])
    proc = mpilens_inproc("report", cut)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"mpilens: {cut}: truncated compressed profile"]


def test_header_totals_equal_rank_lines(gz_and_plain) -> None:
    """The one packed reduction of MPI_Finalize gives what the rank lines sum to."""
    _, plain, _ = gz_and_plain
    header, lines = read_profile(plain)
    for name, f in header["functions"].items():
        per = [ln["functions"].get(name, {}) for ln in lines]
        assert f["calls"] == sum(x.get("calls", 0) for x in per), name
        assert f.get("bytes_sent", 0) == sum(x.get("bytes_sent", 0) for x in per), name
        assert f.get("bytes_recv", 0) == sum(x.get("bytes_recv", 0) for x in per), name
        for key in ("hist_send", "hist_recv"):
            if key in f:
                assert f[key] == [sum(x.get(key, [0] * 25)[i] for x in per) for i in range(25)]
        calls = [x.get("calls", 0) for x in per]
        assert f["calls_per_rank"] == {"min": min(calls), "max": max(calls)}, name
        times = [x.get("time_s", 0.0) for x in per]
        # the rank lines' times have 8 significant digits (docs/profile-format.md), the
        # header's 9: they agree within the reader's TIME_RTOL (1e-6)
        assert f["rank_time_s"]["max"] == pytest.approx(max(times), rel=1e-6)
        assert times[f["rank_time_s"]["max_rank"]] == pytest.approx(max(times), rel=1e-6)
        assert f["time_s"] == pytest.approx(sum(times), rel=1e-6)
    assert header["wall_s"]["max"] == pytest.approx(max(ln["wall_s"] for ln in lines), rel=1e-6)
    assert header["mpi_s"]["min"] == pytest.approx(min(ln["mpi_s"] for ln in lines), rel=1e-6)
    data = json.loads(mpilens_inproc("report", plain, "--format", "json").stdout)
    assert data["header_check"] == {"ok": True, "mismatches": []}
    assert "header's totals differ" not in mpilens_inproc("report", plain).stdout


def test_report_says_when_header_and_rank_lines_differ(gz_and_plain, tmp_path) -> None:
    _, plain, _ = gz_and_plain
    header, lines = read_profile(plain)
    truth = sum(ln["functions"]["MPI_Isend"]["calls"] for ln in lines)
    header["functions"]["MPI_Isend"]["calls"] = truth - 13  # as MPICH issue 6893 did
    bad = tmp_path / "bad.prof"
    bad.write_text("\n".join(json.dumps(x) for x in [header, *lines]) + "\n")
    data = json.loads(mpilens_inproc("report", bad, "--format", "json").stdout)
    assert data["header_check"] == {"ok": False, "mismatches": [
        {"function": "MPI_Isend", "field": "calls", "header": truth - 13, "rank_lines": truth}]}
    text = mpilens_inproc("report", bad).stdout
    assert (f"the header's totals differ from the sums of the rank lines in 1 value "
            f"(MPI_Isend calls: header {truth - 13:,}, rank lines {truth:,})") in text
    assert "totals differ from the sums of the rank lines" in mpilens_inproc("html", bad, "-o", tmp_path / "b.html"
                                                      ).stdout + (tmp_path / "b.html").read_text()


# ---- the views at scale on a synthesized profile with known per-rank values ----

NR = 10_000
PER_NODE = 40
OUT_RANKS = (17, 4242, 9999)      # far above the rest: outliers
MSG = 1000                        # bytes each rank sends to rank + 1 (a ring)


def mpi_of(i: int) -> float:
    return 70.0 if i in OUT_RANKS else 1.0 + (i % 10) * 0.01


def synth_profile(path: Path) -> None:
    base, _ = read_profile(Path(__file__).parent / "data" / "profile_v1.prof")
    h = dict(base)
    nodes = NR // PER_NODE
    mpi = [mpi_of(i) for i in range(NR)]
    wall = [m + 1.0 for m in mpi]
    h.update(nranks=NR, hosts=[f"h{j}" for j in range(nodes)], ranks_per_host=[PER_NODE] * nodes,
             wall_s={"min": min(wall), "mean": sum(wall) / NR, "max": max(wall)},
             mpi_s={"min": min(mpi), "mean": sum(mpi) / NR, "max": max(mpi)})
    h.pop("topologies", None)
    h["functions"] = {"MPI_Send": {
        "calls": NR, "time_s": sum(mpi), "time_min_s": min(mpi), "time_max_s": max(mpi),
        "rank_time_s": {"min": min(mpi), "mean": sum(mpi) / NR, "max": max(mpi),
                        "max_rank": OUT_RANKS[0]},
        "calls_per_rank": {"min": 1, "max": 1}, "bytes_sent": NR * MSG, "bytes_recv": 0}}
    with path.open("w") as f:
        f.write(json.dumps(h) + "\n")
        for i in range(NR):
            f.write(json.dumps({
                "rank": i, "host": f"h{i // PER_NODE}", "node": i // PER_NODE, "pid": i,
                "wall_s": wall[i], "mpi_s": mpi[i], "threads": 1, "untracked_requests": 0,
                "functions": {"MPI_Send": {"calls": 1, "time_s": mpi[i], "time_min_s": mpi[i],
                                           "time_max_s": mpi[i], "bytes_sent": MSG,
                                           "bytes_recv": 0}},
                "peers": {"sent": [[(i + 1) % NR, 1, MSG]], "recv": [[(i - 1) % NR, 1, MSG]]}})
                + "\n")


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "synth.prof"
    synth_profile(path)
    return path


def quantile(sorted_v: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, computed apart)."""
    pos = q * (len(sorted_v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (sorted_v[hi] - sorted_v[lo]) * (pos - lo)


def test_spread_over_ranks_exact(big) -> None:
    prof = load(big)
    s = spread.rank_spread(prof)
    assert s is not None
    v = [mpi_of(i) for i in range(NR)]
    sv = sorted(v)
    assert s["ranks"] == NR
    for key, q in (("min", 0.0), ("p1", 0.01), ("p25", 0.25), ("p50", 0.5), ("p75", 0.75),
                   ("p99", 0.99), ("max", 1.0)):
        assert s["quantiles_s"][key] == pytest.approx(quantile(sv, q), rel=1e-12), key
    assert [r["rank"] for r in s["top"]] == [17, 4242, 9999, 9, 19]     # ties: lower rank first
    assert [r["rank"] for r in s["bottom"]] == [0, 10, 20, 30, 40]
    med = statistics.median(v)
    mad = statistics.median(abs(x - med) for x in v)
    assert s["median_s"] == pytest.approx(med) and s["mad_s"] == pytest.approx(mad)
    # the three slow ranks and nothing else: |t - med| / (1.4826 MAD) of the others <= 3.5
    assert s["outliers_count"] == 3 and s["outliers_high"] == 3
    assert sorted(o["rank"] for o in s["outliers"]) == list(OUT_RANKS)
    counts = s["histogram"]["counts"]
    assert sum(counts) == NR and counts[-1] == 3 and counts[0] == NR - 3  # 1.0..1.09 in bin 0


def test_spread_healthy_has_no_outliers(tmp_path) -> None:
    """MAD = 0 (most ranks equal) or a narrow spread: no outlier is called."""
    path = tmp_path / "flat.prof"
    synth_profile(path)
    prof = load(path)
    t = prof.columns()
    t.mpi_s[list(OUT_RANKS)] = 1.05  # the slow ranks made regular: 1.00 .. 1.09 only
    s = spread.rank_spread(prof)
    assert s is not None and s["outliers_count"] == 0 and s["outliers"] == []
    assert s["outliers_note"] is None
    t.mpi_s[:] = 2.0  # every rank alike: MAD = 0, no score, nothing called
    s = spread.rank_spread(prof)
    assert s is not None and s["outliers_count"] == 0 and s["outliers_note"]


def test_spread_per_node_exact(big) -> None:
    ns = spread.node_spread(load(big))
    assert ns is not None and ns["nodes"] == NR // PER_NODE
    rows = ns["rows"]
    for j in (0, 106, 249):
        ranks = range(j * PER_NODE, (j + 1) * PER_NODE)
        assert rows[j]["ranks"] == PER_NODE and rows[j]["host"] == f"h{j}"
        assert rows[j]["mpi_s"] == pytest.approx(sum(mpi_of(i) for i in ranks))
        assert rows[j]["bytes_sent"] == PER_NODE * MSG
    # 17 is on node 0, 4242 on node 106, 9999 on node 249: the three slowest nodes, in the
    # order of the rest of their ranks (a node sums 4 x 1.00..1.09 less the slow rank's
    # regular value: 1.02 at 4242, 1.07 at 17, 1.09 at 9999)
    assert [r["node"] for r in ns["top"][:3]] == [106, 0, 249]
    means = [sum(mpi_of(i) for i in range(j * PER_NODE, (j + 1) * PER_NODE)) / PER_NODE
             for j in range(NR // PER_NODE)]
    assert ns["imbalance"] == pytest.approx(max(means) / (sum(means) / len(means)))


def test_report_text_shows_distributions_not_rows(big) -> None:
    text = mpilens_inproc("report", big).stdout
    assert "Spread over ranks" in text and "Spread over nodes" in text
    assert "Outliers: 3 ranks (3 above the median)" in text
    assert "Per rank (time in MPI" not in text  # the full table only on request
    assert text.count("\n") < 400


def test_sparse_traffic_and_binned_heat_map(big, tmp_path) -> None:
    prof = load(big)
    m = commpattern.matrix(prof)
    assert m is not None and len(m.nbytes) == NR  # one entry per (source, destination)
    cells, per = m.binned(256)
    assert per == 40 and cells.shape == (250, 250)
    assert cells.sum() == NR * MSG
    # a ring: the bytes sit on the diagonal, and the wrap from rank 9999 to 0 in a corner
    assert cells[249, 0] == MSG and np.trace(cells) == (NR - 250) * MSG
    cp = commpattern.summary(prof)
    assert cp["pattern"] == "stencil" and cp["stencil"]["dims"] == [NR]
    assert cp["heaviest_pairs"][0] == {"a": 0, "b": 1, "bytes": MSG}
    page = tmp_path / "big.html"
    assert mpilens_inproc("html", big, "-o", page).returncode == 0
    assert page.stat().st_size < 5 * 2**20
    assert "Spread over ranks and nodes" in page.read_text()


def test_node_matrix_on_request(gz_and_plain) -> None:
    from mpilens.units import fmt_bytes

    _, plain, _ = gz_and_plain
    header, lines = read_profile(plain)
    mb, mm = header["nodes"]["matrix_bytes"], header["nodes"]["matrix_msgs"]
    # one host: one node, every point-to-point byte sent stays on it
    sent = sum(b for ln in lines for _, _, b in ln["peers"]["sent"])
    assert mb == [[sent]] and mm == [[sum(m for ln in lines for _, m, _ in ln["peers"]["sent"])]]
    data = json.loads(mpilens_inproc("report", plain, "--format", "json").stdout)
    assert data["nodes"]["matrix_bytes"] == mb and data["nodes"]["matrix_msgs"] == mm
    assert [r["p2p_intra_bytes"] for r in data["ranks"]] == \
        [sum(b for _, _, b in ln["peers"]["sent"]) for ln in lines]
    text = mpilens_inproc("report", plain, "--node-matrix").stdout
    assert f"   0  {fmt_bytes(sent)}  {header['hosts'][0]}" in text
    assert "Node matrix" not in mpilens_inproc("report", plain).stdout


def test_ranks_all_on_request(big) -> None:
    """At 10,000 ranks the per-rank rows come only with --ranks all (JSON, CSV)."""
    data = json.loads(mpilens_inproc("report", big, "--format", "json").stdout)
    assert data["ranks"] is None
    assert data["ranks_omitted"].startswith("10,000 ranks: the per-rank rows only with "
                                            "--ranks all")
    assert data["rank_spread"]["ranks"] == NR  # the spreads stand for them
    full = json.loads(mpilens_inproc("report", big, "--format", "json", "--ranks", "all").stdout)
    rows = full["ranks"]
    assert "ranks_omitted" not in full and len(rows) == NR
    assert [r["rank"] for r in rows] == list(range(NR))
    r = rows[4242]
    assert (r["node"], r["host"], r["mpi_s"], r["wall_s"], r["calls"]) == (106, "h106", 70.0,
                                                                          71.0, 1)
    assert r["bytes_sent"] == MSG and r["bytes_recv"] == 0
    assert [x["mpi_s"] for x in rows] == [mpi_of(i) for i in range(NR)]
    out = mpilens_inproc("report", big, "--format", "csv", "--ranks", "all").stdout
    lines = out.splitlines()
    assert len(lines) == 1 + NR and lines[0].startswith("rank,host,node,wall_s,mpi_s,")
    assert lines[1 + 9999].startswith("9999,h249,249,71.0,70.0,")
    bad = mpilens_inproc("report", big, "--ranks", "some")
    assert bad.returncode == 2 and "invalid choice: 'some'" in bad.stderr


def test_ranks_alone_means_all(gz_and_plain) -> None:
    _, plain, _ = gz_and_plain
    for fmt in (("--format", "csv"), ("--width", "250")):
        alone = mpilens_inproc("report", plain, *fmt, "--ranks").stdout
        assert alone == mpilens_inproc("report", plain, *fmt, "--ranks", "all").stdout
    assert "Per rank (time in MPI" in alone and alone.count("\n") > P


def test_node_matrix_from_rank_lines(big) -> None:
    """Without a node matrix in the header (more than 256 nodes, or none written), the
    matrix is summed from the rank lines' sparse peers: its non-zero cells, exact."""
    pairs = spread.node_pairs(load(big))
    nodes = NR // PER_NODE
    # a ring of 40 ranks per node: 39 messages stay on each node, one goes to the next
    want = [{"from": j, "to": j, "from_host": f"h{j}", "to_host": f"h{j}",
             "messages": PER_NODE - 1, "bytes": (PER_NODE - 1) * MSG} for j in range(nodes)]
    want += [{"from": j, "to": (j + 1) % nodes, "from_host": f"h{j}",
              "to_host": f"h{(j + 1) % nodes}", "messages": 1, "bytes": MSG}
             for j in range(nodes)]
    assert pairs == want
    text = mpilens_inproc("report", big, "--node-matrix").stdout
    assert "Node matrix from the rank lines (500 node pairs with traffic" in text
    assert "   249      0              1       1000 B  h249 -> h0" in text


def _with_lines(src: Path, dst: Path, edit) -> None:  # type: ignore[no-untyped-def]
    header, lines = read_profile(src)
    edit(lines)
    dst.write_text("".join(json.dumps(x) + "\n" for x in [header, *lines]))


def test_time_lines_checked_in_batches_name_the_first_bad_line(gz_and_plain, tmp_path) -> None:
    """The time lines' values are checked a batch at a time (numpy): a bad value is still
    refused with the exact message, and the first bad line in file order is the one named,
    even when a later line is bad in another way; a JSON true is not a count."""
    _, plain, _ = gz_and_plain

    def bool_in_rank1(lines):  # type: ignore[no-untyped-def]
        lines[1]["timeline"]["calls"][0][0] = True

    def also_rank3(lines):  # type: ignore[no-untyped-def]
        bool_in_rank1(lines)
        lines[3]["wall_s"] = -1.0

    def negative_time_last(lines):  # type: ignore[no-untyped-def]
        lines[-1]["timeline"]["time_s"][1][2] = -0.5

    for edit, where, shown, expected in (
            (bool_in_rank1, "rank 1 timeline.calls[0][0]", "True", "a count"),
            (also_rank3, "rank 1 timeline.calls[0][0]", "True", "a count"),
            (negative_time_last, f"rank {P - 1} timeline.time_s[1][2]", "-0.5", "")):
        bad = tmp_path / f"{edit.__name__}.prof"
        _with_lines(plain, bad, edit)
        with pytest.raises(UserError) as e:
            load(bad)
        assert str(e.value).startswith(f"{bad}: corrupted profile: {where} is {shown}, "
                                       f"expected {expected}"), str(e.value)


def test_orjson_and_json_read_the_same(gz_and_plain, tmp_path, monkeypatch) -> None:
    """orjson (when installed) and the standard library read a profile the same: the same
    columns, and the same message for what orjson reads differently (an integer beyond
    64 bits, NaN)."""
    from mpilens.report import fastjson

    _, plain, _ = gz_and_plain
    big_int = tmp_path / "bigint.prof"
    _with_lines(plain, big_int, lambda ls: ls[2]["functions"]["MPI_Isend"].update(
        calls=2**64))
    nan = tmp_path / "nan.prof"
    _with_lines(plain, nan, lambda ls: ls[0].update(mpi_s=float("nan")))

    def outcome(path: Path) -> object:
        try:
            t = load(path).columns()
        except UserError as exc:
            return str(exc)
        return (t.mpi_s.tolist(), t.calls.tolist(), t.fn_time.tolist(), t.sums)

    with_orjson = [outcome(p) for p in (plain, big_int, nan)]
    monkeypatch.setattr(fastjson, "orjson", None)
    assert [outcome(p) for p in (plain, big_int, nan)] == with_orjson
    assert "MPI_Isend.calls is 18446744073709551616, expected a count" in str(with_orjson[1])
    assert "mpi_s is nan" in str(with_orjson[2])


def _digits(text: str) -> int:
    """Significant digits of a JSON number as written (0 for a zero)."""
    mant = text.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    return len(mant)


def test_rank_lines_times_have_few_digits(gz_and_plain) -> None:
    """The rank lines' times are written with the digits they carry (docs/profile-format.md,
    Numbers): sums 8 significant digits, a call's shortest and longest 5, the time line's
    cells 4; the header keeps 9 for its sums.  heat2d's timed calls make every kind."""
    import re
    _, plain, _ = gz_and_plain
    text = plain.read_text().splitlines()
    number = r'(-?[0-9][0-9.eE+-]*)'
    seen = {8: 0, 5: 0, 4: 0}
    for raw in text[1:]:
        for key, most in (("time_s", 8), ("wall_s", 8), ("mpi_s", 8), ("gap_s", 8),
                          ("time_min_s", 5), ("time_max_s", 5), ("threshold_s", 5)):
            for m in re.finditer(rf'"{key}":{number}', raw):
                assert _digits(m.group(1)) <= most, (key, m.group(1))
                seen[most] += _digits(m.group(1)) == most
        line = json.loads(raw)
        for row in line["timeline"]["time_s"]:
            for v in row:
                assert _digits(repr(v)) <= 4, v
                seen[4] += _digits(repr(v)) == 4
    assert all(seen.values()), seen  # each precision is used, not only smaller numbers
    header = text[0]
    assert max(_digits(m.group(1)) for m in re.finditer(rf'"time_s":{number}', header)) == 9


def test_reader_table_is_the_benchmark_results(tmp_path) -> None:
    """docs/scale.md's reader table (figures and the command that measured them) is what
    bench/reader/bench.py --table-from makes of its results file, whose provenance says
    where and how they were measured."""
    results = REPO / "bench" / "reader" / "results" / "scale.json"
    got = json.loads(results.read_text())
    prov = got["provenance"]
    assert {"commit", "dirty", "argv", "cpu_model", "loadavg_before", "loadavg_after",
            "real_profile", "synth", "reader_library"} <= set(prov)
    assert prov["synth"]["script"] == "bench/reader/synth.py"
    assert {(r["command"], r["ranks"]) for r in got["results"]} >= {
        ("report", 100_000), ("report", 1_000_000)}
    page = (REPO / "docs" / "scale.md").read_text()
    doc = tmp_path / "scale.md"
    doc.write_text(page.replace("| `report` |", "| edited by hand |"))
    subprocess.run([sys.executable, str(REPO / "bench" / "reader" / "bench.py"),
                    "--table-from", str(results), "--doc", str(doc)], check=True,
                   capture_output=True, timeout=60)
    assert doc.read_text() == page
    assert "| `report` | " in page and "bench/reader/bench.py " + " ".join(prov["argv"][2:]) in page
