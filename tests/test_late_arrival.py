"""Late arrival per collective (runtime/core/late.c, docs/runtime.md "Late arrival"): the
rank lines' `late_arrival` counts, on real jobs of tests/progs/advise_app, and advise's
late rank from them (python/mpilens/advise/late.py: binomial test against chance).

- imbalance: the last rank sleeps before each MPI_Allreduce: it is last in every sampled
  call (exact counts), and advise names it;
- compute: every rank sleeps the same before each MPI_Allreduce: nobody is named;
- 1030 MPI_Allreduce: the sample halves at 1024 held (every 2nd call): exactly 515 sampled,
  the counts over the ranks add up to them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import BUILD, launcher
from mpilens.advise.late import binom_tail, clopper_pearson, describe, late_rank
from test_advise import advise, write_model
from test_cli_support import cli_env, workdir

APP = BUILD / "tests" / "advise_app"
EXEC = BUILD / "bin" / "mpilens-exec"


def run(name: str, np_: int, *args: object, env: dict[str, str] | None = None
        ) -> tuple[Path, list[dict[str, Any]]]:
    out = workdir() / f"late-{name}.prof"
    proc = subprocess.run([*launcher(np_), str(EXEC), str(APP), *map(str, args)],
                          env=cli_env({"MPILENS_OUTPUT": str(out), **(env or {})}),
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0 and out.exists(), proc.stderr[-3000:]
    rows = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    return out, rows[1:]


def test_the_late_rank_is_last_in_every_sampled_call(build: Path, tmp_path: Path) -> None:
    # rank 2 sleeps 500 ms before each Allreduce; ranks 0, 1 wait for it.  (Another rank is
    # last only if it is held up for more than 500 ms between two calls: with 30 ms, 2 of
    # 12 calls had rank 0 last at a load average of 19 on 2 cores)
    np_, iters = 3, 8
    prof, ranks = run("imbalance", np_, "imbalance", iters, 500000)
    la = {r["rank"]: r["late_arrival"] for r in ranks}
    assert all(x["sampled"] == x["clear"] == iters and x["every"] == 1 for x in la.values()), la
    last = [la[r]["last"] for r in range(np_)]
    assert last == [la[r]["last_clear"] for r in range(np_)] == [0, 0, iters]
    # it waited far less than the next: about the 500 ms sleep per call
    assert la[2]["gap_s"] > iters * 0.250 and la[0]["gap_s"] == la[1]["gap_s"] == 0
    s = late_rank(ranks, np_)
    assert s is not None and s["named"] and s["rank"] == 2 and s["last"] == iters
    assert s["p"] == pytest.approx(np_ * (1 / np_) ** iters, rel=1e-9)
    model = write_model(tmp_path / "m.json", prof)
    res = advise(prof, model)
    first = res["findings"][0]
    assert first["key"] == "imbalance" and first["figures"]["late_arrival"]["p"] == \
        pytest.approx(s["p"], rel=1e-12)
    # 3 ranks: named on a host with 3 CPUs or more; on fewer (this 2-core machine, CI)
    # advise cannot tell a sleeping rank from one waiting for a CPU: it names nobody
    over = res["machine"]["oversubscribed"]
    assert first["figures"]["last_rank"] == (None if over else 2)
    assert f"rank 2 arrives last in {iters} of {iters} sampled collectives" in first["what"]
    assert first["what"].count("cannot tell which rank is late") == (1 if over else 0)
    # the same profile as if run on other machines (its rank lines' CPUs and hosts given)
    host = ranks[0]["host"]
    cases = {  # label: per rank (host, online CPUs, affinity); the late rank named, or
        # the oversubscribed host advise gives instead (host, ranks, CPUs)
        "one CPU per rank": ([(host, 3, "0-2")] * 3, 2),
        "3 ranks on 2 CPUs": ([(host, 2, "0-1")] * 3, (host, 3, 2)),
        "3 ranks on 8 CPUs pinned to 2": ([(host, 8, "0"), (host, 8, "1"), (host, 8, "1")],
                                          (host, 3, 2)),
        "the late rank's host not oversubscribed": ([("a", 1, "0"), ("a", 1, "0"), ("b", 1, "0")],
                                                     2),
        "the late rank's host oversubscribed": ([("a", 1, "0"), ("b", 1, "0"), ("b", 1, "0")],
                                                ("b", 2, 1))}
    for label, (machine, expect) in cases.items():
        given = _on_machine(prof, tmp_path / "given.prof", machine)
        f = next(x for x in advise(given, model)["findings"] if x["key"] == "imbalance")
        withheld = f["figures"]["last_rank_withheld"]
        if isinstance(expect, tuple):
            h, n, cpus = expect
            assert f["figures"]["last_rank"] is None, label
            assert withheld == {"rank": 2, "host": h, "ranks": n, "cpus": cpus}, label
            assert f"cannot tell which rank is late: {n} ranks on {cpus} CPUs ({h})" \
                in f["what"], label
            assert f"or run at most {cpus} ranks on {h}" in f["change"], label
            assert f["confidence"] == "low", label
        else:
            assert f["figures"]["last_rank"] == expect, label
            assert withheld is None and "cannot tell" not in f["what"], label
            assert "rank 2 spends the least time waiting" in f["change"], label
            oversubscribed = any(m[0] == "a" for m in machine)
            assert f["confidence"] == ("low" if oversubscribed else "high"), label
    # the same job had no call whose last arrival stands out: imbalance still, nobody named
    rows = [json.loads(x) for x in prof.read_text().splitlines() if x.strip()]
    for r in rows[1:]:
        r["late_arrival"].update(clear=0, last_clear=0, gap_s=0)
    blurred = tmp_path / "blurred.prof"
    blurred.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = advise(blurred, tmp_path / "m.json")
    first = res["findings"][0]
    assert first["key"] == "imbalance" and first["figures"]["last_rank"] is None
    assert "no single rank arrives last beyond chance" in first["what"]


def _on_machine(src: Path, dst: Path, machine: list[tuple[str, int, str]]) -> Path:
    """The profile with each rank's host, online CPUs and affinity replaced."""
    rows = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    for r in rows[1:]:
        host, online, affinity = machine[r["rank"]]
        r.update(host=host, cpus_online=online, affinity=affinity,
                 affinity_cpus=len(affinity.split(",")) if "-" not in affinity
                 else int(affinity.split("-")[1]) - int(affinity.split("-")[0]) + 1)
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


