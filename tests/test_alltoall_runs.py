"""Adaptive Alltoall across runs (issue 17): the learning cache, provisional choices from few
calls, `mpilens tune --from PROFILE`, and what the profile reports while still learning.

Every test launches real MPI jobs under libmpilens (mpilens-exec).  conftest gives every
test its own XDG_CACHE_HOME, so the default cache of these jobs lives in the test's
temporary directory, never in the user's ~/.cache."""

from __future__ import annotations

import fcntl
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import BUILD, FLAVOUR, read_profile, run_mpi
from test_alltoall import ALGOS, assert_choice_rule, choices, exe

NP = 4 if FLAVOUR == "openmpi" else 3
BYTES = 1024


def fnv1a(text: str) -> int:
    h = 2166136261
    for b in text.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def env_for(tmp_path: Path, name: str, **extra: str) -> dict[str, str]:
    """Adaptive, N = 3 calls per candidate (turns of one call), all eight candidates
    (no model: the count is known), no race, machine 'testbox'."""
    env = {"MPILENS_ALLTOALL": "adaptive", "MPILENS_ALLTOALL_LEARN": "3",
           "MPILENS_ALLTOALL_MODEL": "off", "MPILENS_ALLTOALL_RACE": "off",
           "MPILENS_ALLTOALL_PROVISIONAL": "off", "MPILENS_ALLTOALL_CHECK": "0",
           "MPILENS_MACHINE": "testbox", "MPILENS_OUTPUT": str(tmp_path / f"{name}.prof")}
    env.update(extra)
    return env


def run(tmp_path: Path, name: str, calls: int, np_: int = NP, **extra: str
        ) -> tuple[dict, dict[int, tuple[str, int]], str]:
    """One job of a2a_adaptive: its single alltoall record, per-rank (algorithm,
    learning calls) and stderr."""
    proc = run_mpi(np_, exe(BUILD, "a2a_adaptive") + [str(calls), str(BYTES)],
                   env=env_for(tmp_path, name, **extra))
    header, _ = read_profile(tmp_path / f"{name}.prof")
    [rec] = header["alltoall"]
    return rec, choices(proc.stdout)[BYTES], proc.stderr


def default_cache() -> Path:
    """Where the cache of machine 'testbox' goes by default ($XDG_CACHE_HOME/mpilens/...)."""
    return Path(os.environ["XDG_CACHE_HOME"]) / "mpilens" / f"tuning-testbox-{fnv1a('testbox'):08x}.json"


def cache_entry(path: Path) -> dict:
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"], doc["machine"]) == ("mpilens-alltoall-cache", 1, "testbox")
    [entry] = doc["entries"]
    assert (entry["comm_size"], entry["ranks_per_node"], entry["min_bytes"], entry["max_bytes"]) == \
        (NP, NP, 1024, 2047)
    return entry


def mpi_slots(entry: dict) -> int:
    """The slots in which "mpi" has samples (a learning cache entry's): the most pairs
    the choice's signed-rank test against it can have (learn.c, ml_a2a_beats)."""
    return sum(1 for c in entry["samples"]["mpi"]["calls"] if c)


def assert_mpi_kept_if_few_pairs(alg: str, slots: int) -> None:
    """With n pairs the smallest p of the one-sided exact signed-rank test is 2^-n: with
    n <= 4 no candidate can be faster than "mpi" beyond the noise at 0.05 (divided by the
    number of candidates tested: never larger), whatever the measured times; mpi runs."""
    if 2.0 ** -slots >= 0.05:
        assert alg == "mpi", (alg, slots)


# ---- item 4: what the profile says while still learning ----

def test_times_and_source_reported_while_learning(build: Path, tmp_path: Path) -> None:
    # model on (Grouping measures P-LogP: grouping_s > 0), N = 3: at least 2 candidates
    # x 3 calls, so 5 calls end while learning; no cache.
    rec, per_rank, _ = run(tmp_path, "l", 5, MPILENS_ALLTOALL_MODEL="on", MPILENS_ALLTOALL_CACHE="off")
    assert (rec["algorithm"], rec["source"], rec["calls"], rec["learning_calls"],
            rec["carried_calls"]) == (None, "learning", 5, 5, 0)
    assert set(per_rank.values()) == {("none", 5)}
    assert rec["learning_s"] > 0 and rec["grouping_s"] > 0
    # the candidates measured so far have their times so far
    measured = set(rec["learned_mean_s"])
    assert measured and measured <= set(rec["candidates"])
    from test_cli_support import mpilens_inproc
    proc = mpilens_inproc("report", tmp_path / "l.prof", "--format", "json")
    [row] = json.loads(proc.stdout)["alltoall"]
    assert (row["source"], row["algorithm"], row["learning_s"], row["grouping_s"]) == \
        ("learning", None, rec["learning_s"], rec["grouping_s"])
    text = " ".join(mpilens_inproc("report", tmp_path / "l.prof").stdout.split())
    assert "5 of 5 calls (100.0 %) were learning" in text
    assert not re.search(r"were learning, 0 ?\w* per rank in Grouping and Learning", text), text


