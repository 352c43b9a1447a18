"""Measure the candidates instead of scaling the model (docs/advise.md, When the model
is far off): when the model and the profile's time per call disagree by more than
DISAGREE x, rule 3 runs `mpilens-bench coll` once per candidate (the MPI's own choice
and each algorithm its knob selects) at the profile's size per call and communicator
size, on the job's launcher line, under the profiler, and predicts from those times.

Each run gives the median time per call at the powers of two around the size and the
distribution-free 95 % interval of that median (the bench's `median_ci95`); both are
interpolated linearly to the size.  The results are kept beside the network model
(kept.py) under what the times depend on: the profile's hosts, MPI and ranks per node,
the function, the sizes, the communicator size, the candidates, and of the launcher
line only what can change them (launcher_key: its kind, rank count and options other
than output, labels and permissions, and the environment's MPI settings), so the same
profile gives the same advice and an equivalent line reuses them; `--remeasure`
measures them again (with --model too: the model is then the file given).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .. import mpi_env, outfile, paths, profiled
from ..errors import UserError
from ..launch import _value_counts, app_index, launcher_kind
from ..report.profile import Profile
from . import kept

DISAGREE = 3.0    # model and measurement this far apart (either way): measure
SAMPLES = 15      # per size and candidate (the bench's 95 % interval of the median)
WARMUP = 2
TIMEOUT = 120.0   # seconds per candidate run
OPS = {"MPI_Alltoall": "alltoall", "MPI_Allreduce": "allreduce", "MPI_Bcast": "bcast",
       "MPI_Allgather": "allgather", "MPI_Alltoallv": "alltoallv", "MPI_Reduce": "reduce",
       "MPI_Gather": "gather", "MPI_Scatter": "scatter", "MPI_Scan": "scan"}
BASELINE = "as it ran"  # the label of the run without a change


@dataclass(frozen=True)
class Sample:
    """One candidate's measured time per call at the size: the median and its 95 %
    interval (lo, hi)."""
    median: float
    lo: float
    hi: float


class Measurer(Protocol):
    def __call__(self, function: str, size: float, comm_size: int,
                 candidates: dict[str, dict[str, str]]) -> dict[str, Sample] | str: ...


def pow2_around(m: float) -> tuple[int, int]:
    """The powers of two at and around m (m itself when it is one; 0 stays 0)."""
    if m < 1:
        return 0, 0
    lo = 1
    while lo * 2 <= m:
        lo *= 2
    return lo, (lo if lo == m else lo * 2)


def at_size(rows: list[dict[str, Any]], m: float) -> Sample:
    """The bench's results of one run (`results` rows with `size` and `time_s`) at m:
    linear between the two sizes around it, the interval's ends likewise."""
    by = sorted((int(r["size"]), r["time_s"]) for r in rows)
    if not by:
        raise ValueError("no result rows")
    lo = max((s for s in by if s[0] <= m), default=by[0], key=lambda s: s[0])
    hi = min((s for s in by if s[0] >= m), default=by[-1], key=lambda s: s[0])

    def mix(key: str, i: int | None = None) -> float:
        a = float(lo[1][key] if i is None else lo[1][key][i])
        b = float(hi[1][key] if i is None else hi[1][key][i])
        if hi[0] == lo[0]:
            return a
        return a + (b - a) * (m - lo[0]) / (hi[0] - lo[0])

    return Sample(mix("median"), mix("median_ci95", 0), mix("median_ci95", 1))


def launcher_part(line: list[str], kind: str | None = None) -> list[str]:
    """The launcher and its options of a launcher line (the application cut off, and a
    mpilens-exec the line already had); [] when the line has no known launcher."""
    if not line:
        return []
    kind = kind or launcher_kind(line[0])
    if kind is None:
        return []
    end = app_index(line, kind, 1)
    return [a for a in line[:end] if a != "--"]


