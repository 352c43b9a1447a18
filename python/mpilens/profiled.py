"""Run an MPI job under the profiler and find its profile: what `mpilens run`,
`mpilens demo`, `mpilens bench overhead` and the tests share.

`run_profiled(command, output)` inserts mpilens-exec before the application of a
launcher line (launch.wrap), sets MPILENS_OUTPUT and the other MPILENS_*
settings for the job, runs it with every signal passed on to the launcher
(mpi_env.run_job), and returns the job's exit status with the profile it
wrote, if any.  Which profile that is, rank 0 says itself: in the file that
MPILENS_REPORT_TO names (created here, in a new directory next to the
output, else in $TMPDIR), it writes "profile<TAB>path" or "none<TAB>why" at
MPI_Finalize and "partial<TAB>directory<TAB>job id" at MPI_Init
(profile_write.c, ml_report_to).  Nothing is guessed from file names or times.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import launch, mpi_env, outfile, paths, slurm
from .errors import UserError

DEFAULT_OUTPUT = "mpilens-%j.prof.gz"  # the library's default: gzip-compressed
DEFAULT_OUTPUT_PLAIN = "mpilens-%j.prof"  # its default with MPILENS_COMPRESS=off
PLACEHOLDER = re.compile(r"%[jtph]")
SETTING = re.compile(r"MPILENS_[A-Z0-9_]+")


@dataclass
class ProfiledRun:
    status: int               # the job's exit status (128 + N when killed by signal N)
    profile: Path | None      # the profile it wrote, None if it wrote none
    stdout: str | None = None  # captured output (capture=True)
    stderr: str | None = None
    signals: list[str] = field(default_factory=list)  # signals passed on to the launcher
    partial: Path | None = None  # the ranks' partial profiles (docs/flight-recorder.md), if any
    reason: str | None = None  # why the runtime wrote no profile, as rank 0 said
    told: bool = False         # rank 0 said what it wrote (else it never reached MPI_Finalize)

    def why_none(self) -> str:
        """Why there is no profile, for a one-line message."""
        after = f" after {', '.join(self.signals)}" if self.signals else ""
        if self.reason:
            return self.reason + (f"; the job exited with status {self.status}{after}"
                                  if self.status else "")
        if self.status > 128 and self.status - 128 in signal.valid_signals():
            return f"the job was killed by {signal.Signals(self.status - 128).name}{after}"
        if self.status:
            return f"the job exited with status {self.status}{after}"
        return f"the job exited normally{after}"


def check_settings(settings: dict[str, str]) -> None:
    for name in settings:
        if not SETTING.fullmatch(name):
            raise UserError(f"'{name}' is not a profiler setting: expected MPILENS_NAME=VALUE")


def _config_compress(path: str) -> str | None:
    """The `compress` key of a config file (MPILENS_CONFIG), as the library reads it:
    'key = value' lines, '#' starts a comment; None if absent or unreadable (the
    library then says what is wrong at MPI_Init)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return None
    for line in lines:
        key, eq, value = line.split("#", 1)[0].partition("=")
        if eq and key.strip().lower() == "compress":
            return value.strip()
    return None


def default_output(settings: Mapping[str, str] | None = None,
                   env: Mapping[str, str] | None = None) -> str:
    """The profile path the library uses when none is given (config.c): compressed,
    mpilens-%j.prof.gz, unless MPILENS_COMPRESS=off (the job's settings, else the
    environment, else the config file), which gives the plain mpilens-%j.prof."""
    settings = settings or {}
    env = os.environ if env is None else env
    compress = settings.get("MPILENS_COMPRESS", env.get("MPILENS_COMPRESS"))
    if compress is None:
        config = settings.get("MPILENS_CONFIG", env.get("MPILENS_CONFIG"))
        compress = _config_compress(config) if config else None
    return DEFAULT_OUTPUT_PLAIN if (compress or "").strip() == "off" else DEFAULT_OUTPUT


def claim_output(output: str, force: bool) -> None:
    """An existing profile at output (no placeholders) is an error unless force, which
    removes it before the job starts (the library itself never overwrites).  Only a
    profile mpilens wrote is removed (outfile.replace_refusal): anything else at the
    path is refused, with or without force."""
    if PLACEHOLDER.search(output):
        return
    why = outfile.replace_refusal(Path(output), force, "--output")
    if why:
        raise UserError(why)
    if not os.path.lexists(output):
        return
    try:
        Path(output).unlink()
    except OSError as e:
        raise UserError(f"--force: cannot remove the old profile {output}: "
                        f"{e.strerror}") from None


REPORT_TO = "MPILENS_REPORT_TO"
REPORT_ROOM = 32768  # bytes of the report file, made before the job: rank 0 needs no more


def _report_dir(output: str, cwd: str | Path | None) -> Path | None:
    """A new private directory for the runtime's report: next to the output (on a
    cluster, a file system rank 0 also sees), else in $TMPDIR; None if neither can
    hold it (both full: the runtime then has nowhere to write its profile either)."""
    parent = (Path(cwd or ".") / output).parent
    for where in ([parent] if not PLACEHOLDER.search(str(parent)) else []) + [None]:
        try:
            d = Path(tempfile.mkdtemp(prefix=".mpilens-run-", dir=where)).absolute()
        except OSError:
            continue
        try:  # room for the report, now: the file system may be full by the end
            (d / "report").write_bytes(b"\n" * REPORT_ROOM)
            return d
        except OSError:
            shutil.rmtree(d, ignore_errors=True)
    return None


