"""The flight recorder's labelled corpus: jobs killed, hung, aborted or crashed on purpose,
and the verdict `mpilens report` gives each (docs/flight-recorder.md, "How the verdicts
were checked").

    .venv/bin/python tests/flight_corpus.py --mpi openmpi --prefix build/openmpi [-n 3] \
        [--only a,b] [--keep DIR]

runs every scenario n times (the healthy ones at each of their kill moments) and prints
the confusion matrix: expected class x verdict.  tests/test_flight_corpus.py runs a few
of them in CI with the same code.

Every job is tests/progs/flight_corpus on 4 ranks under mpilens-exec, in its own
temporary directory, and is always ended here (SIGTERM to the launcher, then SIGKILL to
any rank left, stopped ones included)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

NP = 4
HEALTHY_OK = ("communicating", "progressing", "none")


@dataclass
class Scenario:
    mode: str
    label: str                       # the expected class (a row of the matrix)
    ok: tuple[str, ...]              # verdict kinds that are right for it
    end: str = "hang"                # hang: wait for dumps, then SIGTERM; kill: SIGTERM at
    #                                  each of kill_at; exit: the job ends by itself;
    #                                  kill9: SIGKILL one rank; stop: wait for a rank to stop
    #                                  and judge the dumps before the kill (Open MPI sends
    #                                  SIGCONT with its SIGTERM: the job then goes on);
    #                                  stopterm: the same, then SIGTERM STOP_S after the
    #                                  stop, and the dumps judged as the job left them
    kill_at: tuple[float, ...] = ()
    dumps: tuple[int, ...] = ()      # hang: the ranks whose hang dumps are waited for
    env: dict[str, str] = field(default_factory=dict)
    ranks: dict[str, Any] = field(default_factory=dict)  # what the verdict must name


HANG = {"MPILENS_HANG_AFTER": "1"}
STOP_S = 5.0  # stopterm: the rank stays stopped this long (5x the recorder's 1 s threshold)
SCENARIOS: dict[str, Scenario] = {
    "pipeline": Scenario("pipeline", "healthy", HEALTHY_OK, "kill", (0.4, 1.3, 2.5)),
    "ring": Scenario("ring", "healthy", HEALTHY_OK, "kill", (0.4, 1.3, 2.5)),
    "colls": Scenario("colls", "healthy", HEALTHY_OK, "kill", (0.4, 1.3, 2.5)),
    "time_limit": Scenario("colls", "healthy (time limit)", ("progressing",), "kill", (2.5,),
                           env={"MPILENS_DUMP_AT": "1"}),
    "ssend2": Scenario("ssend2", "deadlock", ("deadlock",), dumps=(0, 1, 2, 3), env=HANG,
                       ranks={"cycle": [0, 1, 0]}),
    "cycle3": Scenario("cycle3", "deadlock", ("deadlock",), dumps=(0, 1, 2, 3), env=HANG,
                       ranks={"cycle": [0, 1, 2, 0]}),
    "recvrecv": Scenario("recvrecv", "deadlock", ("deadlock",), dumps=(0, 1, 2, 3), env=HANG,
                         ranks={"cycle": [0, 1, 0]}),
    "anysource": Scenario("anysource", "deadlock", ("deadlock",), dumps=(0, 1, 2, 3), env=HANG,
                          ranks={"deadlocked": [0, 1, 2, 3]}),
    "bcast_allreduce": Scenario("bcast_allreduce", "mismatch", ("mismatch",), dumps=(0, 1, 2, 3),
                                env=HANG, ranks={"groups": [[0, 1], [2, 3]]}),
    "skip": Scenario("skip", "mismatch", ("mismatch",), dumps=(0, 1, 2), env=HANG,
                     ranks={"groups": [[0, 1, 2], [3]]}),
    "compute": Scenario("compute", "stuck on computing", ("stuck_on_computing",),
                        dumps=(0, 1, 2), env=HANG, ranks={"on": 3}),
    "sigstop": Scenario("stopme", "stuck on stopped", ("stuck_on_missing", "stuck_on_stopped"),
                        "stop", dumps=(0, 2, 3), env=HANG, ranks={"on": 1}),
    "stopterm": Scenario("stopme", "stopped, then SIGTERM",
                         ("stuck_on_missing", "stuck_on_stopped"), "stopterm", dumps=(0, 2, 3), env=HANG, ranks={"on": 1}),
    "kill9": Scenario("loop", "killed rank", ("missing", "stuck_on_missing"), "kill9",
                      (1.0,), ranks={"missing": [2]}),
    "abort": Scenario("abort", "aborted", ("aborted",), "exit", ranks={"rank": 2, "code": 42}),
    "segv": Scenario("segv", "crashed", ("crashed",), "exit", ranks={"rank": 1}),
}


def _launcher(mpi: str) -> list[str]:
    from mpilens import mpi_env as menv
    return menv.launcher_line(NP, mpi)


def _env(mpi: str, extra: dict[str, str]) -> dict[str, str]:
    """The tests' job environment (tests/conftest.py: mpi_env), with extra."""
    from mpilens import mpi_env as menv
    e = menv.job_env(mpi, allow_root=True)
    e.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    e.setdefault("OMPI_MCA_osc", "sm,rdma,pt2pt")
    if mpi == "intelmpi":  # one node, no fabric: the shared-memory transport
        e.setdefault("I_MPI_FABRICS", "shm")
        e.setdefault("FI_PROVIDER", "shm")
    e.update(extra)
    return e