# Options of a launcher that do not change what a candidate's run measures (permissions,
# output, labels, working directory, time limits): left out of the kept times' key, so an
# equivalent line reuses them.  Any other option stays in the key: a line that might
# measure differently measures again.  Names with one leading dash (--np is -np).
IMMATERIAL = {
    "openmpi": {"-allow-run-as-root", "-oversubscribe", "-q", "-quiet", "-tag-output",
                "-timestamp-output", "-output-filename", "-wdir", "-wd", "-display-map",
                "-display-allocation", "-report-bindings", "-v", "-verbose", "-stdin",
                "-timeout"},
    "hydra": {"-l", "-prepend-rank", "-wdir", "-outfile-pattern", "-errfile-pattern",
              "-prepend-pattern", "-v", "-verbose", "-info"},
    "srun": {"-o", "-output", "-e", "-error", "-i", "-input", "-J", "-job-name", "-D",
             "-chdir", "-l", "-label", "-t", "-time", "-comment", "-mail-type",
             "-mail-user", "-v", "-verbose", "-Q", "-quiet", "-u", "-unbuffered"},
}
IMMATERIAL["openmpi-or-hydra"] = IMMATERIAL["openmpi"] | IMMATERIAL["hydra"]
RANK_COUNT = {"openmpi": {"-np", "-n", "-c"}, "hydra": {"-n", "-np"},
              "srun": {"-n", "-ntasks"}, "openmpi-or-hydra": {"-np", "-n"}}
# the environment's transport and algorithm settings, which the candidates' runs inherit
ENV_PREFIXES = ("OMPI_MCA_", "MPIR_CVAR_", "MPICH_", "UCX_", "I_MPI_", "FI_", "PSM2_")


def launcher_key(launcher: list[str], kind: str | None = None,
                 env: dict[str, str] | None = None) -> dict[str, Any]:
    """What of a launcher line (its launcher part) and the environment can change the
    candidates' times: the launcher's kind (not its path), its rank count, its other
    options in order (IMMATERIAL ones left out, --opt=value split, --opt as -opt), and
    the environment's MPI settings (ENV_PREFIXES).  Equivalent lines give one key."""
    kind = kind or (launcher_kind(launcher[0]) if launcher else None)
    out: dict[str, Any] = {"kind": kind, "ranks": None, "options": []}
    if launcher and kind is not None:
        one, two = _value_counts(kind)
        i = 1
        while i < len(launcher):
            a = launcher[i]
            if a.startswith("--") and "=" in a:
                name, value = a.split("=", 1)
                vals, i = [value], i + 1
            elif a in two:
                name, vals, i = a, launcher[i + 1:i + 3], i + 3
            elif a in one:
                name, vals, i = a, launcher[i + 1:i + 2], i + 2
            else:
                name, vals, i = a, [], i + 1
            canon = "-" + name.lstrip("-")
            if canon in RANK_COUNT.get(kind, set()) and vals:
                out["ranks"] = vals[0]
            elif canon not in IMMATERIAL.get(kind, set()):
                out["options"].append([canon, *vals])
    elif launcher:  # not a known launcher: its words
        out["options"] = [list(launcher)]
    source = os.environ if env is None else env
    out["env"] = {k: v for k, v in sorted(source.items()) if k.startswith(ENV_PREFIXES)}
    return out


def recorded_line(prof: Profile) -> list[str]:
    """The launcher line the profile recorded (runtime/core/machine.c), split as a
    shell would (a line that does not split: [])."""
    got = prof.header.get("launch")
    text = str(got.get("line", "")) if isinstance(got, dict) else ""
    try:
        return shlex.split(text)
    except ValueError:
        return []


