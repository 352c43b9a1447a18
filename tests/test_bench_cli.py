"""`mpilens bench`: launcher after --, JSON/plot outputs, one-line errors (exit 2),
dispatch of the alltoall/repro families, the profiler-overhead family."""

from __future__ import annotations

import importlib.util
import io
import json
import re
from pathlib import Path

import pytest
from conftest import BUILD, REPO, run_mpi
from mpilens import paths
from test_bench_common import check_env, cli, estimate_first, run_family


def _one_error_line(proc, contains: str) -> None:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mpilens: ") and contains in lines[0], lines[0]


def test_p2p_json_table_plot_and_no_overwrite(tmp_path: Path) -> None:
    out, png = tmp_path / "p2p.json", tmp_path / "p2p.png"
    args = ["p2p", "--max-size", "64", "--samples", "2", "--iters", "2", "--warmup", "1",
            "--window", "4", "--json", str(out), "--plot", str(png)]
    proc = cli(args)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["family"] == "p2p" and doc["validated"]
    assert [r["size"] for r in doc["results"]] == [0, 1, 2, 4, 8, 16, 32, 64]
    check_env(doc, 2, paths.mpi_flavour())
    assert "p2p ranks 0<->1" in proc.stdout and "64 B" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    before = out.read_text()
    _one_error_line(cli(args, launch=False), "exists")
    assert out.read_text() == before
    svg = tmp_path / "again.svg"
    again = cli(["p2p", "--from", str(out), "--plot", str(svg)], launch=False)
    assert again.returncode == 0 and "<svg" in svg.read_text(), again.stderr
    assert "p2p ranks 0<->1" in again.stdout
    _one_error_line(cli(["coll", "--from", str(out)], launch=False), "not 'coll'")


