"""`mpilens advise PROFILE --check -- LAUNCHER LINE`: apply the top finding whose change
needs no code edit, run the job again under the profiler, and compare predicted with
measured gain (docs/advise.md, Checking advice).

The job runs as it is (the baseline, so that both meet the same machine) and with the
change, alternately, --runs times each.  The verdict rests on the functions the change
acts on (the finding's `target`, without the polls when others remain: `targets`):
their time per call in each pair of runs (a baseline, the changed run after it) gives
a relative gain, and the signed-rank interval of those pairs' log ratios (stats.py)
decides: confirmed, refuted or not resolved.  Beside it, not used for
the verdict, the pair whose difference of mean wall time per rank is the median is
compared by `mpilens diff` (report/comparison.py).  Environment changes are set for the
launcher (MPILENS_* through the profiler's settings, which Open MPI's ranks get with
-x; OMPI_MCA_*, MPIR_CVAR_*, I_MPI_* in the launcher's environment, which mpirun and
mpiexec pass on to the ranks).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from statistics import median
from typing import Any

from .. import outfile, profiled
from ..errors import JobStopped, UserError
from ..report.analysis import OUTSIDE
from ..report.comparison import compare
from ..report.profile import Profile, load
from . import mapping, stats
from .engine import top_applicable
from .rules.polling import POLLS

TIMED_OUT = 124  # exit status of a run stopped by --timeout (as timeout(1))


class JobFailed(Exception):
    """A checking run failed or wrote no profile: one line, the job's exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def launcher_args(change: dict[str, Any], files: dict[str, Path]) -> list[str]:
    """The change's launcher options, {name} replaced by the path of the file it names."""
    args = list(change.get("launcher_args", []))
    for key, path in files.items():
        args = [a.replace("{" + key + "}", str(path)) for a in args]
    return args


def _run(command: list[str], output: Path, change: dict[str, Any] | None,
         timeout: float | None, files: dict[str, Path], kind: str | None) -> Path:
    settings: dict[str, str] = {}
    env = dict(os.environ)
    for k, v in (change or {}).get("env", {}).items():
        v = launcher_args({"launcher_args": [v]}, files)[0]  # {file} -> its path
        (settings if profiled.SETTING.fullmatch(k) else env)[k] = v
    if change and change.get("mapping"):  # the line's own mapping options give way
        command = mapping.merge(command, launcher_args(change, files), change["mapping"])[0]
    else:
        command = command[:1] + launcher_args(change or {}, files) + command[1:]
    try:
        job = profiled.run_profiled(command, str(output), settings=settings, force=True,
                                    env=env, capture=True, timeout=timeout, launcher_kind=kind)
    except subprocess.TimeoutExpired:
        raise JobFailed(f"the {'changed' if change else 'baseline'} run exceeded --timeout "
                        f"{timeout:g} s and was stopped", TIMED_OUT) from None
    if job.signals and job.status:
        raise JobStopped(job.status, job.signals[0])
    if job.profile is None or job.status:
        err = error_text(job.stderr or "")
        raise JobFailed(f"the {'changed' if change else 'baseline'} run wrote no profile "
                        f"({job.why_none()})" + (f"; its error output:\n{err}" if err else ""),
                        job.status or 1)
    return job.profile


# the rankfile or hostfile --check writes (placement_change): what may be replaced
MAPPING_FILE = re.compile(rb"(?:(?:rank \d+=\S+ slot=\d+|[\w.-]+(?::1)?)\n)+")

ERROR_LINES = 40  # a failed run's error output shown, at most (its last lines)


def error_text(stderr: str) -> str:
    """A failed run's whole error output (its last ERROR_LINES lines), without blank lines
    and rows of dashes or stars (Open MPI frames its messages with them)."""
    keep = [ln.rstrip() for ln in stderr.splitlines()
            if ln.strip() and ln.strip().strip("-*=") != ""]
    cut = len(keep) - ERROR_LINES
    return "\n".join(([f"[{cut} earlier lines]"] if cut > 0 else []) + keep[-ERROR_LINES:])


def outputs(prefix: str, runs: int, force: bool, baseline: bool = True
            ) -> list[tuple[Path, Path]]:
    """(baseline, changed) profile paths of each run: PREFIX-baseline.prof and
    PREFIX-changed.prof, or PREFIX-baseline-1.prof ... with several runs.  Only the
    files that will be written are refused when they exist (no baseline: the changed)."""
    tag = [""] if runs == 1 else [f"-{i}" for i in range(1, runs + 1)]
    pairs = [(Path(f"{prefix}-baseline{t}.prof"), Path(f"{prefix}-changed{t}.prof")) for t in tag]
    for p in (p for pair in pairs for p in (pair if baseline else pair[1:])):
        why = outfile.replace_refusal(p, force, "--check-output")
        if why:
            raise UserError(why)
        if not p.parent.is_dir():
            raise UserError(f"--check-output {prefix}: directory {p.parent} does not exist")
    return pairs