@pytest.mark.parametrize("how", ["learning", "learned", "reused", "tuning-file", "forced",
                                 "provisional"])
def test_source_consistent_with_algorithm(build: Path, tmp_path: Path, how: str) -> None:
    env: dict[str, str] = {"MPILENS_ALLTOALL_CACHE": str(tmp_path / "c.json")}
    calls = {"learning": 5, "learned": 30, "reused": 5, "tuning-file": 5, "forced": 5,
             "provisional": 10}[how]
    if how == "reused":  # learned by an earlier run, from the cache
        run(tmp_path, "pre", 30, **env)
    if how == "tuning-file":
        tune = tmp_path / "t.tune"
        tune.write_text(f"mpilens-tuning\t1\ntestbox\t{NP}\t{NP}\t1024\t2047\tring\t1e-5\n")
        env["MPILENS_TUNING_FILE"] = str(tune)
    if how == "forced":
        env["MPILENS_ALLTOALL"] = "bruck"
    if how == "provisional":  # N = 10: 80 learning calls, 10 per run
        env.update(MPILENS_ALLTOALL_LEARN="10", MPILENS_ALLTOALL_PROVISIONAL="on")
        run(tmp_path, "pre", 10, **env)
    rec, per_rank, _ = run(tmp_path, "s", calls, **env)
    assert rec["source"] == how
    assert (rec["algorithm"] is None) == (how == "learning")
    assert set(per_rank.values()) == {(rec["algorithm"] or "none", rec["learning_calls"])}
    if how == "tuning-file":
        assert rec["algorithm"] == "ring"


# ---- item 1: learning that spans runs ----

def test_learning_spans_runs_with_carried_samples(build: Path, tmp_path: Path) -> None:
    # 8 calls per run, 8 candidates x N = 3 = 24 learning calls: runs 1 and 2 end
    # learning, run 3 finishes at its last call, run 4 reuses the choice.  Default
    # cache location (the test's XDG_CACHE_HOME).
    path = default_cache()
    want = [("learning", 8, 0), ("learning", 8, 8), ("learned", 8, 16), ("reused", 0, 0)]
    alg = None
    for k, (source, lcalls, carried) in enumerate(want, 1):
        rec, per_rank, stderr = run(tmp_path, f"r{k}", 8)
        assert "learning cache" not in stderr, stderr
        assert (rec["source"], rec["calls"], rec["learning_calls"], rec["carried_calls"]) == \
            (source, 8, lcalls, carried), k
        if source == "learning":
            assert rec["algorithm"] is None and set(per_rank.values()) == {("none", 8)}
            entry = cache_entry(path)
            # each candidate had one call per run (turns of one call), all in slot k - 1
            assert (entry["state"], entry["learning_calls"], entry["runs"], entry["calls_per_run"],
                    entry["candidates"]) == ("learning", 8 * k, k, 8, ALGOS)
            for a in ALGOS:
                assert entry["samples"][a]["calls"] == [1] * k + [0] * (16 - k)
                assert all(t > 0 for t in entry["samples"][a]["time_s"][:k])
        elif source == "learned":
            alg = rec["algorithm"]
            # three samples per candidate never show one faster than mpi beyond the noise
            assert alg == "mpi" and set(per_rank.values()) == {(alg, 8)}
            assert_choice_rule(rec["learned_mean_s"], alg)
            entry = cache_entry(path)
            assert (entry["state"], entry["algorithm"], entry["learning_calls"], entry["runs"]) == \
                ("learned", alg, 24, 3)
            assert "samples" not in entry
        else:
            assert rec["algorithm"] == alg and set(per_rank.values()) == {(alg, 0)}
    assert not list(path.parent.glob("*.tmp-*"))


def test_cache_off_and_path_setting(build: Path, tmp_path: Path) -> None:
    rec, _, _ = run(tmp_path, "a", 8, MPILENS_ALLTOALL_CACHE="off")
    rec, _, _ = run(tmp_path, "b", 8, MPILENS_ALLTOALL_CACHE="off")
    assert rec["carried_calls"] == 0
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "mpilens").exists()
    own = tmp_path / "sub" / "dir" / "mine.json"  # directories are created
    run(tmp_path, "c", 8, MPILENS_ALLTOALL_CACHE=str(own))
    rec, _, _ = run(tmp_path, "d", 8, MPILENS_ALLTOALL_CACHE=str(own))
    assert rec["carried_calls"] == 8 and cache_entry(own)["learning_calls"] == 16


def _blocked_on(path: Path) -> int:
    """Processes waiting for a flock on path (/proc/locks lines with '->')."""
    ino = os.stat(path).st_ino
    n = 0
    for line in Path("/proc/locks").read_text().splitlines():
        f = line.split()
        if "->" in f and "FLOCK" in f and any(x.count(":") == 2 and x.split(":")[2] == str(ino)
                                                for x in f):
            n += 1
    return n