def test_memory_series_over_rank_counts(tmp_path: Path) -> None:
    out, svg = tmp_path / "mem.json", tmp_path / "mem.svg"
    from conftest import launcher
    line = [a if a != "2" else "{np}" for a in launcher(2)]
    proc = cli(["memory", "--size", "4K", "--repeats", "1", "--nprocs", "2,3", "--json",
                str(out), "--plot", str(svg), "--", *line], launch=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert [d["results"]["nranks"] for d in doc["series"]] == [2, 3]
    assert doc["errors"] == 0 and "<svg" in svg.read_text()


@pytest.mark.parametrize("args,contains", [
    (["p2p", "--ranks", "0,5"], "--ranks '0,5'"),
    (["p2p", "--max-size", "1X"], "--max-size '1X' is not a size"),
    (["p2p", "--min-size", "8K", "--max-size", "1K"], "--min-size 8192 is larger"),
    (["io", "--dir", "/proc/no-such-dir"], "--dir '/proc/no-such-dir'"),
    (["halo", "--npartner", "3"], "--npartner 3"),
    (["coll", "--ops", "allreduce,foo"], "unknown 'foo'"),
    (["logp", "--samples", "0"], "--samples '0'"),
    (["p2p", "--no-such-option", "1"], "unknown option --no-such-option"),
])
def test_bad_options_one_line_exit_2(args: list[str], contains: str) -> None:
    _one_error_line(cli(args), contains)


@pytest.mark.parametrize("args,contains", [
    (["p2p", "--plot", "x.txt"], "unknown format"),
    (["p2p", "--nprocs", "2,4"], "only by the memory family"),
    (["memory", "--nprocs", "2,x"], "--nprocs '2,x'"),
    (["p2p", "--json", "/no/such/dir/x.json"], "does not exist"),
])
def test_bad_driver_options_without_launching(args: list[str], contains: str) -> None:
    _one_error_line(cli(args, launch=False), contains)


@pytest.mark.parametrize("family,module", [("alltoall", "mpilens.bench.alltoall"),
                                           ("repro", "mpilens.bench.repro")])
def test_engine_families_dispatch(family: str, module: str) -> None:
    if importlib.util.find_spec(module) is None:
        _one_error_line(cli([family], launch=False), f"{module} is missing")
    else:
        proc = cli([family, "--help"], launch=False)
        assert proc.returncode == 0 and "usage" in proc.stdout.lower(), proc.stderr


def test_announce_names_options_the_family_has() -> None:
    """The expected-duration line names, per family, options that family has (io and
    overhead have no --max-size or --iters); from 10 s on, nothing below."""
    from contextlib import redirect_stdout

    from mpilens.bench import alltoall, repro
    from mpilens.bench.launch import SHORTEN, announce
    from rich.console import Console

    helps = {}
    for family, module in (("alltoall", alltoall), ("repro", repro)):
        with redirect_stdout(io.StringIO()) as text, pytest.raises(SystemExit):
            module.main(["--help"])
        helps[family] = text.getvalue()
    for family, options in SHORTEN.items():
        out = io.StringIO()
        announce(Console(file=out, width=300), family, 12.0, load=(0.5, 2))
        assert out.getvalue().startswith(f"{family}: expected duration about 12 s (") and \
            out.getvalue().endswith(f"; {options} shorten it\n"), out.getvalue()
        for opt in re.findall(r"--[a-z-]+", options):
            if family in helps:  # the CLI's own options
                assert opt in helps[family], (family, opt)
                continue
            src = (REPO / "bench" / "src" / f"{family}.c").read_text()
            sizes = opt in ("--min-size", "--max-size") and "ml_opt_sizes(" in src
            assert sizes or f'ml_opt_int("{opt[2:]}"' in src or \
                f'ml_opt_names("{opt[2:]}"' in src or f'ml_opt_size("{opt[2:]}"' in src, \
                (family, opt)
        quiet = io.StringIO()
        announce(Console(file=quiet), family, 9.99)
        assert quiet.getvalue() == ""
    # alltoall: every run at P ranks as long as the first's x P / its ranks, x repeat
    assert alltoall.expected_duration(2.0, [4, 8], 3) == pytest.approx((2.0 + 4.0) * 3,
                                                                       rel=1e-12)


def test_announce_says_a_range_and_a_busy_host() -> None:
    """The probe's typical and fastest figures more than 1.5x apart: a range; within:
    one figure; a host loaded beyond its CPUs: a caution with its load; the
    MLB-ESTIMATE line's second figure is the low end."""
    from mpilens.bench.launch import announce, estimate, estimate_low
    from rich.console import Console

    def said(seconds: float, low: float | None, load: tuple[float, int]) -> str:
        out = io.StringIO()
        announce(Console(file=out, width=400), "overhead", seconds, low=low, load=load)
        return out.getvalue()

    assert said(82.2, 7.44, (0.5, 2)) == (
        "overhead: expected duration 7.44 s to 82.2 s (from a probe before starting; its "
        "fastest and its typical calls differ: the host is busy); --calls, --blocks or "
        "--rss-calls shorten it\n")
    assert said(82.2, 60.0, (0.5, 2)).startswith("overhead: expected duration about 82.2 s (")
    assert said(15.0, 10.0, (2.0, 2)) == said(15.0, 15.0, (0.0, 2)) == said(15.0, None, (0.1, 4))
    assert said(15.0, 9.99, (0.5, 2)).startswith("overhead: expected duration 9.99 s to 15 s")
    busy = said(15.0, None, (26.04, 2))
    assert busy == ("overhead: expected duration about 15 s (from a probe before starting); "
                    "the host is busy (load 26.0 on 2 CPUs): as the load changes, so does the "
                    "time; --calls, --blocks or --rss-calls shorten it\n")
    assert said(9.99, 1.0, (26.0, 2)) == ""
    assert (estimate("MLB-ESTIMATE 82.2 7.44"), estimate_low("MLB-ESTIMATE 82.2 7.44")) == \
        (82.2, 7.44)
    assert (estimate("MLB-ESTIMATE 12"), estimate_low("MLB-ESTIMATE 12")) == (12.0, None)


def test_repro_bench_announces_and_records_its_duration(tmp_path: Path) -> None:
    """mpilens-bench-repro --progress sends its expected duration (MLB-ESTIMATE) before the
    timed samples, and its JSON keeps it beside the samples' time; `mpilens bench repro`
    takes the line (announced from 10 s on) and writes both."""
    proc = run_mpi(2, [BUILD / "bin" / "mpilens-bench-repro", "--samples", "1", "--progress"])
    expected = estimate_first(proc.stderr, 0)
    doc = json.loads(proc.stdout[proc.stdout.find("{"):])
    assert doc["expected_s"] == pytest.approx(expected, rel=1e-5) and doc["elapsed_s"] > 0
    out = tmp_path / "repro.json"
    got = cli(["repro", "--np", "2", "--samples", "1", "--json", str(out)], launch=False)
    assert got.returncode == 0 and "MLB-" not in got.stderr + got.stdout, got.stderr
    doc = json.loads(out.read_text())
    assert doc["expected_s"] > 0 and doc["elapsed_s"] > 0 and doc["samples"] == 1


def test_overhead_without_profiler(tmp_path: Path) -> None:
    doc = run_family(2, "overhead", ["--calls", "1000", "--blocks", "3", "--pp-calls", "50",
                                     "--rss-calls", "2000"], tmp_path)
    r = doc["results"]
    assert r["profiler"] == {"loaded": False, "MPI_Comm_rank_from": r["profiler"]
                             ["MPI_Comm_rank_from"], "record_bytes_symbol": False}
    assert "libmpilens" not in r["profiler"]["MPI_Comm_rank_from"]
    assert r["comm_rank"]["blocks"] == 3 and r["comm_rank"]["pmpi_ns"]["n"] == 3
    assert r["pingpong_8B"]["roundtrips_per_block"] == 50
    assert doc["expected_s"] > 0 and doc["elapsed_s"] > 0  # said before the long loops
    # at the probe's fastest chunks: no more than at its mean rates
    assert 0 < doc["expected_low_s"] <= doc["expected_s"]


def test_overhead_under_profiler(build: Path, tmp_path: Path) -> None:
    out = tmp_path / "ovh.json"
    proc = cli(["overhead", "--calls", "1000", "--blocks", "3", "--pp-calls", "50",
                "--rss-calls", "2000", "--json", str(out)])
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())["results"]
    assert r["profiler"]["loaded"] is True
    assert r["profiler"]["MPI_Comm_rank_from"] == str(BUILD / "lib" / "libmpilens.so")
    assert r["comm_rank"]["mpi_ns"]["n"] == 3 and r["pingpong_8B"]["pmpi_ns"]["n"] == 3
    m = r["memory"]
    assert m["rss_kib_after_rss_calls"] > 0
    if r["profiler"]["record_bytes_symbol"]:
        assert m["record_bytes_after_rss_calls"] == m["record_bytes_after_1e3"] > 0