def test_balanced_ranks_name_nobody(build: Path, tmp_path: Path) -> None:
    # every rank sleeps 2 ms before each Allreduce; one rank per CPU: with 3 ranks on 2
    # CPUs MPICH's busy-polling ranks keep the third from its CPU, and it really is last
    # in every call (CI: rank 1 in 20 of 20) -- balanced code, unbalanced machine
    np_, iters = 2, 20
    prof, ranks = run("compute", np_, "compute", iters, 2000)
    la = [r["late_arrival"] for r in ranks]
    assert all(x["sampled"] == iters for x in la) and sum(x["last"] for x in la) == iters
    # the algorithm's own skew favours one rank (Open MPI, 3 ranks: rank 1 waited least in
    # 13-18 of 20 calls, by microseconds): only the calls whose last arrival stands out count
    assert sum(x["last_clear"] for x in la) == la[0]["clear"] <= iters
    # one rank may well be last beyond chance: Intel MPI, 2 ranks, had one rank last in
    # 13-20 of 13-20 clear calls by ~17 us (0.4-0.8 % of the run; 6 of 15 runs): true, and
    # too little to act on -- named only when the lateness is 5 % of the wall time or more
    s = late_rank(ranks, np_)
    assert s is not None and not s["named"], s
    wall = max(r["wall_s"] for r in ranks)
    top = max(la, key=lambda x: x["last_clear"])
    # (how late it was is the machine's: under a load of 13, 35 % of the run -- not beyond
    # chance then; only the figure's own arithmetic is asserted)
    assert s["gap_s"] == top["gap_s"] and s["cost_share"] == pytest.approx(top["gap_s"] / wall)
    res = advise(prof, write_model(tmp_path / "m.json", prof))
    for f in res["findings"] + res.get("withheld", []):
        if f["key"] == "imbalance":
            assert f["figures"]["last_rank"] is None
            assert "no single rank" in f["what"] or "too little to act on" in f["what"]


def _la(rank: int, last: int, gap: float, wall: float, every: int = 1) -> dict[str, Any]:
    return {"rank": rank, "wall_s": wall, "late_arrival": {
        "sampled": 20, "every": every, "clear": 20, "threshold_s": 1e-5, "last": last,
        "last_clear": last, "gap_s": gap}}