def wall(p: Profile) -> float:
    return float(p.header["wall_s"]["mean"])


def median_pair(pairs: list[tuple[Profile, Profile]]) -> tuple[Profile, Profile]:
    """The (baseline, changed) pair whose wall-time difference is the median of the
    pairs' (the lower one for an even count).  Runs made one after the other meet the
    same state of the machine, so their difference cancels its slow changes."""
    ordered = sorted(pairs, key=lambda bc: wall(bc[0]) - wall(bc[1]))
    return ordered[(len(ordered) - 1) // 2]


def check(result: dict[str, Any], prof: Profile, command: list[str], prefix: str, *,
          force: bool = False, rerun_baseline: bool = True, runs: int = 1,
          timeout: float | None = None, launcher_kind: str | None = None,
          rule: int | None = None) -> dict[str, Any]:
    finding = top_applicable(result, rule)
    if finding is None:
        which = f"finding of rule {rule}" if rule is not None else "finding"
        raise UserError(f"{prof.path}: no {which}'s change can be applied without a code edit "
                        f"(an environment variable, a launcher option or a rankfile): nothing "
                        f"to check")
    if command and command[0] == "--":
        command = command[1:]
    pinned = next((v.removeprefix("OMPI_MCA_") for v in finding["apply"].get("env", {})
                   for a in command if v.removeprefix("OMPI_MCA_") in a), None)
    if pinned and finding["key"] == "rails":
        raise UserError(f"--check of rails chooses the interfaces of the changed run: remove "
                        f"'{pinned}' from the launcher line (set the baseline's in the "
                        f"environment, e.g. OMPI_MCA_btl_tcp_if_include=<dev0>)")
    if pinned:  # the launcher line's own setting would override the change
        raise UserError(f"--check sets {pinned} for the changed run: remove it from the "
                        f"launcher line (set the baseline's in the environment)")
    pairs = outputs(prefix, runs, force, rerun_baseline)
    if finding["key"] == "placement":
        finding = dict(finding, apply=placement_change(finding, command, launcher_kind,
                                                       str(result.get("mpi_flavour", ""))))
    files = {key: Path(f"{prefix}-{key}") for key in finding["apply"].get("files", {})}
    for key, path in files.items():  # a rankfile the change names
        outfile.check_output(path, force, "--check-output", also=MAPPING_FILE)
        outfile.write_text(path, finding["apply"]["files"][key], also=MAPPING_FILE)
    runs_done: list[tuple[Profile, Profile]] = []
    for base_path, changed_path in pairs:  # alternating
        base = (load(_run(command, base_path, None, timeout, files, launcher_kind))
                if rerun_baseline else prof)
        runs_done.append((base, load(_run(command, changed_path, finding["apply"], timeout,
                                          files, launcher_kind))))
    return judge(result, finding, prof, runs_done, command, files, rerun_baseline)


def placement_change(finding: dict[str, Any], command: list[str], given: str | None,
                     flavour: str) -> dict[str, Any]:
    """The placement's change for this launcher line (mapping.py): its own mapping options
    give way; srun gets --distribution=arbitrary and SLURM_HOSTFILE (one host per rank)."""
    kind = mapping.kind_of(command, given, flavour)
    after = finding["figures"]["mapping_after"]
    if kind == "srun":
        return {"env": {"SLURM_HOSTFILE": "{hostfile}"}, "mapping": kind,
                "launcher_args": ["--distribution=arbitrary"],
                "files": {"hostfile": "".join(f"{h}\n" for h in after)}}
    apply = dict(finding["apply"], mapping=kind)
    if kind == "hydra" and apply["launcher_args"][:1] != ["-f"]:
        apply["launcher_args"] = ["-f", "{rankfile}"]
        apply["files"] = {"rankfile": "".join(f"{h}:1\n" for h in after)}
    if kind == "openmpi" and apply["launcher_args"][:1] != ["--rankfile"]:
        apply["launcher_args"] = ["--rankfile", "{rankfile}"]
        slots: dict[str, int] = {}
        lines = []
        for r, h in enumerate(after):
            lines.append(f"rank {r}={h} slot={slots.get(h, 0)}\n")
            slots[h] = slots.get(h, 0) + 1
        apply["files"] = {"rankfile": "".join(lines)}
    return apply


def targets(finding: dict[str, Any], prof: Profile) -> list[str]:
    """The functions the verdict is decided on: those the finding's change acts on (its
    `target`; a finding without one: every function the job called outside
    MPI_Init/Finalize), without the polling functions (MPI_Test*, MPI_Iprobe) when
    others remain.  A poll's calls are not the job's work but its waiting: their number
    follows how long it waits (HPCC: 96,000 to 650,000 MPI_Iprobe calls from one run to
    the next), so they would swing the time per call of the set; the waiting itself
    shows in the blocking calls' time."""
    names = [n for n in finding.get("target") or [] if n in prof.functions]
    names = names or [n for n in prof.functions if n not in OUTSIDE]
    return [n for n in names if n not in POLLS] or names


def totals(p: Profile, names: list[str], size_class: int | None = None) -> tuple[int, float]:
    """(calls, time_s) of the functions over all ranks; with size_class (a finding judged
    per size, rule 3): of their call sites of that size class only (the rank lines)."""
    if size_class is None:
        return (sum(int(p.functions.get(n, {}).get("calls", 0)) for n in names),
                sum(float(p.functions.get(n, {}).get("time_s", 0.0)) for n in names))
    from .rules.collective import site_class
    calls, time = 0, 0.0
    for r in p.ranks:
        for site in r.get("callsites") or []:
            if site.get("function") in names and site_class(site) == size_class:
                calls += int(site.get("calls", 0))
                time += float(site.get("time_s", 0.0))
    return calls, time


def per_call(p: Profile, names: list[str], size_class: int | None = None) -> float | None:
    """Time per call of the functions, over all ranks: sum of time_s / sum of calls."""
    calls, time = totals(p, names, size_class)
    return time / calls if calls else None


def per_rank(p: Profile, names: list[str], size_class: int | None = None) -> float:
    """Time per rank in the functions."""
    return totals(p, names, size_class)[1] / p.nranks


def relative_gains(runs: list[tuple[Profile, Profile]], names: list[str],
                   size_class: int | None = None) -> list[float]:
    """(baseline - changed) / baseline of the functions' time per call, pair by pair."""
    out = []
    for base, changed in runs:
        b, c = per_call(base, names, size_class), per_call(changed, names, size_class)
        if b is None or c is None or b <= 0:
            raise JobFailed(f"{base.path if b is None else changed.path}: the run made no "
                            f"call of {', '.join(names)}: nothing to compare", 1)
        out.append((b - c) / b)
    return out


def judge(result: dict[str, Any], finding: dict[str, Any], prof: Profile,
          runs_done: list[tuple[Profile, Profile]], command: list[str],
          files: dict[str, Path], rerun_baseline: bool) -> dict[str, Any]:
    """The verdict on the targeted functions' time per call (stats.decide), and, beside
    it, the wall time of the median pair (`mpilens diff`'s comparison)."""
    names = targets(finding, prof)
    cls = finding.get("figures", {}).get("size_class")  # judged per size: those sites
    in_profile = per_rank(prof, names, cls)
    predicted = float(finding["gain_s"])
    predicted_rel = min(predicted / in_profile, 1.0) if in_profile > 0 else 0.0
    gains = relative_gains(runs_done, names, cls)
    verdict = stats.decide(gains, predicted_rel)
    iv = verdict.interval
    base_time = median(per_rank(b, names, cls) for b, _ in runs_done)
    baseline, changed = median_pair(runs_done)
    diff = compare(baseline, changed)
    measured = -float(diff["wall_change_s"])
    before = float(diff["a"]["wall_s"])
    applied = " ".join([f"{k}={launcher_args({'launcher_args': [v]}, files)[0]}"
                        for k, v in finding["apply"]["env"].items()]
                       + launcher_args(finding["apply"], files))
    if finding["apply"].get("mapping"):
        removed = mapping.merge(command, [], finding["apply"]["mapping"])[1]
        if removed:
            applied += f" (taken out of the launcher line: {' '.join(removed)})"
    return {
        "finding": finding,
        "applied": applied,
        "command": command,
        "runs": len(runs_done),
        "baseline_rerun": rerun_baseline,
        "functions": names,
        "size_class": cls,
        "per_call_baseline_s": [per_call(b, names, cls) for b, _ in runs_done],
        "per_call_changed_s": [per_call(c, names, cls) for _, c in runs_done],
        "relative_gains": gains,
        "verdict": verdict.verdict,
        "verdict_why": verdict.reason,
        "exit_status": verdict.exit_status,
        "gain_estimate": iv.estimate if iv else None,
        "measured_interval": [iv.lo, iv.hi] if iv else None,
        "interval_coverage": iv.coverage if iv else None,
        "noise": verdict.noise,
        "predicted_relative": predicted_rel,
        # the prediction rescaled to this check's baseline: the same share of the
        # functions' time per rank in the baseline runs (their median)
        "predicted_at_baseline_s": predicted_rel * base_time,
        "functions_baseline_s": base_time,
        "baseline": str(baseline.path),
        "changed": str(changed.path),
        "walls_baseline_s": [wall(b) for b, _ in runs_done],
        "walls_changed_s": [wall(c) for _, c in runs_done],
        "wall_before_s": before,
        "wall_after_s": float(diff["b"]["wall_s"]),
        "predicted_s": predicted,
        "predicted_pct": 100 * predicted / float(result["wall_s"]) if result["wall_s"] else 0.0,
        "measured_s": measured,
        "measured_pct": 100 * measured / before if before > 0 else 0.0,
        "same_sign": (measured > 0) == (predicted > 0),
        "ratio": measured / predicted if predicted else None,
        "diff": diff,
    }
