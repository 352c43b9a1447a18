"""Call sites (MPILENS_CALLSITES, MPILENS_CALLSITE_SLOTS) on real MPI jobs.

tests/progs/callsite_c.c and callsite_f.F90 call MPI_Allreduce from three
source lines marked SITE-A/B/C, 7, 3 and 5 times, with 64, 4 and 16
integers, and make no other MPI call between MPI_Init and MPI_Finalize.
The report must resolve each site to its file:line with exactly those calls
and bytes (Allreduce: count x 4 bytes sent and received per call).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import BUILD, REPO, read_profile, run_mpi
from test_cli_support import mpilens_inproc

EXEC = BUILD / "bin" / "mpilens-exec"
PROGS = BUILD / "tests"
P = 2
# site -> (calls, integers per call) per rank
SITES = {"SITE-A": (7, 64), "SITE-B": (3, 4), "SITE-C": (5, 16)}


def lines_of(src: Path) -> dict[str, int]:
    """Source line of each marker (SITE-A/B/C, CALLER-A) in a test program."""
    out = {}
    for i, ln in enumerate(src.read_text().splitlines(), 1):
        for m in re.findall(r"\b(SITE-[ABC]|CALLER-A)\b", ln):
            if "MPI_Allreduce" in ln or "site_a(" in ln:
                out[m] = i
    return out


def run_prog(tmp_path: Path, prog: str, **env: str) -> Path:
    if not (PROGS / prog).exists():
        # the Fortran program is not built where the MPI's Fortran module does not fit gfortran (Intel MPI)
        pytest.skip(f"{prog} not built with this MPI and compiler")
    out = tmp_path / f"{prog}-{len(list(tmp_path.glob('*.prof')))}.prof"
    run_mpi(P, [EXEC, PROGS / prog],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", **env})
    return out


def report(path: Path, *extra: str) -> dict:
    proc = mpilens_inproc("report", path, "--format", "json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def hist_bin(nbytes: int) -> int:
    return nbytes.bit_length()  # the profile's size classes: 0, 1, 2-3, 4-7, ...


@pytest.mark.parametrize("prog,src", [("callsite_c", "callsite_c.c"), ("callsite_f", "callsite_f.F90")])
def test_three_sites_resolved_exactly(build, tmp_path, prog, src):
    out = run_prog(tmp_path, prog)
    header, ranks = read_profile(out)
    assert header["version"] == 2 and header["callsite_depth"] == 1
    want = lines_of(REPO / "tests" / "progs" / src)
    assert set(want) == {"SITE-A", "SITE-B", "SITE-C", "CALLER-A"}
    for r in ranks:  # the raw records: three sites, one frame each, in the program's module
        assert len(r["callsites"]) == 3
        assert r["callsites_dropped"] == {"calls": 0, "time_s": 0, "bytes_sent": 0, "bytes_recv": 0}
        assert all(len(s["frames"]) == 1 for s in r["callsites"])
        assert [Path(m).name for m in r["callsite_modules"]] == [prog]
    rows = report(out)["callsites"]
    assert len(rows) == 3
    by_line = {}
    for row in rows:
        (fr,) = row["frames"]
        assert Path(fr["file"]).name == src, row
        by_line[fr["line"]] = row
    for site, (calls, n) in SITES.items():
        row = by_line[want[site]]
        assert row["function"] == "MPI_Allreduce"
        assert row["calls"] == P * calls
        assert row["bytes_sent"] == row["bytes_recv"] == P * calls * 4 * n
        assert row["nranks"] == P
        assert [pr["calls"] for pr in row["per_rank"]] == [calls] * P
        hist = [0] * len(row["hist"])
        hist[hist_bin(4 * n)] = P * calls
        assert row["hist"] == hist
    # the sites add up to the function's record
    f = header["functions"]["MPI_Allreduce"]
    assert sum(r["calls"] for r in rows) == f["calls"] == P * 15
    assert sum(r["bytes_sent"] for r in rows) == f["bytes_sent"]


@pytest.mark.parametrize("unwind", ["cfi", "backtrace"])
def test_depth_two_walks_the_stack(build, tmp_path, unwind):
    """MPILENS_CALLSITES=2: SITE-A is reached from CALLER-A; B and C from main.  The same
    frames by the unwind tables (the default, cfi) and by backtrace(), which walks
    every call (callsite_backtraces: 15 per rank) where cfi walks none."""
    out = run_prog(tmp_path, "callsite_c", MPILENS_CALLSITES="2", MPILENS_CALLSITE_UNWIND=unwind)
    want = lines_of(REPO / "tests" / "progs" / "callsite_c.c")
    _, ranks = read_profile(out)
    assert [r["callsite_backtraces"] for r in ranks] == [15 if unwind == "backtrace" else 0] * P
    rows = report(out)["callsites"]
    assert len(rows) == 3
    inner = {r["frames"][0]["line"]: r for r in rows}
    a = inner[want["SITE-A"]]
    assert [(Path(f["file"]).name, f["line"]) for f in a["frames"]] == [
        ("callsite_c.c", want["SITE-A"]), ("callsite_c.c", want["CALLER-A"])]
    assert a["frames"][0]["function"] == "site_a" and a["frames"][1]["function"] == "main"
    assert a["calls"] == P * 7
    for site in ("SITE-B", "SITE-C"):
        r = inner[want[site]]
        assert len(r["frames"]) == 2 and r["frames"][0]["function"] == "main"
        assert r["calls"] == P * SITES[site][0]


def marker_lines(src: Path, prefix: str) -> dict[int, int]:
    """{k: source line} of the markers PREFIX-k in a test program."""
    out = {}
    for i, ln in enumerate(src.read_text().splitlines(), 1):
        m = re.search(rf"\b{prefix}-(\d)\b", ln)
        if m and not ln.lstrip().startswith(("*", "/*", "!")):  # not the header comment
            out[int(m.group(1))] = i
    return out


def one_site(out: Path, calls: int) -> dict:
    """The profile's only call site (every rank: one site, walked without backtrace())."""
    _, ranks = read_profile(out)
    for r in ranks:
        assert len(r["callsites"]) == 1 and r["callsites"][0]["calls"] == calls
        assert r["callsite_backtraces"] == 0
    (row,) = report(out)["callsites"]
    assert row["calls"] == P * calls
    return row