def test_alltoall_bench_repeats_and_medians(tmp_path: Path) -> None:
    # two real runs of mpilens-bench-alltoall on 2 ranks; every figure of the combined
    # result is the median of the runs' figures, the targets are counted per run
    out = tmp_path / "a2a.json"
    proc = cli(["alltoall", "--np", "2", "--sizes", "64,8K", "--calls", "40", "--learn", "2",
                "--chunks", "2", "--repeat", "3", "--skip", "pair_barrier", "--json", str(out),
                "--quiet"], launch=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    [run] = doc["runs"]
    assert (run["nranks"], run["repeat"]) == (2, 3)
    # expected from the first run's probe (x 3 runs of 2 ranks), and from the first run's
    # own time, the whole sweep's time beside them
    probe = doc["probe"]
    assert probe["factor"] == 3
    assert probe["expected_s"] == pytest.approx(
        _probe_expected(probe, [40, 40], [2, 2], {"pair_barrier"}, nomodel=True), rel=1e-6)
    assert doc["expected_s"] == pytest.approx(3 * probe["expected_s"], rel=1e-12)
    # (the first run's time x 3 runs: the sweep, which includes that run, takes at least
    # a third of it however loaded the machine; nothing is asserted on how close it came)
    assert doc["expected_first_run_s"] > 0 and doc["elapsed_s"] >= doc["expected_first_run_s"] / 3
    assert [r["bytes"] for r in run["results"]] == [64, 8192]
    for r in run["results"]:
        runs = r["runs"]
        assert len(runs) == 3 and all(x["bytes"] == r["bytes"] and x["calls"] == 40 for x in runs)
        assert r["native_s"] == sorted(x["native_s"] for x in runs)[1]
        assert r["native_aa_s"] == sorted(x["native_aa_s"] for x in runs)[1]
        t = r["targets"]  # the A/A control: native twice, on two communicators
        a, b = r["native_s"], r["native_aa_s"]
        assert t["aa_spread"] == max(a, b) / min(a, b)
        assert t["total_within_aa"] == (t["total_ratio"] <= 1.10 * t["aa_spread"])
        for a, t in r["forced_s"].items():
            assert t == sorted(x["forced_s"][a] for x in runs)[1]
        for v in ("model", "nomodel"):
            ad = [x["adaptive"][v] for x in runs]
            assert r["adaptive"][v]["total_s"] == sorted(a["total_s"] for a in ad)[1]
            assert r["adaptive"][v]["algorithm"] == "/".join(a["algorithm"] for a in ad)
        assert r["adaptive"]["nomodel"]["grouping_s"] == 0
        m, n = r["adaptive"]["model"], r["adaptive"]["nomodel"]
        # after learning: against the forced times of the same chunks (medians too)
        w = m["window"]["forced_s"]
        for a in w:
            assert w[a] == sorted(x["adaptive"]["model"]["window"]["forced_s"][a] for x in runs)[1]
        assert m["after_s"] > 0 and r["targets"]["after_ratio"] == m["after_s"] / min(w.values())
        assert r["targets"]["decide_ratio"] == (
            None if r["bytes"] < 4096 else (m["grouping_s"] + m["learning_s"]) / n["learning_s"])
        # --skip: the variant is not run, nowhere in the result
        assert "pair_barrier" not in r["forced_s"] and len(r["forced_s"]) == 7
        assert all("pair_barrier" not in x["chunk_s"] for x in runs)
        # intervals: per chunk after the model variant's last learning call, pooled over
        # the runs, the ratio of summed times recomputed here from the chunks
        iv, best = r["intervals"], r["targets"]["best_forced"]
        assert iv["best_forced"] == best == min(r["forced_s"], key=r["forced_s"].get)
        pairs = [(x["chunk_s"]["model"][c], x["chunk_s"][best][c]) for x in runs
                 for c in range(x["last_learning_chunk"]["model"] + 1, 2)]
        if pairs:
            a = iv["after_best"]
            assert a["pairs"] == len(pairs)
            assert a["ratio"] == pytest.approx(sum(p[0] for p in pairs) / sum(p[1] for p in pairs))
            assert a["lo"] <= a["ratio"] <= a["hi"]
            assert iv["after_within_5pct"] == ("within 5 %" if a["hi"] < 1.05 else
                                               "not within 5 %" if a["lo"] > 1.05 else "not resolved")
        else:
            assert iv["after_best"] is None and iv["after_within_5pct"] == "no chunk after learning"
        assert iv["aa"]["pairs"] == 2 * 3  # every chunk of every run
        met = r["targets"]["runs_meeting"]
        assert met["runs"] == 3
        assert met["after"] == sum(x["targets"]["after_ok"] for x in runs)
        assert met["total"] == sum(x["targets"]["total_ok"] for x in runs)
    s = doc["summary"]
    assert s["repeat"] == 3 and s["points"] == 2 and s["points_from_4KiB"] == 1
    assert s["aa_spread_max"] == max(r["targets"]["aa_spread"] for r in run["results"])
    assert s["model_decides_cheaper_from_4KiB"] == int(run["results"][1]["targets"]["decide_ratio"] < 1)
    assert s["total_misses_within_aa"] == sum(
        not r["targets"]["total_ok"] and r["targets"]["total_within_aa"] for r in run["results"])
    for key in ("after_within_5pct", "total_within_10pct"):
        assert s["per_run"][key] == [sum(bool(r["runs"][i]["targets"][key.replace(
            "_within_5pct", "_ok").replace("_within_10pct", "_ok")]) for r in run["results"])
            for i in range(3)]


def _probe_expected(probe: dict, calls: list[int], learn: list[int], skip: set[str],
                    nomodel: bool) -> float:
    """The job's expected seconds from the probe's times, computed here: per size, the
    calls x (native twice + each forced algorithm run) + per adaptive variant
    min(calls, 8 x learn) at the eight algorithms' mean and the rest at the fastest."""
    total = 0.0
    for k, (n, learn_k) in enumerate(zip(calls, learn, strict=True)):
        t = {a: v[k] for a, v in probe["forced_s"].items()}
        assert len(t) == 8 and min(t.values()) > 0
        lc = min(n, 8 * learn_k)
        adaptive = lc * sum(t.values()) / 8 + (n - lc) * min(t.values())
        total += n * (2 * probe["native_s"][k] + sum(v for a, v in t.items() if a not in skip))
        total += adaptive * (2 if nomodel else 1)
    return total


def test_alltoall_bench_probe_sends_its_expected_duration() -> None:
    """mpilens-bench-alltoall --progress X probes every size (native and the eight
    algorithms, three timed calls each after an untimed one: median and fastest) and sends X x its expected seconds
    (MLB-ESTIMATE) on stderr before the timed part; the JSON keeps the probe's times, from
    which the estimate is recomputed here."""
    proc = run_mpi(2, [BUILD / "bin" / "mpilens-bench-alltoall", "--sizes", "64,4K",
                       "--calls", "30,12", "--learn", "3,1", "--chunks", "2",
                       "--skip", "nomodel,ring", "--progress", "1000"])
    assert proc.returncode == 0, proc.stderr
    expected = estimate_first(proc.stderr, 0)
    doc = json.loads(proc.stdout[proc.stdout.find("{"):])
    probe = doc["probe"]
    assert probe["factor"] == 1000 and len(probe["native_s"]) == 2
    assert expected == pytest.approx(1000 * probe["expected_s"], rel=1e-5)
    # the low end (at each candidate's fastest of the 3 probed calls) comes as a second
    # figure exactly when it is more than 1.5x below
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("MLB-ESTIMATE "))
    assert 0 < probe["expected_low_s"] <= probe["expected_s"]
    wide = probe["expected_s"] > 1.5 * probe["expected_low_s"]
    assert len(line.split()) == (3 if wide else 2), line
    if wide:
        assert float(line.split()[2]) == pytest.approx(1000 * probe["expected_low_s"], rel=1e-5)
    assert probe["expected_s"] == pytest.approx(
        _probe_expected(probe, [30, 12], [3, 1], {"ring"}, nomodel=False), rel=1e-6)
    assert [r["bytes"] for r in doc["results"]] == [64, 4096]
    assert "ring" not in doc["results"][0]["forced_s"]
    # without --progress: no probe, no estimate
    quiet = run_mpi(2, [BUILD / "bin" / "mpilens-bench-alltoall", "--sizes", "64",
                        "--calls", "4", "--learn", "1", "--chunks", "1", "--skip", "nomodel"])
    assert quiet.returncode == 0 and "MLB-" not in quiet.stderr, quiet.stderr
    assert "probe" not in json.loads(quiet.stdout[quiet.stdout.find("{"):])


