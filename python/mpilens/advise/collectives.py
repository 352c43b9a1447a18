"""Collective algorithms: their P-LogP cost (docs/advise.md, finding 3) and the knob
that selects each in every MPI.

m is the function's size per call (Alltoall, Allgather: the per-peer block; Allreduce,
Bcast: the buffer), P the communicator size, T(x) = L + g(x) one message.  Alltoall's
formulas are the adaptive engine's (runtime/engines/alltoall/*.c, Nanri et al. 2008 as
corrected in docs/alltoall.md), with g(2m) read from the model at 2m.

Knobs, looked up for the installed versions: Open MPI 4.1 `ompi_info --param coll
tuned --level 9` (coll_tuned_<coll>_algorithm numbers); MPICH 4.0.2 `mpivars`
(MPIR_CVAR_<COLL>_INTRA_ALGORITHM names); Intel MPI Developer Reference 2021.8
(I_MPI_ADJUST_<COLL> numbers, in the order of its table); the adaptive engine's
MPILENS_ALLTOALL names (docs/alltoall.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .netmodel import NetModel

Cost = Callable[[int, float, NetModel], float]
MPIS = ("openmpi", "mpich", "intelmpi")


@dataclass(frozen=True)
class Algorithm:
    name: str
    formula: str                 # as written in docs/advise.md
    cost: Cost
    openmpi: int | None = None   # coll_tuned_<coll>_algorithm
    mpich: str | None = None     # MPIR_CVAR_<COLL>_INTRA_ALGORITHM
    intelmpi: int | None = None  # I_MPI_ADJUST_<COLL>
    mpilens: str | None = None   # MPILENS_ALLTOALL
    pow2_only: bool = False


def _lg(P: int) -> float:
    return math.log2(P)


def _clg(P: int) -> int:
    """ceil(log2 P) steps of a tree or of recursive doubling."""
    return max(P - 1, 0).bit_length()


def _flg(P: int) -> int:
    return P.bit_length() - 1


def _pow2(P: int) -> bool:
    return P & (P - 1) == 0


def _fix(P: int, m: float, n: NetModel) -> float:
    """Non-powers of two: recursive doubling and halving pay one exchange before and one
    after (the ranks beyond the largest power of two fold in and out)."""
    return 0.0 if _pow2(P) else 2 * n.msg(m)


# ---------------------------------------------------------------- Alltoall

def _a2a_pair(P: int, m: float, n: NetModel) -> float:
    return (n.L + n.gap(m) + min(n.at("os_s", m), n.at("or_s", m))) * (P - 1)


ALLTOALL = (
    Algorithm("spread", "(L + g(m)) (P - 1)",
              lambda P, m, n: (n.L + n.gap(m)) * (P - 1),
              openmpi=1, mpich="scattered", intelmpi=2, mpilens="spread"),
    Algorithm("bruck", "(L + 2 g(m) (log2 P + 1)) log2 P",
              lambda P, m, n: (n.L + 2 * n.gap(m) * (_lg(P) + 1)) * _lg(P),
              openmpi=3, mpich="brucks", intelmpi=1, mpilens="bruck"),
    Algorithm("recdbl", "(L + 2 g(2m) log2 P) log2 P",
              lambda P, m, n: (n.L + 2 * n.gap(2 * m) * _lg(P)) * _lg(P), mpilens="recdbl"),
    Algorithm("pair", "(L + g(m) + min(os(m), or(m))) (P - 1)", _a2a_pair,
              openmpi=2, mpich="pairwise", intelmpi=3, mpilens="pair"),
    Algorithm("pair_lb", "pair + max(os(0), or(0)) (P - 2)",
              lambda P, m, n: _a2a_pair(P, m, n)
              + max(n.at("os_s", 0), n.at("or_s", 0)) * max(P - 2, 0), mpilens="pair_lb"),
    Algorithm("pair_barrier", "pair + (L + 2 g(0)) log2 P (P - 2)",
              lambda P, m, n: _a2a_pair(P, m, n)
              + (n.L + 2 * n.gap(0)) * _lg(P) * max(P - 2, 0), mpilens="pair_barrier"),
    Algorithm("ring", "(L + 2 g(m)) floor(P/2)",
              lambda P, m, n: (n.L + 2 * n.gap(m)) * (P // 2), mpilens="ring"),
)

# ---------------------------------------------------------------- Allreduce


def _halving(P: int, m: float, n: NetModel) -> float:
    return sum(n.msg(m / 2 ** k) for k in range(1, _flg(P) + 1))


ALLREDUCE = (
    Algorithm("recursive_doubling", "floor(log2 P) T(m) [+ 2 T(m) if P is not a power of 2]",
              lambda P, m, n: _flg(P) * n.msg(m) + _fix(P, m, n),
              openmpi=3, mpich="recursive_doubling", intelmpi=1),
    Algorithm("rabenseifner", "2 sum_{k=1..floor(log2 P)} T(m/2^k) [+ 2 T(m)]",
              lambda P, m, n: 2 * _halving(P, m, n) + _fix(P, m, n),
              openmpi=6, mpich="reduce_scatter_allgather", intelmpi=2),
    Algorithm("ring", "2 (P - 1) T(m/P)",
              lambda P, m, n: 2 * (P - 1) * n.msg(m / P), openmpi=4, intelmpi=8),
    Algorithm("basic_linear", "2 (L + (P - 1) g(m))",
              lambda P, m, n: 2 * (n.L + (P - 1) * n.gap(m)), openmpi=1),
)

# ---------------------------------------------------------------- Bcast


def _scatter(P: int, m: float, n: NetModel) -> float:
    return sum(n.msg(m / 2 ** k) for k in range(1, _clg(P) + 1))


BCAST = (
    Algorithm("binomial", "ceil(log2 P) T(m)",
              lambda P, m, n: _clg(P) * n.msg(m), openmpi=6, mpich="binomial", intelmpi=1),
    Algorithm("scatter_allgather",
              "sum_{k=1..ceil(log2 P)} T(m/2^k) + sum_{k=0..ceil(log2 P)-1} T(2^k m/P)",
              lambda P, m, n: _scatter(P, m, n)
              + sum(n.msg(2 ** k * m / P) for k in range(_clg(P))),
              openmpi=8, mpich="scatter_recursive_doubling_allgather", intelmpi=2),
    Algorithm("scatter_ring_allgather", "sum_{k=1..ceil(log2 P)} T(m/2^k) + (P - 1) T(m/P)",
              lambda P, m, n: _scatter(P, m, n) + (P - 1) * n.msg(m / P),
              openmpi=9, mpich="scatter_ring_allgather", intelmpi=3),
    Algorithm("basic_linear", "L + (P - 1) g(m)",
              lambda P, m, n: n.L + (P - 1) * n.gap(m), openmpi=1),
)

# ---------------------------------------------------------------- Allgather

ALLGATHER = (
    Algorithm("recursive_doubling", "sum_{k=0..log2 P-1} T(2^k m) (powers of 2 only)",
              lambda P, m, n: sum(n.msg(2 ** k * m) for k in range(_clg(P))),
              openmpi=3, mpich="recursive_doubling", intelmpi=1, pow2_only=True),
    Algorithm("bruck", "sum_{k=0..ceil(log2 P)-1} T(min(2^k, P - 2^k) m)",
              lambda P, m, n: sum(n.msg(min(2 ** k, P - 2 ** k) * m) for k in range(_clg(P))),
              openmpi=2, mpich="brucks", intelmpi=2),
    Algorithm("ring", "(P - 1) T(m)",
              lambda P, m, n: (P - 1) * n.msg(m), openmpi=4, mpich="ring", intelmpi=3),
)

# ---------------------------------------------------------------- Alltoallv
# m: the mean bytes per peer per call.  The MPI's own algorithms only (the adaptive engine
# does not serve Alltoallv): every exchange posted at once (Open MPI basic_linear, MPICH
# scattered in batches, MPICH nb a nonblocking schedule, Intel MPI 1 Isend/Irecv/Waitall)
# is costed as Alltoall's spread; one partner per step (Open MPI pairwise, Intel MPI 2)
# as its pair.  MPICH's pairwise_sendrecv_replace serves MPI_IN_PLACE only: not offered.

ALLTOALLV = (
    Algorithm("linear", "(L + g(m)) (P - 1)", lambda P, m, n: (n.L + n.gap(m)) * (P - 1),
              openmpi=1, mpich="scattered", intelmpi=1),
    Algorithm("nonblocking", "(L + g(m)) (P - 1)",
              lambda P, m, n: (n.L + n.gap(m)) * (P - 1), mpich="nb"),
    Algorithm("pairwise", "(L + g(m) + min(os(m), or(m))) (P - 1)", _a2a_pair,
              openmpi=2, intelmpi=2),
)

FAMILIES: dict[str, tuple[Algorithm, ...]] = {
    "MPI_Alltoall": ALLTOALL, "MPI_Allreduce": ALLREDUCE, "MPI_Bcast": BCAST,
    "MPI_Allgather": ALLGATHER, "MPI_Alltoallv": ALLTOALLV,
}


def candidates(function: str, P: int, flavour: str) -> list[Algorithm]:
    """The algorithms a change can select for this MPI (Alltoall: every engine algorithm,
    MPILENS_ALLTOALL selects them under any MPI)."""
    out = []
    for a in FAMILIES[function]:
        if a.pow2_only and not _pow2(P):
            continue
        if a.mpilens or (flavour in MPIS and getattr(a, flavour) is not None):
            out.append(a)
    return out


def knob(function: str, alg: Algorithm, flavour: str) -> dict[str, object] | None:
    """The change that selects alg: environment variables to set (what --check applies),
    the equivalent launcher options, and the line to show; None when this MPI has no knob
    for it."""
    coll = function.removeprefix("MPI_").lower()
    if alg.mpilens:
        return {"env": {"MPILENS_ALLTOALL": alg.mpilens}, "launcher_args": [],
                "line": f"MPILENS_ALLTOALL={alg.mpilens} (mpilens run -e, or export it "
                        f"before mpirun; the adaptive engine, docs/alltoall.md)"}
    if flavour == "openmpi" and alg.openmpi is not None:
        args = ["--mca", "coll_tuned_use_dynamic_rules", "1",
                "--mca", f"coll_tuned_{coll}_algorithm", str(alg.openmpi)]
        return {"env": {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                        f"OMPI_MCA_coll_tuned_{coll}_algorithm": str(alg.openmpi)},
                "launcher_args": args,
                "line": f"mpirun {' '.join(args)} ... ({alg.name})"}
    if flavour == "mpich" and alg.mpich is not None:
        var = f"MPIR_CVAR_{coll.upper()}_INTRA_ALGORITHM"
        return {"env": {var: alg.mpich}, "launcher_args": [],
                "line": f"{var}={alg.mpich} (export it before mpiexec)"}
    if flavour == "intelmpi" and alg.intelmpi is not None:
        var = f"I_MPI_ADJUST_{coll.upper()}"
        return {"env": {var: str(alg.intelmpi)}, "launcher_args": [],
                "line": f"{var}={alg.intelmpi} ({alg.name}; export it before mpirun)"}
    return None