@pytest.mark.parametrize("prog,depth",
                         [("callsite_deep", 2), ("callsite_deep", 4), ("callsite_deep_fp", 2)])
def test_deep_sites_with_and_without_frame_pointers(build, tmp_path, prog, depth):
    """-O2 code four frames deep (tests/progs/callsite_deep.c), built without frame pointers
    except in two of its functions (callsite_deep) and with them (callsite_deep_fp): the
    default walk (the unwind tables) gives each frame's exact line, and never falls back
    to backtrace()."""
    out = run_prog(tmp_path, prog, MPILENS_CALLSITES=str(depth))
    want = marker_lines(REPO / "tests" / "progs" / "callsite_deep.c", "DEEP")
    assert sorted(want) == [1, 2, 3, 4]
    row = one_site(out, 6)
    assert [(Path(f["file"]).name, f["line"]) for f in row["frames"]] == [
        ("callsite_deep.c", want[k]) for k in range(1, depth + 1)]
    assert [f["function"] for f in row["frames"]] == ["leaf", "mid", "outer", "main"][:depth]
    assert row["bytes_sent"] == row["bytes_recv"] == P * 6 * 8 * 4


def test_fp_walk_skips_a_frame_without_one(build, tmp_path):
    """Why the frame-pointer walk is not the default: in callsite_deep, mid has no frame
    pointer between leaf and outer, which have one; MPILENS_CALLSITE_UNWIND=fp at depth 3
    passes every check and takes main's line (DEEP-4) for mid's caller (DEEP-3).  (This
    also shows the program has the case the default walk is tested on above.)"""
    out = run_prog(tmp_path, "callsite_deep", MPILENS_CALLSITES="3", MPILENS_CALLSITE_UNWIND="fp")
    want = marker_lines(REPO / "tests" / "progs" / "callsite_deep.c", "DEEP")
    row = one_site(out, 6)
    assert [f["line"] for f in row["frames"]] == [want[1], want[2], want[4]]


def test_deep_fortran_without_frame_pointers(build, tmp_path):
    """gfortran -O2 -fomit-frame-pointer (tests/progs/callsite_deep_f.F90), depth 2: the
    frames of leaf and outer at their exact lines, through the Fortran binding's frames."""
    out = run_prog(tmp_path, "callsite_deep_f", MPILENS_CALLSITES="2")
    want = marker_lines(REPO / "tests" / "progs" / "callsite_deep_f.F90", "FDEEP")
    assert sorted(want) == [1, 2]
    row = one_site(out, 4)
    assert [(Path(f["file"]).name, f["line"]) for f in row["frames"]] == [
        ("callsite_deep_f.F90", want[1]), ("callsite_deep_f.F90", want[2])]


