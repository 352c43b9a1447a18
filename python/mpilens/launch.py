"""Insert mpilens-exec before the application in a launcher command line.

`wrap(argv, exec_path)` finds where the application starts in
`mpirun ... ./app args`, `mpiexec ... ./app`, `srun ... ./app` by parsing the
launcher's own options (which of them take a value), and returns the command
with `exec_path` inserted before every application (MPMD segments separated by
`:` each get it).  A command that is not a known launcher is the application
itself (a singleton MPI run).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from .errors import UserError

# Options that take one value (two for the entries of TWO_VALUES).  Long options
# given as --opt=value need no entry.  Any other option is taken as a flag.
OPENMPI_ONE = {
    "-np", "-n", "-c", "--np", "--n", "-N", "-H", "-host", "--host", "-hostfile", "--hostfile",
    "-machinefile", "--machinefile", "--default-hostfile", "-default-hostfile", "-x",
    "-am", "--am", "-tune", "--tune", "-map-by", "--map-by", "-rank-by", "--rank-by",
    "-bind-to", "--bind-to", "-npernode", "--npernode", "-npersocket", "--npersocket",
    "-wdir", "--wdir", "-wd", "--wd", "-path", "--path", "-prefix", "--prefix",
    "--preload-files", "-output-filename", "--output-filename", "-cpus-per-proc",
    "--cpus-per-proc", "-cpus-per-rank", "--cpus-per-rank", "-cpu-set", "--cpu-set",
    "-rf", "--rankfile", "-rankfile", "-stdin", "--stdin", "--launch-agent", "-launch-agent",
    "--ompi-server", "-ompi-server", "--xterm", "-xterm", "--timeout", "-timeout",
    "-max-vm-size", "--max-vm-size", "--personality", "--output", "-output", "--debugger",
    "--hnp", "-hnp", "--mca-param-file", "--tmpdir",
}
OPENMPI_TWO = {"-mca", "--mca", "-gmca", "--gmca"}

HYDRA_ONE = {
    "-n", "-np", "-f", "-hostfile", "-machinefile", "-hosts", "-host", "-wdir", "-genvlist",
    "-envlist", "-ppn", "-bind-to", "-binding", "-map-by", "-launcher", "-launcher-exec",
    "-rmk", "-demux", "-iface", "-nameserver", "-errfile-pattern", "-outfile-pattern",
    "-gpus-per-proc", "-usize", "-topolib", "-ckpoint-prefix", "-ckpointlib",
    "-ckpoint-interval", "-ckpoint-num", "-prepend-pattern", "-bootstrap",
    "-bootstrap-exec", "-gdb-args", "-order-nodes", "-localhost", "-tmpdir",
}
HYDRA_TWO = {"-genv", "-env"}

SRUN_ONE = {
    "-n", "--ntasks", "-N", "--nodes", "-c", "--cpus-per-task", "-p", "--partition",
    "-t", "--time", "-J", "--job-name", "-A", "--account", "-w", "--nodelist", "-x",
    "--exclude", "-o", "--output", "-e", "--error", "-i", "--input", "-D", "--chdir",
    "-C", "--constraint", "-G", "--gpus", "-m", "--distribution", "-q", "--qos", "-d",
    "--dependency", "-L", "--licenses", "-r", "--relative", "-S", "--core-spec",
    "-T", "--threads", "-W", "--wait", "--mem", "--mem-per-cpu", "--mem-per-gpu",
    "--gres", "--ntasks-per-node", "--ntasks-per-socket", "--ntasks-per-core", "--export",
    "--cpu-bind", "--mpi", "--reservation", "--mail-type", "--mail-user", "--comment",
    "--jobid", "--het-group", "--gpus-per-task", "--gpus-per-node", "--cpu-freq",
    "--begin", "--deadline", "--signal", "--switches", "--network", "--nice",
    "--profile", "--task-epilog", "--task-prolog", "--epilog", "--prolog",
    "-B", "--extra-node-info", "-M", "--clusters", "--mem-bind", "--hint", "--gpu-bind",
    "--gpus-per-socket", "--cpus-per-gpu", "--ntasks-per-gpu", "--tres-per-task",
    "--mcs-label", "--acctg-freq", "--bb", "--bbf", "--cores-per-socket",
    "--sockets-per-node", "--threads-per-core", "--delay-boot", "--gres-flags", "--mincpus",
    "--tmp", "--uid", "--gid", "--slurmd-debug", "--time-min", "--wckey", "--power",
    "--priority", "--open-mode", "--container", "--cluster-constraint",
}
# srun options whose value is optional are given as --opt=value only (-K, --kill-on-bad-exit,
# --propagate, -I/--immediate, --resv-ports, --bcast...): as flags they take no word.

KINDS = ("openmpi", "hydra", "srun")  # accepted by `mpilens run --launcher`


@dataclass
class Wrapped:
    kind: str               # openmpi | hydra | srun | singleton
    argv: list[str]         # the command to execute
    apps: list[str]         # the application of each MPMD segment


def launcher_kind(prog: str) -> str | None:
    """openmpi / hydra / srun for a launcher command, None for anything else."""
    base = os.path.basename(prog)
    if base == "srun":
        return "srun"
    if base in ("orterun", "mpirun.openmpi", "mpiexec.openmpi"):
        return "openmpi"
    if base in ("mpiexec.hydra", "mpirun.mpich", "mpiexec.mpich", "hydra_pmi_proxy"):
        return "hydra"
    if base in ("mpirun", "mpiexec"):
        path = shutil.which(prog)
        real = os.path.realpath(path) if path else ""
        if "openmpi" in real or "orterun" in real or "prterun" in real:
            return "openmpi"
        if "mpich" in real or "hydra" in real or "intel" in real:
            return "hydra"
        return "hydra" if os.path.basename(real) == "mpiexec.hydra" else "openmpi-or-hydra"
    return None


def _value_counts(kind: str) -> tuple[set[str], set[str]]:
    if kind == "openmpi":
        return OPENMPI_ONE, OPENMPI_TWO
    if kind == "hydra":
        return HYDRA_ONE, HYDRA_TWO
    if kind == "srun":
        return SRUN_ONE, set()
    # plain mpirun whose flavour we cannot tell: either MPI's value options
    return OPENMPI_ONE | HYDRA_ONE, OPENMPI_TWO | HYDRA_TWO


def app_index(args: list[str], kind: str, start: int = 0) -> int:
    """Index in args of the application, parsing launcher options from start."""
    one, two = _value_counts(kind)
    i = start
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1
        if not a.startswith("-") or a == "-":
            return i
        if "=" in a and a.startswith("--"):
            i += 1
        elif a in two:
            i += 3
        elif a in one:
            i += 2
        else:
            i += 1
    return len(args)


def wrap(argv: list[str], exec_path: str, forward_env: list[str] | None = None,
         kind: str | None = None) -> Wrapped:
    """The launcher command with exec_path inserted before each application."""
    if not argv or not argv[0].strip():
        raise UserError("nothing to run: give the launcher line after --, "
                        "e.g. mpilens run -- mpirun -np 4 ./app")
    kind = kind or launcher_kind(argv[0])
    if kind is None:
        return Wrapped("singleton", [exec_path, *argv], [argv[0]])
    out = [argv[0]]
    if kind == "openmpi" and forward_env:
        for var in forward_env:  # Open MPI does not forward the environment to other nodes
            out += ["-x", var]
    rest = argv[1:]
    apps: list[str] = []
    while True:
        k = app_index(rest, kind)
        if k >= len(rest) or rest[k] == ":":
            shown = " ".join(argv)
            raise UserError(f"no application found in the launcher line '{shown}' "
                            f"(options understood: docs/cli.md)")
        out += rest[:k] + [exec_path]
        apps.append(rest[k])
        try:
            colon = rest.index(":", k)
        except ValueError:
            out += rest[k:]
            break
        out += rest[k:colon + 1]
        rest = rest[colon + 1:]
    return Wrapped(kind, out, apps)
