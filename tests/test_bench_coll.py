"""bench/coll: mpilens-bench-coll's exact results on one host, and vcluster.py's
statistics and table on given numbers (the virtual-cluster run itself takes tens of
minutes as root: docs/collectives.md shows its command and figures)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
from conftest import REPO, read_profile, run_mpi

spec = importlib.util.spec_from_file_location("bench_coll_vcluster",
                                              REPO / "bench" / "coll" / "vcluster.py")
vc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vc)


def test_signed_rank_distribution() -> None:
    # subsets of {1, 2, 3} by sum: 0, 1, 2, 3 (twice: {3}, {1,2}), 4, 5, 6
    assert vc.signed_rank_cdf(3) == [1 / 8, 2 / 8, 3 / 8, 5 / 8, 6 / 8, 7 / 8, 1.0]


def test_hodges_lehmann_known_values() -> None:
    # 7 values: 28 Walsh averages, median 4; the 95 % critical value is 2, so the
    # interval is the 3rd smallest and 3rd largest (2 and 6), 1 - 2 * 3/128
    assert vc.hodges_lehmann([7, 1, 5, 3, 2, 6, 4]) == {
        "estimate": 4.0, "lo": 2.0, "hi": 6.0, "confidence": 1 - 6 / 128, "n": 7}
    # 6 values: only the whole range reaches 95 % (1 - 2/64)
    assert vc.hodges_lehmann([1, 2, 3, 4, 5, 6]) == {
        "estimate": 3.5, "lo": 1.0, "hi": 6.0, "confidence": 1 - 2 / 64, "n": 6}
    # 5 values: 95 % cannot be reached; the range, with its 93.75 %
    assert vc.hodges_lehmann([1, 2, 3, 4, 5])["confidence"] == 0.9375
    assert vc.hodges_lehmann([2.5])["confidence"] == 0.0
    assert vc.hodges_lehmann([]) is None


def _jobs() -> list[dict]:
    """mpi 1.0 s every round; twolevel half of it (0.5 s) but 0.25 s in round 3;
    mpi_aa 1.0 s but 2.0 s in round 2."""
    jobs = []
    for rnd in range(1, 8):
        for v, t in (("mpi", 1.0), ("twolevel", 0.25 if rnd == 3 else 0.5),
                     ("mpi_aa", 2.0 if rnd == 2 else 1.0)):
            jobs.append({"ok": True, "round": rnd, "rails": 1, "placement": "block",
                         "variant": v, "results": [{"size": 1 << 20, "median_s": t}]})
    jobs.append({"ok": False, "round": 8, "rails": 1, "placement": "block",
                 "variant": "mpi", "error": "exit status 1"})
    return jobs


def test_summary_pairs_rounds() -> None:
    rows = {r["variant"]: r for r in vc.summarize(_jobs(), ["mpi", "twolevel", "mpi_aa"])}
    assert rows["mpi"]["median_s"] == 1.0 and "ratio_to_mpi" not in rows["mpi"]
    assert rows["mpi"]["rounds"] == [1, 2, 3, 4, 5, 6, 7]        # the failed job left out
    tl = rows["twolevel"]["ratio_to_mpi"]
    # log ratios: six of -ln 2, one of -2 ln 2: Walsh averages 21 x -ln 2, 6 x -1.5 ln 2,
    # 1 x -2 ln 2; the interval's ends are the 3rd smallest and largest
    assert tl["ratio"] == pytest.approx(0.5, rel=1e-12)
    assert tl["lo"] == pytest.approx(2 ** -1.5, rel=1e-12)
    assert tl["hi"] == pytest.approx(0.5, rel=1e-12)
    assert tl["verdict"] == "faster" and tl["rounds"] == 7
    aa = rows["mpi_aa"]["ratio_to_mpi"]
    assert aa["ratio"] == 1.0 and aa["lo"] == 1.0 and aa["hi"] == pytest.approx(math.sqrt(2))
    assert aa["verdict"] == "not resolved"


def _result(argv: list[str]) -> dict:
    jobs = _jobs()
    return {"settings": {"variants": ["mpi", "twolevel", "mpi_aa"], "rails": [1], "nodes": 4,
                         "per_node": 2, "rate": "100mbit", "iters": 5},
            "provenance": {"argv": argv, "mpi_version": "mpirun (Open MPI) 4.1.4"},
            "jobs": jobs, "summary": vc.summarize(jobs, ["mpi", "twolevel", "mpi_aa"])}


def test_table_between_markers(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Title\n\nbefore\n\n{vc.BEGIN}\nold table\n{vc.END}\n\nafter\n")
    vc.write_doc(doc, _result(["--sizes", "1M", "--reps", "7"]))
    text = doc.read_text()
    assert text.startswith("# Title\n\nbefore\n\n" + vc.BEGIN + "\n")
    assert text.endswith(vc.END + "\n\nafter\n") and "old table" not in text
    assert "| block | 1 MiB | 1.000 s | 1.00 [1.00, 1.41] | 0.500 s, 0.50 [0.35, 0.50] |" in text
    words = " ".join(text.split())
    assert "7 rounds" in words and "95.3 % interval" in words
    assert "```sh\npython3 bench/coll/vcluster.py --sizes 1M --reps 7\n```" in text
    assert all(len(line) <= 80 for line in text.splitlines() if not line.startswith("|"))
    doc.write_text("no markers\n")
    with pytest.raises(vc.Failure, match="no markers"):
        vc.write_doc(doc, _result([]))


def test_program_exact_and_served(build: Path, tmp_path: Path) -> None:
    """4 ranks on one host, declared as 2 nodes of 2: every element of every call
    checked by the program, every call served by multileader (the profile)."""
    prof = tmp_path / "coll.prof"
    proc = run_mpi(4, [build / "bin" / "mpilens-exec", build / "bin" / "mpilens-bench-coll",
                       "--iters", "2", "--warmup", "1", "8", "64K", "1M", "24"],
                   env={"MPILENS_OUTPUT": str(prof), "MPILENS_COLL_ALLREDUCE": "multileader",
                        "MPILENS_COLL_NODES": "2,2"}, cwd=tmp_path)
    out = json.loads(proc.stdout)
    assert out["ranks"] == 4 and out["wrong"] == 0 and len(out["rank_hosts"]) == 4
    # iterations: 2 x min(20, 1 MiB / size), at least 2
    got = [(r["size"], r["count"], r["iters"], len(r["time_s"]), r["wrong"])
           for r in out["results"]]
    assert got == [(8, 1, 40, 40, 0), (65536, 8192, 32, 32, 0), (1 << 20, 131072, 2, 2, 0),
                   (24, 3, 40, 40, 0)]
    assert all(t > 0 for r in out["results"] for t in r["time_s"])
    header, _ = read_profile(prof)
    calls = 4 * (40 + 32 + 2 + 40 + 4)                   # 4 ranks, 4 warm-up calls each
    assert header["coll"]["allreduce"]["calls"] == {"twolevel": 0, "multileader": calls}


def test_program_bad_size(build: Path, tmp_path: Path) -> None:
    proc = run_mpi(2, [build / "bin" / "mpilens-bench-coll", "12"], check=False, cwd=tmp_path)
    assert proc.returncode == 2
    assert "mpilens-bench-coll: size '12' is invalid (accepted: bytes, a multiple of 8" \
        in proc.stderr