def test_overflow_is_counted(build, tmp_path):
    """Two slots: the first two sites reached (B, then C) are kept; A's calls are dropped,
    counted with their bytes."""
    out = run_prog(tmp_path, "callsite_c", MPILENS_CALLSITE_SLOTS="2")
    want = lines_of(REPO / "tests" / "progs" / "callsite_c.c")
    _, ranks = read_profile(out)
    for r in ranks:
        assert sorted(s["calls"] for s in r["callsites"]) == [3, 5]
        d = r["callsites_dropped"]
        assert d["calls"] == 7 and d["bytes_sent"] == d["bytes_recv"] == 7 * 256
    data = report(out)
    assert {r["frames"][0]["line"] for r in data["callsites"]} == {want["SITE-B"], want["SITE-C"]}
    assert data["callsites_dropped"]["calls"] == P * 7
    assert data["callsites_dropped"]["bytes_sent"] == P * 7 * 256


def test_off_and_text_report(build, tmp_path):
    """MPILENS_CALLSITES=0 records none; the text report's table and --callsite N."""
    out0 = run_prog(tmp_path, "callsite_c", MPILENS_CALLSITES="0")
    _, ranks = read_profile(out0)
    assert all("callsites" not in r for r in ranks)
    bad = mpilens_inproc("report", out0, "--callsite", "1")
    assert bad.returncode == 2 and "no call sites" in bad.stderr
    out = run_prog(tmp_path, "callsite_c")
    want = lines_of(REPO / "tests" / "progs" / "callsite_c.c")
    text = mpilens_inproc("report", out).stdout
    assert "call sites by total time" in text
    for site in SITES:
        assert f"callsite_c.c:{want[site]}" in text
    rows = report(out)["callsites"]
    n = next(r["id"] for r in rows if r["frames"][0]["line"] == want["SITE-C"])
    one = mpilens_inproc("report", out, "--callsite", str(n))
    assert one.returncode == 0
    assert f"callsite_c.c:{want['SITE-C']} (main)" in one.stdout and "5" in one.stdout
    # only that site's detail: not the whole report around it
    assert one.stdout.startswith(f"Call site {n}: MPI_") and "mpilens report" not in one.stdout
    assert "call sites by total time" not in one.stdout
    assert report(out, "--callsite", str(n))["callsite"]["calls"] == P * 5
    past = mpilens_inproc("report", out, "--callsite", "4")
    assert past.returncode == 2 and "has 3 call sites" in past.stderr


def test_html_and_diff_by_callsite(build, tmp_path):
    """html lists each resolved site; diff matches sites by function and source line:
    the C run against MPILENS_CALLSITE_SLOTS=2 (site A missing) shows A's calls gone."""
    full = run_prog(tmp_path, "callsite_c")
    two = run_prog(tmp_path, "callsite_c", MPILENS_CALLSITE_SLOTS="2")
    want = lines_of(REPO / "tests" / "progs" / "callsite_c.c")
    page = tmp_path / "r.html"
    assert mpilens_inproc("html", full, "-o", page).returncode == 0
    text = page.read_text()
    assert 'id="callsites"' in text
    for site in SITES:
        assert f"callsite_c.c:{want[site]}" in text
    d = json.loads(mpilens_inproc("diff", full, two, "--format", "json").stdout)
    rows = {r["location"].split(" ")[0]: r for r in d["callsites"]}
    assert set(rows) == {f"callsite_c.c:{want[s]}" for s in SITES}
    a = rows[f"callsite_c.c:{want['SITE-A']}"]
    assert (a["calls_a"], a["calls_b"], a["bytes_a"], a["bytes_b"]) == (P * 7, 0, 2 * P * 7 * 256, 0)
    b = rows[f"callsite_c.c:{want['SITE-B']}"]
    assert (b["calls_a"], b["calls_b"]) == (P * 3, P * 3)


def test_dumps_while_sites_are_added(build, tmp_path):
    """Flight-recorder dumps (SIGUSR1) one after the other while the program adds
    40000 call sites (tests/progs/callsite_dump_thread.c): the job lives through them and
    its profile has every site exactly once."""
    out = tmp_path / "storm.prof"
    proc = run_mpi(1, [EXEC, PROGS / "callsite_dump_thread", tmp_path / "storm.prof.partial"],
                   env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", "MPILENS_CALLSITES": "2",
                        "MPILENS_CALLSITE_SLOTS": "65536"})
    dumps = int(re.search(r"^dumps (\d+)$", proc.stdout, re.MULTILINE).group(1))
    assert dumps >= 2, proc.stdout
    _, (r,) = read_profile(out)
    assert r["functions"]["MPI_Comm_rank"]["calls"] == 40000
    sites = [s for s in r["callsites"] if s["function"] == "MPI_Comm_rank"]
    assert len(sites) == 40000 and all(s["calls"] == 1 for s in sites)
    assert len({tuple(map(tuple, s["frames"])) for s in sites}) == 40000
    assert r["callsites_dropped"]["calls"] == 0