def test_two_jobs_finishing_together_both_leave_their_samples(build: Path, tmp_path: Path) -> None:
    # The test holds the cache's lock while two jobs (2 ranks each, 8 calls: one per
    # candidate) run; both must end up waiting for it at MPI_Finalize (seen in
    # /proc/locks), then each merges under the lock: 16 samples, 2 per candidate.
    # A writer without the lock would not wait, and two read-merge-writes at once
    # would lose one job's samples.
    cache = tmp_path / "c.json"
    lock = tmp_path / "c.json.lock"
    results: dict[str, object] = {}

    def job(name: str) -> None:
        try:
            results[name] = run(tmp_path, name, 8, np_=2, MPILENS_ALLTOALL_CACHE=str(cache))
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[name] = exc

    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        threads = [threading.Thread(target=job, args=(n,)) for n in ("j1", "j2")]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 150
        while _blocked_on(lock) < 2 and time.monotonic() < deadline and any(
                t.is_alive() for t in threads):
            time.sleep(0.1)
        waiting = _blocked_on(lock)
        fcntl.flock(held, fcntl.LOCK_UN)
    for t in threads:
        t.join(200)
    assert waiting == 2
    for name in ("j1", "j2"):
        assert isinstance(results[name], tuple), results[name]
        rec = results[name][0]  # type: ignore[index]
        assert (rec["source"], rec["learning_calls"], rec["carried_calls"]) == ("learning", 8, 0)
    doc = json.loads(cache.read_text())
    [entry] = doc["entries"]
    assert (entry["comm_size"], entry["state"], entry["learning_calls"], entry["runs"]) == \
        (2, "learning", 16, 2)
    for a in ALGOS:
        assert entry["samples"][a]["calls"] == [2] + [0] * 15
    rec, _, _ = run(tmp_path, "j3", 8, np_=2, MPILENS_ALLTOALL_CACHE=str(cache))
    assert (rec["source"], rec["carried_calls"], rec["learning_calls"]) == ("learned", 16, 8)


@pytest.mark.parametrize("content,why", [
    ("{not json", "is not valid JSON: "),
    ('{"format": "mpilens-alltoall-cache", "version": 1, "machine": "otherbox", "entries": []}',
     "was written for machine 'otherbox', this is 'testbox'"),
    ('{"format": "mpilens-alltoall-cache", "version": 7, "machine": "testbox", "entries": []}',
     "has version 7, expected 1"),
    (('{"format": "mpilens-alltoall-cache", "version": 1, "machine": "testbox", "entries": '
      '[{"comm_size": 4, "ranks_per_node": 4, "min_bytes": 1024, "max_bytes": 2047, '
      '"state": "learned", "algorithm": "nosuch"}]}'), "unknown algorithm 'nosuch'"),
])
def test_corrupt_cache_warns_once_and_the_job_runs(build: Path, tmp_path: Path, content: str,
                                                   why: str) -> None:
    cache = tmp_path / "c.json"
    cache.write_text(content)
    rec, per_rank, stderr = run(tmp_path, "c", 8, MPILENS_ALLTOALL_CACHE=str(cache))
    lines = [ln for ln in stderr.splitlines() if "learning cache" in ln]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"mpilens: the Alltoall learning cache '{cache}' is ignored: it ")
    assert why in lines[0] and lines[0].endswith("(it is replaced at MPI_Finalize)")
    assert (rec["source"], rec["learning_calls"], rec["carried_calls"]) == ("learning", 8, 0)
    assert set(per_rank.values()) == {("none", 8)}
    assert cache_entry(cache)["learning_calls"] == 8  # replaced by a valid file