def read_report(path: Path) -> dict[str, str]:
    """The runtime's report (ml_report_to): key -> value, {} if it wrote none.  It is
    overwritten in place, its last line "end": what follows is an older, longer text."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return {}
    lines = text.split("\n")
    if "end" not in lines:
        return {}
    return dict(line.split("\t", 1) for line in lines[:lines.index("end")] if "\t" in line)


def partial_of(told: dict[str, str]) -> Path | None:
    """The partial directory rank 0 named, if a rank of this job dumped into it."""
    where, _, job = told.get("partial", "").partition("\t")
    if not where:
        return None
    want = '"job_id":' + json.dumps(job)
    try:
        with os.scandir(where) as it:
            for e in it:  # the first rank file of this job is enough
                if re.fullmatch(r"rank-\d+(\.prev)?", e.name) and e.is_file(follow_symlinks=False):
                    with open(e.path, "rb") as f:
                        if want.encode() in f.readline(1 << 16):
                            return Path(where)
    except OSError:
        return None
    return None


@dataclass
class Prepared:
    argv: list[str]            # the launcher line with mpilens-exec before each application
    settings: dict[str, str]   # MPILENS_* for the job, MPILENS_OUTPUT included
    output: str


def prepare(command: list[str], output: str | None = None, *,
            settings: dict[str, str] | None = None, force: bool = False,
            launcher_kind: str | None = None, cwd: str | Path | None = None) -> Prepared:
    """The profiled form of a launcher line (or of a program, run as a singleton).

    output: the profile's path, by default the library's (default_output).
    settings: MPILENS_* variables for the job (forwarded with -x to Open MPI's ranks)."""
    if not command or not command[0].strip():
        raise UserError("nothing to run: give the launcher line after --, "
                        "e.g. mpilens run -- mpirun -np 4 ./app")
    if shutil.which(command[0]) is None:
        raise UserError(f"{command[0]}: command not found")
    settings = dict(settings or {})
    check_settings(settings)
    if output is None:
        output = default_output(settings)
    if cwd is not None and not Path(output).is_absolute():
        output = str(Path(cwd) / output)
    claim_output(output, force)
    settings["MPILENS_OUTPUT"] = output
    paths.use_launcher(command)
    runtime = paths.runtime()
    exec_path = str(runtime.path(paths.EXEC).resolve())
    wrapped = launch.wrap(command, exec_path, sorted(settings), launcher_kind)
    _check_same_mpi(runtime, wrapped)
    return Prepared(wrapped.argv, settings, output)


def run_profiled(command: list[str], output: str | None = None, *,
                 settings: dict[str, str] | None = None, force: bool = False,
                 launcher_kind: str | None = None, env: dict[str, str] | None = None,
                 capture: bool = False, timeout: float | None = None,
                 cwd: str | Path | None = None) -> ProfiledRun:
    """Run a launcher line under the profiler (prepare), passing signals on to it.

    env: the job's base environment (default os.environ); timeout: stop the job
    (SIGTERM) and raise subprocess.TimeoutExpired after that many seconds."""
    if output is None:
        output = default_output(settings, env)
    report_dir = _report_dir(output, cwd)
    try:
        report = report_dir / "report" if report_dir else None
        told_to = {REPORT_TO: str(report)} if report else {}
        job = prepare(command, output, settings={**(settings or {}), **told_to},
                      force=force, launcher_kind=launcher_kind, cwd=cwd)
        job_env = dict(os.environ if env is None else env)
        job_env.update(job.settings)
        job_env.update(slurm.end_time_env(job_env))  # Slurm 22.05 sets none (docs/slurm.md)
        done = mpi_env.run_job(job.argv, env=job_env, timeout=timeout, cwd=cwd,
                               capture_output=capture, text=True)
        told = read_report(report) if report else {}
    finally:
        if report_dir:
            shutil.rmtree(report_dir, ignore_errors=True)
    prof = Path(told["profile"]) if told.get("profile") else None
    return ProfiledRun(done.returncode, prof, done.stdout, done.stderr, done.signals,
                       None if prof else partial_of(told), told.get("none"),
                       "profile" in told or "none" in told)


def _check_same_mpi(runtime: paths.Runtime, wrapped: launch.Wrapped) -> None:
    """A library built for one MPI preloaded under another crashes in MPI_Init: say so."""
    built = runtime.info().get("mpi")
    if wrapped.kind == "singleton" or built not in mpi_env.FLAVOURS:
        return
    used = mpi_env.flavour_of(wrapped.argv[0])
    if used and used != built:
        raise UserError(f"the mpilens runtime at {runtime.root} was built for {built}, but "
                        f"{wrapped.argv[0]} is {used}'s launcher: use a runtime built for "
                        f"{used} (MPILENS_PREFIX, docs/install.md)")