# P2P-* marker -> (function, calls, bytes sent, bytes received, message size per call) per rank
P2P_SITES = {
    "P2P-RANK": ("MPI_Comm_rank", 1, 0, 0, 0),
    "P2P-ISEND": ("MPI_Isend", 3, 3 * 40, 0, 40),
    "P2P-RECV": ("MPI_Recv", 3, 0, 3 * 40, 40),
    "P2P-WAIT": ("MPI_Wait", 3, 0, 0, 0),
    # an Irecv's bytes are known at its completion: the function's record gets them
    # (below), its call site and the Wait's do not (docs/runtime.md)
    "P2P-IRECV": ("MPI_Irecv", 5, 0, 0, 0),
    "P2P-SEND": ("MPI_Send", 5, 5 * 300, 0, 300),
    "P2P-WAIT2": ("MPI_Wait", 5, 0, 0, 0),
    "P2P-SNULL": ("MPI_Send", 2, 0, 0, 0),
    "P2P-RNULL": ("MPI_Recv", 2, 0, 0, 0),
}


def test_p2p_sites_exact(build, tmp_path):
    """tests/progs/callsite_p2p.c at depth 1 (the default): each point-to-point call
    site has exactly its calls, bytes and size classes (a send's or a receive's bytes
    reach its site from the wrapper's local copy; waits and sends to MPI_PROC_NULL
    give none), and the function records add up."""
    out = run_prog(tmp_path, "callsite_p2p")
    src = (REPO / "tests" / "progs" / "callsite_p2p.c").read_text().splitlines()
    line = {m: i for i, ln in enumerate(src, 1) for m in re.findall(r"/\* (P2P-\w+) \*/", ln)}
    assert set(line) == set(P2P_SITES)
    rows = report(out)["callsites"]
    by_line = {row["frames"][0]["line"]: row for row in rows}
    assert sorted(by_line) == sorted(line.values())
    for site, (fn, calls, bs, br, size) in P2P_SITES.items():
        row = by_line[line[site]]
        assert (row["function"], row["calls"], row["bytes_sent"], row["bytes_recv"]) == (
            fn, P * calls, P * bs, P * br), site
        hist = [0] * len(row["hist"])
        if size:
            hist[hist_bin(size)] = P * calls
        assert row["hist"] == hist, site
    header, _ = read_profile(out)
    f = header["functions"]
    assert (f["MPI_Isend"]["bytes_sent"], f["MPI_Send"]["bytes_sent"]) == (P * 120, P * 1500)
    assert (f["MPI_Recv"]["bytes_recv"], f["MPI_Irecv"]["bytes_recv"]) == (P * 120, P * 1500)
    assert (f["MPI_Send"]["calls"], f["MPI_Recv"]["calls"], f["MPI_Wait"]["calls"]) == (P * 7, P * 5, P * 8)


@pytest.mark.parametrize("depth,unwind,fallbacks", [("1", "cfi", 0), ("2", "cfi", 0),
                                                    ("3", "cfi", 0), ("2", "fp", 0),
                                                    ("2", "backtrace", 2 * 7 * 4000)])
def test_overhead_probe_walks_as_the_calls_do(build, tmp_path, depth, unwind, fallbacks):
    """The start-up overhead probe (core.c) measures the per-call path of the call-site
    depth in force: at depth 2 and more it walks its own frames as the calls walk the
    application's, never the backtrace() fallback (its fake call site sent every probe
    call there: 'profiler overhead 2672 ns per call' at MPILENS_CALLSITES=2).  Counted,
    not timed: the header's timing.probe_backtraces -- 0, and with
    MPILENS_CALLSITE_UNWIND=backtrace, where every call uses it, each of the probe's
    2 x 7 x 4000 calls."""
    out = run_prog(tmp_path, "callsite_c", MPILENS_CALLSITES=depth,
                   MPILENS_CALLSITE_UNWIND=unwind)
    header, _ = read_profile(out)
    assert header["timing"]["probe_backtraces"] == fallbacks
    assert header["callsite_depth"] == int(depth)