@pytest.mark.parametrize("writer", ["this", "old"])
def test_candidates_without_calls_have_no_first_turn_minimum(build: Path, tmp_path: Path,
                                                             writer: str) -> None:
    # N = 25 (turns of 5 calls), eight candidates, race after one turn.  Run 1 makes 8
    # calls, fewer than a turn each: spread 5, bruck 3, the other six none, so they have
    # no fastest call of a first turn: the cache says null (writer "this").  Older
    # versions wrote 0 there (writer "old": the file rewritten so); read back as a real
    # minimum, 0 became the best at the first race point of run 2, every candidate
    # "was 1000 x slower" and left, and the stale first one was saved as learned after
    # 32 calls.  With a race factor of 1000 hardly a real time leaves: run 2 (250 calls)
    # learns 8 x 25 - 8 = 192 calls and picks the fastest learned.  (Run 2 expects 8
    # calls: few calls per run, turns of one call; with 6 candidates unsampled the field
    # is not halved, and run 2 is the second run, so it does not decide at MPI_Finalize.)
    env = {"MPILENS_ALLTOALL_LEARN": "25", "MPILENS_ALLTOALL_RACE": "1000",
           "MPILENS_ALLTOALL_PROVISIONAL": "on", "MPILENS_ALLTOALL_CACHE": str(tmp_path / "c.json")}
    rec, per_rank, _ = run(tmp_path, "f1", 8, **env)
    assert (rec["source"], rec["calls"], rec["learning_calls"], rec["carried_calls"]) == \
        ("learning", 8, 8, 0)
    assert set(per_rank.values()) == {("none", 8)}
    path = tmp_path / "c.json"
    entry = cache_entry(path)
    assert (entry["state"], entry["learning_calls"], entry["runs"], entry["calls_per_run"],
            entry["race_point"], entry["candidates"]) == ("learning", 8, 1, 8, 0, ALGOS)
    calls = {a: entry["samples"][a]["calls"] for a in ALGOS}
    assert calls == {a: [{"spread": 5, "bruck": 3}.get(a, 0)] + [0] * 15 for a in ALGOS}
    mins = {a: entry["samples"][a]["first_turn_min_s"] for a in ALGOS}
    assert mins["spread"] > 0 and mins["bruck"] > 0
    assert {a: mins[a] for a in ALGOS[2:]} == {a: None for a in ALGOS[2:]}
    if writer == "old":
        doc = json.loads(path.read_text())
        for a in ALGOS[2:]:
            doc["entries"][0]["samples"][a]["first_turn_min_s"] = 0
        path.write_text(json.dumps(doc))
    rec, per_rank, stderr = run(tmp_path, "f2", 250, **env)
    assert "learning cache" not in stderr, stderr
    alg = rec["algorithm"]
    # k candidates may really be 1000x slower in all their first-turn calls (a load of 19
    # on 2 cores: one candidate, 172 calls): each leaves 20 calls early.  The stale 0
    # minimum made all of them leave, learned after 32 calls: k <= 6 tells them apart
    k, rest = divmod(192 - rec["learning_calls"], 20)
    assert rest == 0 and 0 <= k <= 6, json.dumps(rec)
    assert (rec["source"], rec["calls"], rec["carried_calls"]) == ("learned", 250, 8), \
        json.dumps(rec)
    assert set(per_rank.values()) == {(alg, 192 - 20 * k)}  # every rank agrees
    assert rec["candidates"] == ALGOS and set(rec["learned_mean_s"]) == set(ALGOS)
    if k == 0:
        assert_choice_rule(rec["learned_mean_s"], alg)
    entry = cache_entry(path)
    assert (entry["state"], entry["algorithm"], entry["learning_calls"], entry["runs"]) == \
        ("learned", alg, 200 - 20 * k, 2)


# ---- item 2: provisional choices from few calls ----

def test_provisional_choice_in_a_10_call_run(build: Path, tmp_path: Path) -> None:
    # N = 10, 8 candidates: 80 learning calls.  Run 1 (10 calls, no history) learns.
    # Run 2 expects 10 calls (run 1's): few calls per run, and every candidate has a
    # sample, so the slower half leave first (4 left); it learns for half its calls (5),
    # then runs the best candidate measured so far for the other 5.  Run 3 (the third)
    # halves again (2 left), learns 5 calls, and at MPI_Finalize decides: learned, the
    # best measured mean.  Run 4 (30 calls) reuses it.
    env = {"MPILENS_ALLTOALL_LEARN": "10", "MPILENS_ALLTOALL_PROVISIONAL": "on"}
    want = [("learning", 10, 10, 0), ("provisional", 10, 5, 10), ("learned", 10, 5, 15),
            ("reused", 30, 0, 0)]
    learned = None
    for k, (source, calls, lcalls, carried) in enumerate(want, 1):
        rec, per_rank, _ = run(tmp_path, f"p{k}", calls, **env)
        assert (rec["source"], rec["calls"], rec["learning_calls"], rec["carried_calls"]) == \
            (source, calls, lcalls, carried), k
        alg = rec["algorithm"]
        assert set(per_rank.values()) == {(alg or "none", lcalls)}  # every rank agrees
        if source in ("provisional", "learned"):
            # which candidate runs depends on the measured times (mpi, the default, unless
            # another is faster beyond the noise: with two left, five samples that all
            # favour it are enough, and MPICH's own can lose five times in a row); what
            # holds whatever the times: the choice rule on the record's means
            assert alg in ALGOS and set(rec["learned_mean_s"]) == set(ALGOS)
            assert_choice_rule(rec["learned_mean_s"], alg)
            # the candidates left: 8 halved to 4 (run 2), to 2 (run 3); a dropped
            # candidate chosen rejoins them
            assert len(rec["candidates"]) >= 8
        if source == "provisional":
            entry = cache_entry(default_cache())
            assert (entry["state"], entry["algorithm"], entry["calls_per_run"],
                    entry["learning_calls"]) == ("learning", alg, 10, carried + lcalls)
            # 8 halved to 4; a dropped candidate chosen (lowest mean) rejoins, last
            left = entry["candidates"]
            assert len(left) == 4 or (len(left) == 5 and left[-1] == alg), left
            assert alg in left and "mpi" in left
            assert_mpi_kept_if_few_pairs(alg, mpi_slots(entry))
        if source == "learned":
            learned = alg
            entry = cache_entry(default_cache())
            assert (entry["state"], entry["algorithm"], entry["learning_calls"], entry["runs"]) == \
                ("learned", alg, 20, 3)
        if source == "reused":
            assert alg == learned