class BenchMeasurer:
    """Runs the candidates with mpilens-bench coll on a launcher line, keeps the results
    (kept.cache_dir()) and reuses them; --remeasure: measured again (once per advise)."""

    def __init__(self, prof: Profile, launcher: list[str], remeasure: bool = False,
                 kind: str | None = None) -> None:
        self.prof = prof
        self.launcher = launcher
        self.kind = kind
        self.remeasure = remeasure
        self.memo: dict[str, dict[str, Sample] | str] = {}
        self.measured_now: list[str] = []

    def key(self, function: str, lo: int, hi: int, P: int,
            candidates: dict[str, dict[str, str]]) -> dict[str, Any]:
        return {"profile": kept.key(self.prof), "function": function, "sizes": [lo, hi],
                "comm_size": P, "candidates": candidates,
                "launcher": launcher_key(self.launcher, self.kind,
                                         mpi_env.job_env(paths.mpi_flavour(), allow_root=True)),
                "samples": SAMPLES}

    def path(self, k: dict[str, Any]) -> Path:
        digest = hashlib.sha256(json.dumps(k, sort_keys=True).encode()).hexdigest()[:16]
        return kept.cache_dir() / f"candidates-{digest}.json"

    def __call__(self, function: str, size: float, comm_size: int,
                 candidates: dict[str, dict[str, str]]) -> dict[str, Sample] | str:
        lo, hi = pow2_around(size)
        k = self.key(function, lo, hi, comm_size, candidates)
        memo = json.dumps(k, sort_keys=True)
        if memo not in self.memo:
            self.memo[memo] = self._get(k, function, size, comm_size, candidates)
        return self.memo[memo]

    def _get(self, k: dict[str, Any], function: str, size: float, P: int,
             candidates: dict[str, dict[str, str]]) -> dict[str, Sample] | str:
        p = self.path(k)
        runs: dict[str, list[dict[str, Any]]] | None = None
        if not self.remeasure:
            try:
                doc = json.loads(p.read_text(encoding="utf-8"))
                if isinstance(doc, dict) and doc.get("key") == k:
                    runs = doc["runs"]
            except (OSError, ValueError, KeyError):
                runs = None
        if runs is None:
            got = self._measure(function, k["sizes"], P, candidates)
            if isinstance(got, str):
                return got
            runs = got
            self.measured_now.append(function)
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                outfile.write_text(p, json.dumps({"format": "mpilens-kept-candidates",
                                                  "version": 1, "key": k,
                                                  "measured_with": self.launcher,
                                                  "runs": runs},
                                                 indent=1) + "\n")
            except OSError as exc:
                raise UserError(f"cannot keep the candidates' times in {p}: "
                                f"{exc.strerror or exc}") from None
        try:
            return {label: at_size(rows, size) for label, rows in runs.items()}
        except (KeyError, TypeError, ValueError, IndexError):
            return f"the kept candidates' times {p} are unreadable: --remeasure"

    def _measure(self, function: str, sizes: list[int], P: int,
                 candidates: dict[str, dict[str, str]]
                 ) -> dict[str, list[dict[str, Any]]] | str:
        exe = str(paths.artifact("bin/mpilens-bench"))
        out: dict[str, list[dict[str, Any]]] = {}
        with tempfile.TemporaryDirectory(prefix="mpilens-candidates-") as tmp:
            for label, change in candidates.items():
                result = Path(tmp) / f"{len(out)}.json"
                command = [*self.launcher, exe, "coll", "--ops", OPS[function],
                           "--min-size", str(sizes[0]), "--max-size", str(sizes[1]),
                           "--samples", str(SAMPLES), "--warmup", str(WARMUP),
                           "--nranks", str(P), "--out", str(result)]
                settings: dict[str, str] = {}
                env = mpi_env.job_env(paths.mpi_flavour(), allow_root=True)
                for name, value in change.items():
                    (settings if profiled.SETTING.fullmatch(name) else env)[name] = value
                try:
                    job = profiled.run_profiled(command, str(Path(tmp) / "run.prof"),
                                                settings=settings, force=True, env=env,
                                                capture=True, timeout=TIMEOUT,
                                                launcher_kind=self.kind)
                except (UserError, OSError, subprocess.TimeoutExpired) as exc:
                    return f"the run of candidate {label} failed ({exc})"
                if job.status or not result.exists():
                    last = (job.stderr or "").strip().splitlines()[-1:] or ["no output"]
                    return (f"the run of candidate {label} failed (exit status "
                            f"{job.status}: {last[0]})")
                rows = [r for r in json.loads(result.read_text()).get("results", [])
                        if r.get("op") == OPS[function] and int(r.get("nranks", 0)) == P]
                if not rows:
                    return f"the run of candidate {label} gave no result"
                out[label] = [{"size": int(r["size"]), "time_s": {
                    "median": float(r["time_s"]["median"]),
                    "median_ci95": [float(v) for v in r["time_s"]["median_ci95"]]}}
                    for r in rows]
        return out


def measurer_for(prof: Profile, line: list[str], remeasure: bool,
                 kind: str | None = None) -> BenchMeasurer | None:
    """A measurer on the job's launcher line: the one given (--check's, or after --),
    else the profile's recorded one, else this MPI's launcher for the profile's ranks;
    None when the profile did not run on this host (its candidates cannot run here)."""
    import socket

    from .netmodel import host_stem
    hosts = [str(h) for h in prof.header.get("hosts", [])]
    if host_stem(socket.gethostname()) not in {host_stem(h) for h in hosts}:
        return None
    launcher = launcher_part(line, kind) or launcher_part(recorded_line(prof)) \
        or mpi_env.launcher_line(prof.nranks, paths.mpi_flavour())
    return BenchMeasurer(prof, launcher, remeasure, kind)