def test_alltoall_bench_interval_verdicts() -> None:
    # labelled cases of the interval rule: "within 5 %" only when the whole interval lies
    # below 1.05; identical chunks give a zero-width interval
    from mpilens.bench.alltoall import ratio_interval, verdict
    iv = ratio_interval([(1.02, 1.0)] * 6)
    assert iv is not None and iv["pairs"] == 6
    assert iv["lo"] == pytest.approx(1.02) and iv["hi"] == pytest.approx(1.02)
    assert verdict(iv, 1.05, "within 5 %", "not within 5 %") == "within 5 %"
    wide = ratio_interval([(x, 1.0) for x in (0.8, 1.3, 0.9, 1.25, 1.0, 1.2)])
    assert wide is not None and wide["ratio"] == pytest.approx(6.45 / 6)
    assert wide["lo"] < 1.05 < wide["hi"]
    assert verdict(wide, 1.05, "within 5 %", "not within 5 %") == "not resolved"
    slow = ratio_interval([(x, 1.0) for x in (1.2, 1.3, 1.25, 1.22)])
    assert verdict(slow, 1.05, "within 5 %", "not within 5 %") == "not within 5 %"
    assert verdict(slow, 1.0, "faster", "slower") == "slower"
    assert ratio_interval([]) is None and verdict(None, 1.0, "a", "b") == "no chunk after learning"