@pytest.mark.parametrize("gap,wall,every,named", [
    (0.50, 10.0, 1, True),      # 5 % of the run: named
    (0.49, 10.0, 1, False),     # just below
    (0.25, 10.0, 2, True),      # every 2nd call sampled: 0.25 s stands for 0.5 s
    (0.0003, 0.042, 1, False),  # the Intel MPI case: 17 us a call, 0.7 %
    (0.01, 0.0, 1, True)])      # no wall time known: the binomial test alone
def test_a_late_rank_is_named_only_when_its_lateness_matters(
        gap: float, wall: float, every: int, named: bool) -> None:
    ranks = [_la(0, 0, 0.0, wall, every), _la(1, 20, gap, wall, every)]
    s = late_rank(ranks, 2)
    assert s is not None and s["rank"] == 1 and s["last"] == 20
    assert s["p"] == pytest.approx(2 * 0.5 ** 20, rel=1e-9)
    assert s["named"] is named, s
    if not named:
        assert s["why"] == (f"its lateness adds up to {100 * gap * every / wall:.2g} % of the "
                            "run, below 5 %: too little to act on")
        assert "too little to act on" in describe(s) and describe(s).startswith("no rank is named")


def test_the_sample_halves_when_full(build: Path) -> None:
    np_, iters = 2, 1030  # held 1024, then every 2nd: 512 kept + calls 1026, 1028, 1030
    _, ranks = run("halve", np_, "compute", iters, 0)
    la = [r["late_arrival"] for r in ranks]
    assert all(x["sampled"] == 515 and x["every"] == 2 for x in la), la
    assert sum(x["last"] for x in la) == 515 and sum(x["last_clear"] for x in la) == la[0]["clear"]


def test_without_counted_collectives_it_says_why(build: Path) -> None:
    _, ranks = run("nocomms", 2, "compute", 3, 0, env={"MPILENS_COMMS": "0"})
    assert [r["late_arrival"] for r in ranks] == [
        {"sampled": 0, "why": "MPILENS_COMMS=0: the collectives' places are not counted"}] * 2
    s = late_rank(ranks, 2)
    assert s is not None and not s["named"] and s["rank"] is None
    assert s["why"].startswith("MPILENS_COMMS=0")


def test_binomial_figures() -> None:
    # independent values: P(X >= 3), X ~ Bin(4, 1/2) = 5/16; exact intervals of 0 of 10, 10 of 10
    assert binom_tail(4, 3, 0.5) == pytest.approx(5 / 16, rel=1e-12)
    assert binom_tail(4, 0, 0.5) == 1.0 and binom_tail(4, 5, 0.5) == 0.0
    lo, hi = clopper_pearson(10, 0)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** 0.1, rel=1e-6)
    lo, hi = clopper_pearson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** 0.1, rel=1e-6)
    # without statistics (an older profile): None; without a sample: not named
    assert late_rank([{"rank": 0}], 2) is None
    s = late_rank([{"rank": 0, "late_arrival": {"sampled": 0, "why": "one rank"}}], 1)
    assert s is not None and not s["named"] and s["why"] == "one rank"
    # 4 of 4 clear calls on 2 ranks: p = 2 x 1/16 = 0.125 is chance; 9 of 10 on 4 ranks is not
    two = [{"rank": r, "late_arrival": {"sampled": 9, "every": 1, "clear": 4, "last": 4 * r,
                                        "last_clear": 4 * r}} for r in range(2)]
    s = late_rank(two, 2)
    assert s is not None and s["rank"] == 1 and s["p"] == pytest.approx(0.125) and not s["named"]
    four = [{"rank": r, "late_arrival": {"sampled": 12, "every": 1, "clear": 10,
                                         "last_clear": 9 if r == 3 else int(r == 0)}}
            for r in range(4)]
    s = late_rank(four, 4)
    tail = 10 * 0.25 ** 9 * 0.75 + 0.25 ** 10
    assert s is not None and s["named"] and s["rank"] == 3 and s["p"] == pytest.approx(4 * tail)


def test_no_clear_call_names_nobody_and_costs_nothing() -> None:
    # no sampled call's last arrival stood out (a loaded host): the statistics still
    # carry the lateness share (0: no clear call, no gap), nobody is named
    ranks = [_la(0, 0, 0.0, 2.0), _la(1, 0, 0.0, 2.0)]
    for r in ranks:
        r["late_arrival"].update(clear=0)
    s = late_rank(ranks, 2)
    assert s is not None and not s["named"] and s["rank"] is None
    assert s["cost_share"] == 0.0 and s["why"].startswith("no sampled call's last arrival")