def test_eight_calls_per_run_final_within_three_runs(build: Path, tmp_path: Path) -> None:
    # The default N = 50 (turns of 5 calls), 8 candidates (model off), 8 calls per run
    # (an FFT's): run 1 (no history) learns spread 5 and bruck 3 calls.  Run 2 knows
    # the run makes 8 calls: turns of one call, so the 6 candidates without a sample get
    # one each (6 learning calls), then the best measured runs (provisional).  Run 3:
    # every candidate has a sample: the slower half leave (4 left), one call each, then
    # the best measured runs, and at MPI_Finalize the choice is final (learned).  Run 4
    # reuses it: no learning call.
    env = {"MPILENS_ALLTOALL_LEARN": "50", "MPILENS_ALLTOALL_PROVISIONAL": "on"}
    want = [("learning", 8, 0), ("provisional", 6, 8), ("learned", 4, 14), ("reused", 0, 0)]
    learned, slots = None, 0
    for k, (source, lcalls, carried) in enumerate(want, 1):
        rec, per_rank, _ = run(tmp_path, f"e{k}", 8, **env)
        assert (rec["source"], rec["learning_calls"], rec["carried_calls"]) == \
            (source, lcalls, carried), k
        alg = rec["algorithm"]
        assert set(per_rank.values()) == {(alg or "none", lcalls)}
        if k == 1:
            entry = cache_entry(default_cache())
            calls = {a: sum(entry["samples"][a]["calls"]) for a in ALGOS}
            assert calls == {a: {ALGOS[0]: 5, ALGOS[1]: 3}.get(a, 0) for a in ALGOS}
        if source in ("provisional", "learned"):
            assert_choice_rule(rec["learned_mean_s"], alg)
        if source == "provisional":
            entry = cache_entry(default_cache())
            assert "mpi" in entry["candidates"]  # the default never leaves
            slots = mpi_slots(entry)
            assert_mpi_kept_if_few_pairs(alg, slots)
        if source == "learned":
            # kept through the halving; one more call each (4 candidates, 4 calls): at most
            # one more slot of mpi's, so 1-2 samples never beat it
            assert_mpi_kept_if_few_pairs(alg, slots + 1)
            learned = alg
            entry = cache_entry(default_cache())
            assert (entry["state"], entry["algorithm"], entry["runs"], entry["learning_calls"]) \
                == ("learned", alg, 3, 18)
        if source == "reused":
            assert alg == learned


def test_provisional_choice_applies_the_race(build: Path, tmp_path: Path) -> None:
    # a provisional choice first drops the candidates at or above the first race factor
    # x the best measured, as a race point would: with 1.000001 only the best is left, and
    # mpi, which never leaves (the default).  If mpi was the best it wins at once
    # (learned); otherwise the two stay and mpi runs (provisional): one or two samples
    # each cannot show the other faster beyond the noise.  Either way after this run's 5
    # learning calls, and mpi runs.
    env = {"MPILENS_ALLTOALL_LEARN": "10", "MPILENS_ALLTOALL_PROVISIONAL": "on",
           "MPILENS_ALLTOALL_RACE": "1000,1000"}
    run(tmp_path, "b1", 10, **env)
    rec, per_rank, _ = run(tmp_path, "b2", 10, **{**env, "MPILENS_ALLTOALL_RACE": "1.000001,1000,1000"})
    alg = rec["algorithm"]
    assert (rec["source"], rec["learning_calls"], rec["carried_calls"]) in \
        (("learned", 5, 10), ("provisional", 5, 10)), rec
    assert set(per_rank.values()) == {(alg, 5)}
    assert_choice_rule(rec["learned_mean_s"], alg)
    entry = cache_entry(default_cache())
    if rec["source"] == "learned":  # mpi was the best: the only one left
        assert (entry["state"], entry["algorithm"], entry["learning_calls"]) == ("learned", alg, 15)
        assert alg == "mpi"
    else:
        assert (entry["state"], entry["algorithm"], entry["learning_calls"]) == ("learning", alg, 15)
        assert len(entry["candidates"]) == 2 and "mpi" in entry["candidates"], entry
        assert alg in entry["candidates"]
        assert_mpi_kept_if_few_pairs(alg, mpi_slots(entry))


# ---- item 3: `mpilens tune --from PROFILE` pre-fills the cache ----

