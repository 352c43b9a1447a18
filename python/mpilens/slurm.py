"""What a job under the profiler needs from Slurm that Slurm may not give it.

mpilens dumps a partial profile MPILENS_DUMP_MARGIN seconds before
SLURM_JOB_END_TIME (docs/flight-recorder.md), but Slurm 22.05 (Debian 12's) sets no
SLURM_JOB_END_TIME.  `end_time_env` asks squeue for it once, for `mpilens run`
inside an allocation: one request to slurmctld per run, never one per rank.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping

SQUEUE_TIMEOUT_S = 10.0


def end_time_env(env: Mapping[str, str]) -> dict[str, str]:
    """{"SLURM_JOB_END_TIME": epoch seconds} for a job inside a Slurm allocation
    (SLURM_JOB_ID) that has a time limit and no SLURM_JOB_END_TIME yet; {} otherwise,
    also when squeue is missing, fails or is slow (the SIGTERM dump still comes)."""
    job = env.get("SLURM_JOB_ID", "")
    if not job.isdigit() or env.get("SLURM_JOB_END_TIME"):
        return {}
    squeue = shutil.which("squeue", path=env.get("PATH"))
    if squeue is None:
        return {}
    try:
        proc = subprocess.run([squeue, "-h", "-j", job, "-o", "%e"],
                              env={**env, "SLURM_TIME_FORMAT": "%s"}, capture_output=True,
                              text=True, timeout=SQUEUE_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    end = proc.stdout.strip()
    # "NONE" (no time limit), "N/A", nothing (not our job): no end time to give
    if proc.returncode != 0 or not end.isdigit() or int(end) <= 0:
        return {}
    return {"SLURM_JOB_END_TIME": end}