def _pids(d: Path) -> dict[int, int]:
    out = {}
    for p in d.glob("rank-*.pid"):
        try:
            out[int(p.name.split("-")[1].split(".")[0])] = int(p.read_text())
        except ValueError:
            pass
    return out


def _wait(cond: Any, proc: subprocess.Popen, limit: float) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        if proc.poll() is not None:
            return cond()
        time.sleep(0.05)
    return False


def run_one(sc: Scenario, mpi: str, prefix: Path, kill_at: float | None = None,
            keep: Path | None = None) -> dict[str, Any]:
    """One job of sc; its verdict (the analysis of `mpilens report`)."""
    from mpilens.report import waitsfor
    from mpilens.report.partial import load_any

    with tempfile.TemporaryDirectory(prefix="flight-corpus-") as t:
        tmp = Path(tempfile.mkdtemp(prefix=f"{sc.mode}-", dir=keep)) if keep else Path(t)
        cmd = _launcher(mpi) + [str(prefix / "bin" / "mpilens-exec"),
                                str(prefix / "tests" / "flight_corpus"), sc.mode, str(tmp)]
        env = _env(mpi, {"MPILENS_OUTPUT": str(tmp / "job.prof"), **sc.env})
        proc = subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        d = tmp / "job.prof.partial"
        note = ""
        try:
            started = _wait(lambda: len(_pids(tmp)) == NP, proc, 60)
            if not started:
                note = "the ranks did not start"
            elif sc.end == "kill":
                time.sleep(kill_at or 1.0)
            elif sc.end == "kill9":
                time.sleep(kill_at or 1.0)
                os.kill(_pids(tmp)[2], signal.SIGKILL)
                _wait(lambda: False, proc, 5)
            elif sc.end == "exit":
                _wait(lambda: proc.poll() is not None, proc, 30)
            else:
                since = 0.0
                if sc.end in ("stop", "stopterm"):
                    _wait(lambda: (tmp / "stop-me").exists(), proc, 60)
                    since = (tmp / "stop-me").stat().st_mtime if (tmp / "stop-me").exists() else 0

                def dumped(r: int) -> bool:
                    f = d / f"rank-{r}"
                    try:
                        return f.stat().st_mtime >= since
                    except OSError:
                        return False
                ok = _wait(lambda: all(dumped(r) for r in sc.dumps), proc, 30)
                if not ok:
                    note = "the hang dumps did not come"
                time.sleep(0.2)
                if sc.end == "stop":  # judged as they are: Open MPI's kill resumes the rank
                    shutil.copytree(d, tmp / "snapshot")
                    d = tmp / "snapshot"
                if sc.end == "stopterm" and since:  # stopped for STOP_S at least
                    time.sleep(max(0.0, since + STOP_S - time.time()))
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                note = "the launcher outlived SIGTERM by 20 s"
        finally:
            for pid in _pids(tmp).values():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        if (tmp / "job.prof").exists() and not d.exists():
            return {"verdict": "finished", "text": "the job finished", "note": note}
        if not d.exists():
            return {"verdict": "no_dump", "text": "no partial profile", "note": note}
        w = waitsfor.analyse(load_any([str(d)]))
        return {"verdict": w["verdict"]["kind"], "text": w["verdict"]["text"], "w": w,
                "note": note}


