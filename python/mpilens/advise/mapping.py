"""A placement change merged with the launcher line as launched (docs/advise.md,
Checking advice): the line's own mapping options are taken out (they would conflict:
Open MPI's "Conflicting directives for mapping policy", hydra's "duplicate host file")
and the change's put right after the launcher, in that launcher's syntax:

- Open MPI: `--rankfile FILE` (out: --map-by, --rank-by, --rankfile/-rf, --npernode,
  --ppr, -bynode, -byslot);
- hydra (MPICH, Intel MPI): `-f FILE` (out: -f, -hostfile, -machinefile, -ppn, -hosts,
  -host, -rr);
- srun: `--distribution=arbitrary` with SLURM_HOSTFILE=FILE, one host per rank in rank
  order (out: --distribution / -m).
"""

from __future__ import annotations

from ..launch import app_index, launcher_kind

VALUED = {
    "openmpi": {"--map-by", "-map-by", "--rank-by", "-rank-by", "--rankfile", "-rf",
                "-rankfile", "--npernode", "-npernode", "--ppr", "-ppr"},
    "hydra": {"-f", "-hostfile", "--hostfile", "-machinefile", "--machinefile", "-ppn",
              "--ppn", "-hosts", "--hosts", "-host", "--host"},
    "srun": {"--distribution", "-m"},
}
FLAGS = {"openmpi": {"-bynode", "--bynode", "-byslot", "--byslot"}, "hydra": {"-rr"},
         "srun": set()}


def kind_of(command: list[str], given: str | None, flavour: str) -> str:
    """The launcher's syntax: --launcher, else its name, else the profile's MPI."""
    kind = given or launcher_kind(command[0]) or ""
    if kind in VALUED:
        return kind
    return "openmpi" if flavour == "openmpi" else "hydra"


def merge(command: list[str], args: list[str], kind: str) -> tuple[list[str], list[str]]:
    """(the launcher line with the change's options after the launcher and its own
    mapping options taken out, the options taken out)."""
    end = app_index(command, kind, 1)
    keep, removed = [command[0], *args], []
    i = 1
    while i < end:
        a = command[i]
        name = a.split("=", 1)[0]
        if name in VALUED[kind] and "=" in a:
            removed.append(a)
            i += 1
        elif a in VALUED[kind]:
            removed += command[i:i + 2]
            i += 2
        elif a in FLAGS[kind]:
            removed.append(a)
            i += 1
        else:
            keep.append(a)
            i += 1
    return keep + command[end:], removed