@pytest.mark.parametrize("profiled", ["adaptive", "native"])
def test_tune_from_profile_makes_the_next_run_start_in_running(build: Path, tmp_path: Path,
                                                                profiled: str) -> None:
    # A run with blocks of 100 and 1024 bytes, profiled natively (sizes from MPI_Alltoall's
    # histogram: classes 64-127 and 1024-2047) or adaptively (its records: 100 and 1024).
    prof = tmp_path / "app.prof"
    env = {"MPILENS_OUTPUT": str(prof)}
    if profiled == "adaptive":
        env.update(MPILENS_ALLTOALL="adaptive", MPILENS_ALLTOALL_CACHE="off")
    run_mpi(NP, exe(build, "a2a_adaptive") + ["3", "100", "1024"], env=env)
    cli_env = {**os.environ, "MPILENS_BUILD": str(build), "MPILENS_MACHINE": "testbox",
               "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python"),
               "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
    proc = subprocess.run([sys.executable, "-m", "mpilens.cli", "tune", "--from", str(prof),
                           "--learn", "2"], env=cli_env, capture_output=True, text=True,
                          timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr
    path = default_cache()
    assert f"learning cache: {path}" in proc.stdout
    doc = json.loads(path.read_text())
    got = sorted((e["comm_size"], e["ranks_per_node"], e["min_bytes"], e["max_bytes"], e["state"],
                  e["learning_calls"]) for e in doc["entries"])
    assert got == [(NP, NP, 64, 127, "learned", 2 * len(ALGOS)),
                   (NP, NP, 1024, 2047, "learned", 2 * len(ALGOS))]
    alg = {e["min_bytes"]: e["algorithm"] for e in doc["entries"]}
    # the next production run: Running from its first call at both sizes
    out = run_mpi(NP, exe(build, "a2a_adaptive") + ["4", "100", "1024"],
                  env=env_for(tmp_path, "next", MPILENS_ALLTOALL_LEARN="50"))
    per_size = choices(out.stdout)
    assert set(per_size[100].values()) == {(alg[64], 0)}
    assert set(per_size[1024].values()) == {(alg[1024], 0)}
    header, _ = read_profile(tmp_path / "next.prof")
    assert sorted((r["bytes"], r["source"], r["algorithm"], r["learning_calls"])
                  for r in header["alltoall"]) == [(100, "reused", alg[64], 0),
                                                   (1024, "reused", alg[1024], 0)]


@pytest.mark.parametrize("argv,why", [
    (["--from", "PROF", "--np", "2"], "give either --from or --np/--sizes"),
    (["--from", "PROF", "--cache", "off"], "--cache off without --output"),
    (["--from", "MISSING"], "no such file"),
])
def test_tune_from_bad_input_one_line(build: Path, tmp_path: Path, argv: list[str], why: str) -> None:
    prof = tmp_path / "p.prof"
    run_mpi(2, exe(build, "a2a_adaptive") + ["1", "64"], env={"MPILENS_OUTPUT": str(prof)})
    argv = [str(prof) if a == "PROF" else str(tmp_path / "nope.prof") if a == "MISSING" else a
            for a in argv]
    cli_env = {**os.environ, "MPILENS_BUILD": str(build),
               "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    proc = subprocess.run([sys.executable, "-m", "mpilens.cli", "tune", *argv], env=cli_env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and why in lines[0] and "Traceback" not in proc.stderr, proc.stderr


# ---- the benchmark's application: examples/fft2d ----

FFT_LINE = re.compile(r"fft2d: n=64 ranks=(\d) alltoalls=8 block_bytes=(\d+) time_s=\S+ "
                      r"max_err=(\S+) (ok|FAILED)")


@pytest.mark.parametrize("mode,wrong", [("native", "0"), ("adaptive", "0"), ("ring", "0"),
                                        ("adaptive", "1")])
def test_fft2d_example_checks_its_spectrum(build: Path, tmp_path: Path, mode: str, wrong: str) -> None:
    # 64 x 64 grid, 4 round trips: 8 MPI_Alltoall calls of (64/P)^2 complex doubles per
    # block; the spectrum and the round trip are checked, a perturbed spectrum must fail
    np_ = 4 if FLAVOUR == "openmpi" else 2
    proc = run_mpi(np_, [str(build / "bin" / "mpilens-exec"), str(build / "examples" / "fft2d"),
                         "64", "4", wrong],
                   env={"MPILENS_ALLTOALL": mode, "MPILENS_OUTPUT": str(tmp_path / "f.prof")},
                   check=False)
    m = FFT_LINE.search(proc.stdout)
    assert m, proc.stdout + proc.stderr
    assert (int(m[1]), int(m[2])) == (np_, 16 * (64 // np_) ** 2)
    if wrong == "1":
        assert m[4] == "FAILED" and float(m[3]) >= 1e-6 * 0.999 and proc.returncode != 0
        return
    assert m[4] == "ok" and float(m[3]) < 1e-9 and proc.returncode == 0
    header, _ = read_profile(tmp_path / "f.prof")
    assert header["functions"]["MPI_Alltoall"]["calls"] == 8 * np_


# ---- issue 30: the choice is consistent with the measured means ----

def test_choice_never_above_a_dropped_candidates_measured_mean(build: Path, tmp_path: Path) -> None:
    """Given samples (a learning cache written here): spread and pair are left with 3
    calls each (N = 3: learning ends at once), at 2 ms and 1 ms per call; ring was
    dropped earlier with a measured 0.5 ms.  The run must not choose pair (the best of
    those left) over ring, whose measured mean is lower: it runs ring, on every rank,
    and reports ring's 0.5 ms as the lowest learned mean.  A dropped candidate slower
    than the best left (4 ms) is not chosen."""
    path = default_cache()
    run(tmp_path, "seed", 2)  # a learning entry of this key to rewrite
    doc = json.loads(path.read_text())

    def sample(per_call: float) -> dict:
        # time_s is summed over the ranks, per slot: 3 calls in slot 0
        return {"calls": [3] + [0] * 15, "time_s": [per_call * 3 * NP] + [0.0] * 15,
                "first_turn_min_s": per_call * NP}

    for dropped, want in (({"ring": 5e-4, "bruck": 4e-3}, "ring"), ({"bruck": 4e-3}, "pair")):
        entry = doc["entries"][0]
        entry.update({"state": "learning", "algorithm": None, "candidates": ["spread", "pair"],
                      "first_candidates": ["spread", "pair", *dropped], "dropped": dropped,
                      "samples": {"spread": sample(2e-3), "pair": sample(1e-3)},
                      "race_point": 0})
        path.write_text(json.dumps(doc))
        rec, per_rank, stderr = run(tmp_path, f"c-{want}", 4)
        assert "learning cache" not in stderr, stderr
        assert (rec["algorithm"], rec["source"]) == (want, "learned"), rec
        assert set(per_rank.values()) == {(want, 0)}  # every rank, no learning call
        means = rec["learned_mean_s"]
        assert means[want] == min(means.values())
        assert means["pair"] == pytest.approx(1e-3) and means["spread"] == pytest.approx(2e-3)


# ---- issue 30: the MPI's own algorithm stays unless another is better beyond the noise ----

def test_mpi_kept_unless_another_is_faster_beyond_the_noise(build: Path, tmp_path: Path) -> None:
    """Given samples (a learning cache written here, one entry per block size, N = 8 calls
    per candidate, so learning ends at the first call): per slot (one turn each) mean
    times per call in ms; mpi takes 1.0 in every slot.  The choice rests on a one-sided
    exact Wilcoxon signed-rank test of the slots paired by index, alpha 0.05 divided by
    the candidates tested against mpi:
      64 B    spread's median is lower (0.925) but it is slower in 4 of 8 slots
              (T+ = 11, p = 0.19): not beyond the noise, mpi stays (the old rule, the
              lowest median, chose spread)
      256 B   spread 6-12 % faster in all 8 slots (p = 1/256): spread
      1 KiB   pair has the lowest median (0.775) but is noisy (slower in 3 of 8, p = 0.074);
              spread is faster in all 8 (p = 1/256 < 0.05 / 2): spread, not pair
      4 KiB   spread 50 % faster, but in 4 slots only (2 calls each): p = 1/16, too few
              samples to tell: mpi stays"""
    run(tmp_path, "seed", 2)  # a learning entry to copy (the file's exact shape)
    path = default_cache()
    doc = json.loads(path.read_text())
    template = doc["entries"][0]
    noisy = [0.5, 1.2, 0.6, 1.3, 0.7, 1.1, 0.8, 1.05]
    cases = {  # bytes: (per-slot ms by candidate, calls per slot, want)
        64: ({"spread": noisy, "mpi": [1.0] * 8}, 1, "mpi"),
        256: ({"spread": [0.90, 0.92, 0.88, 0.91, 0.93, 0.89, 0.94, 0.92], "mpi": [1.0] * 8}, 1,
              "spread"),
        1024: ({"spread": [0.90, 0.92, 0.88, 0.91, 0.93, 0.89, 0.94, 0.92],
                "pair": [0.5, 1.2, 0.6, 1.3, 0.7, 1.1, 0.8, 0.75], "mpi": [1.0] * 8}, 1, "spread"),
        4096: ({"spread": [0.5] * 4, "mpi": [1.0] * 4}, 2, "mpi"),
    }
    entries = []
    for nbytes, (slots, per_slot, _) in cases.items():
        e = json.loads(json.dumps(template))

        def sample(ms: list[float], per_slot: int = per_slot) -> dict:
            # time_s: summed over the ranks, per slot
            return {"calls": [per_slot] * len(ms) + [0] * (16 - len(ms)),
                    "time_s": [t * 1e-3 * per_slot * NP for t in ms] + [0.0] * (16 - len(ms)),
                    "first_turn_min_s": ms[0] * 1e-3 * NP}

        e.update({"min_bytes": nbytes, "max_bytes": 2 * nbytes - 1, "state": "learning",
                  "algorithm": None, "candidates": list(slots), "first_candidates": list(slots),
                  "dropped": {}, "race_point": 0, "learning_calls": 8 * len(slots),
                  "samples": {a: sample(ms) for a, ms in slots.items()}})
        entries.append(e)
    doc["entries"] = entries
    path.write_text(json.dumps(doc))
    proc = run_mpi(NP, exe(BUILD, "a2a_adaptive") + ["3", *map(str, cases)],
                   env=env_for(tmp_path, "sel", MPILENS_ALLTOALL_LEARN="8"))
    assert "learning cache" not in proc.stderr, proc.stderr
    per_size = choices(proc.stdout)
    header, _ = read_profile(tmp_path / "sel.prof")
    recs = {r["bytes"]: r for r in header["alltoall"]}
    for nbytes, (slots, _, want) in cases.items():
        assert set(per_size[nbytes].values()) == {(want, 0)}, nbytes  # every rank, no learning
        rec = recs[nbytes]
        assert (rec["algorithm"], rec["source"]) == (want, "learned"), rec
        med = {a: statistics.median(ms) * 1e-3 for a, ms in slots.items()}
        assert rec["learned_mean_s"] == pytest.approx(med), nbytes


# ---- issue 30: a final choice of the MPI's own algorithm costs no collective ----

COUNT_LINE = re.compile(r"rank=(\d+) alltoall_user=(\d+) alltoall_other=(\d+) allreduce=(\d+) "
                        r"comm_dup=(\d+) split=(\d+) bcast=(\d+) barrier=(\d+) p2p=(\d+) alg=(\S+)")
COUNT_KEYS = ("alltoall_user", "alltoall_other", "allreduce", "comm_dup", "split", "bcast")


def engine_calls(tmp_path: Path, name: str, calls: int, **env: str) -> tuple[dict, dict, str]:
    """a2a_count on NP ranks: what the library called underneath the program's `calls`
    Alltoalls of BYTES (counted by the program's own PMPI definitions), the same on every
    rank (returned once, with the p2p count and the choice), and the profile's record."""
    proc = run_mpi(NP, exe(BUILD, "a2a_count") + [str(calls), str(BYTES)],
                   env=env_for(tmp_path, name, **env))
    rows = {int(m[1]): m.groups()[1:] for m in COUNT_LINE.finditer(proc.stdout)}
    assert sorted(rows) == list(range(NP)), proc.stdout
    # every rank took the same path (the point-to-point counts may differ: recursive
    # doubling's phantom ranks on a non-power of two; rank 0's is returned)
    assert len({r[:6] + r[8:] for r in rows.values()}) == 1, rows
    row = rows[0]
    header, _ = read_profile(tmp_path / f"{name}.prof")
    [rec] = header["alltoall"]
    return dict(zip(COUNT_KEYS, map(int, row[:6]))), {"p2p": int(row[7]), "alg": row[8]}, rec


def test_mpi_as_final_choice_runs_on_the_users_communicator(build: Path, tmp_path: Path) -> None:
    # Run 1 learns (N = 1 call each of the 8 candidates, model off, no race): the engine
    # sets itself up (one MPI_Comm_dup, one 71-integer MPI_Allreduce on the user's
    # communicator), learns (the other algorithms' point-to-point traffic on the
    # duplicate, "mpi"'s turn as PMPI_Alltoall on the user's communicator), agrees the
    # learned times (one MPI_Allreduce) and keeps "mpi" (one sample cannot beat it),
    # run on the user's communicator: 1 + 2 Alltoalls there.  Run 2 takes that final
    # choice from the learning cache: no set-up at all, every call is the MPI's own
    # PMPI_Alltoall on the user's communicator, as native runs it (last round's main:
    # a Comm_dup, an Allreduce, and the 10 calls on the duplicate).
    env = {"MPILENS_ALLTOALL_LEARN": "1"}
    zero = dict.fromkeys(COUNT_KEYS, 0)
    got, other, rec = engine_calls(tmp_path, "learn", 10, **env)
    assert got == {**zero, "alltoall_user": 3, "allreduce": 2, "comm_dup": 1}
    assert other["p2p"] > 0 and other["alg"] == "mpi"
    assert (rec["source"], rec["algorithm"], rec["learning_calls"]) == ("learned", "mpi", 8)
    got, other, rec = engine_calls(tmp_path, "final", 10, **env)
    assert got == {**zero, "alltoall_user": 10}
    assert other == {"p2p": 0, "alg": "mpi"}
    assert (rec["source"], rec["algorithm"], rec["calls"], rec["learning_calls"]) == \
        ("reused", "mpi", 10, 0)


@pytest.mark.parametrize("how", ["mpi", "spread", "tuned"])
def test_forced_or_tuned_mpi_costs_no_collective(build: Path, tmp_path: Path, how: str) -> None:
    # Forced "mpi", and "mpi" from the tuning file: every call is PMPI_Alltoall on the
    # user's communicator, nothing else.  Forced "spread" (the control: the counts see the
    # engine): its set-up (a Comm_dup, an Allreduce), then point-to-point only.
    tune = tmp_path / "tune.txt"
    tune.write_text(f"mpilens-tuning\t1\ntestbox\t{NP}\t{NP}\t1024\t2047\tmpi\t1e-5\n")
    env = {"MPILENS_TUNING_FILE": str(tune)} if how == "tuned" else {"MPILENS_ALLTOALL": how}
    got, other, rec = engine_calls(tmp_path, how, 6, **env)
    zero = dict.fromkeys(COUNT_KEYS, 0)
    if how == "spread":
        assert got == {**zero, "allreduce": 1, "comm_dup": 1}
        assert other == {"p2p": 6 * (NP - 1), "alg": "spread"}  # NP - 1 Isends per call
    else:
        assert got == {**zero, "alltoall_user": 6}
        assert other == {"p2p": 0, "alg": "mpi"}
    source = {"tuned": "tuning-file"}.get(how, "forced")
    assert (rec["source"], rec["algorithm"], rec["calls"]) == (source, other["alg"], 6)