def test_alltoall_bench_keeps_existing_json(tmp_path: Path) -> None:
    # an existing result is refused before anything runs, and kept byte for byte
    out = tmp_path / "a2a.json"
    out.write_text('{"family": "alltoall"}\n')
    for family in ("alltoall", "repro"):
        _one_error_line(cli([family, "--json", str(out)], launch=False),
                        f"--json {out} exists: choose another file or add --force")
        assert out.read_text() == '{"family": "alltoall"}\n'
    _one_error_line(cli(["alltoall", "--json", str(tmp_path / "no" / "a.json")], launch=False),
                    "does not exist")


def test_alltoall_bench_network_model_errors(tmp_path: Path) -> None:
    _one_error_line(cli(["alltoall", "--network-model", str(tmp_path / "none.json")],
                        launch=False), "no such file")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mpilens-netmodel"}')
    _one_error_line(cli(["alltoall", "--np", "2", "--sizes", "64", "--calls", "20",
                         "--repeat", "1", "--network-model", str(bad)], launch=False),
                    f"MPILENS_NETWORK_MODEL='{bad}' has no key 'version'")


def test_no_progress_for_repro_and_alltoall(tmp_path: Path, capsys: pytest.CaptureFixture
                                            ) -> None:
    """docs/bench.md lists --no-progress among the driver's options: `bench repro` and
    `bench alltoall` take it too, and then do not announce their expected duration (the
    JSON still records it)."""
    from mpilens.bench import launch as bench_launch

    line = ["sh", "-c", 'echo "MLB-ESTIMATE 123" >&2; echo "{}"', "sh"]
    for progress, said in ((True, "repro: expected duration about 123 s"), (False, "")):
        proc, expected = bench_launch.run_streamed(line, [], "repro", progress=progress)
        assert (proc.returncode, proc.stdout, expected) == (0, "{}\n", 123.0)
        err = capsys.readouterr().err
        assert (said in err if said else err == ""), err
    out = tmp_path / "repro.json"
    got = cli(["repro", "--np", "2", "--samples", "1", "--no-progress", "--json", str(out)],
              launch=False)
    assert got.returncode == 0, got.stderr
    assert json.loads(out.read_text())["expected_s"] > 0
    helps = {f: cli([f, "--help"], launch=False).stdout for f in ("alltoall", "repro")}
    assert all("--no-progress" in h for h in helps.values())