def names_right(sc: Scenario, res: dict[str, Any]) -> bool:
    """The verdict names the ranks sc expects (only for verdicts of the right kind)."""
    w = res.get("w")
    if w is None or res["verdict"] not in sc.ok:
        return False
    want = sc.ranks
    if "cycle" in want:
        return want["cycle"] in w["cycles"]
    if "deadlocked" in want:
        return w["deadlocked"] == want["deadlocked"] and bool(w["cycles"])
    if "groups" in want:
        return any(sorted(g["ranks"] for g in m["groups"]) == want["groups"]
                   for m in w["mismatched"])
    if "on" in want:  # the verdict, or the hang it gives as the first step of a time line
        on = want["on"]
        return res["text"].startswith(f"stuck on rank {on}:") or \
            (res["text"].startswith("hung from ") and f"(stuck on rank {on}," in res["text"])
    if "missing" in want:
        return w["missing"] == want["missing"]
    if "code" in want:
        return res["text"].startswith(f"aborted: rank {want['rank']} ") and \
            f"error code {want['code']}" in res["text"]
    if "rank" in want:
        return res["text"].startswith(f"crashed: rank {want['rank']} on SIGSEGV")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", choices=("openmpi", "mpich", "intelmpi"), required=True)
    ap.add_argument("--prefix", type=Path, required=True, help="build/<mpi>")
    ap.add_argument("-n", type=int, default=1, help="runs of each scenario and kill moment")
    ap.add_argument("--only", default="", help="scenarios, comma-separated")
    ap.add_argument("--keep", type=Path, help="keep each job's directory under this one")
    a = ap.parse_args(argv)
    names = [s for s in a.only.split(",") if s] or list(SCENARIOS)
    matrix: dict[str, dict[str, int]] = {}
    wrong: list[str] = []
    named = total = 0
    t0 = time.monotonic()
    for i in range(a.n):
        for name in names:
            sc = SCENARIOS[name]
            for k in (sc.kill_at or (None,)):
                res = run_one(sc, a.mpi, a.prefix.resolve(), k, a.keep)
                row = matrix.setdefault(sc.label, {})
                row[res["verdict"]] = row.get(res["verdict"], 0) + 1
                good = res["verdict"] in sc.ok
                named_ok = good and names_right(sc, res)
                total += 1
                named += named_ok
                tag = "ok" if named_ok else "KIND OK, RANKS WRONG" if good else "WRONG"
                print(f"[{i + 1}/{a.n}] {name}{'' if k is None else f' @{k}s'}: {res['verdict']} "
                      f"({tag}) {res['text'][:160]} {res['note']}", flush=True)
                if not named_ok:
                    wrong.append(f"{name} @{k}: {res['verdict']}: {res['text']}")
    cols = sorted({v for r in matrix.values() for v in r})
    width = max(len(c) for c in cols + ["expected"]) + 1
    lw = max(len(r) for r in matrix) + 2
    print(f"\nconfusion matrix ({a.mpi}, {total} jobs, {time.monotonic() - t0:.0f} s): "
          "expected class x verdict")
    print("".ljust(lw) + "".join(c.rjust(width) for c in cols))
    for label in dict.fromkeys(s.label for s in SCENARIOS.values()):
        if label in matrix:
            cells = "".join(str(matrix[label].get(c, 0)).rjust(width) for c in cols)
            print(label.ljust(lw) + cells)
    accused = sum(matrix.get(lb, {}).get(v, 0) for lb in ("healthy", "healthy (time limit)")
                  for v in ("deadlock", "mismatch"))
    print(f"healthy jobs called deadlocked or mismatched: {accused}; right verdict with the "
          f"right ranks: {named} of {total}")
    for w_ in wrong:
        print("  not right:", w_)
    return 0 if accused == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
