"""What every advise rule works with (the context) and what it returns (a finding)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..report.analysis import OUTSIDE
from ..report.profile import Profile
from . import machine
from .netmodel import NetModel

if TYPE_CHECKING:
    from .measure import Measurer

# Confidence: the model's prediction of what ran, over the measured time, inside this
# range means the model describes this run.
FIT_RANGE = (0.5, 2.0)


@dataclass
class Context:
    prof: Profile
    model: NetModel
    rails: list[str] | None = None   # --rail-interfaces: the devices of the nodes' rails
    # runs the candidates when the model is far off (measure.py); None: cannot here
    measure: Measurer | None = None
    # what the rules say without a finding (e.g. candidates measured, none faster
    # beyond the noise): advise's "notes"
    notes: list[str] = field(default_factory=list)

    @property
    def nranks(self) -> int:
        return self.prof.nranks

    @property
    def wall_s(self) -> float:
        """Mean wall time per rank (MPI_Init -> MPI_Finalize)."""
        return float(self.prof.header["wall_s"]["mean"])

    @property
    def mpi_s(self) -> float:
        return float(self.prof.header["mpi_s"]["mean"])

    @property
    def flavour(self) -> str:
        return str(self.prof.header.get("mpi_flavour", "unknown"))

    def functions(self) -> dict[str, dict[str, Any]]:
        return {n: f for n, f in self.prof.functions.items() if n not in OUTSIDE}

    @cached_property
    def oversubscribed(self) -> list[dict[str, Any]]:
        """The hosts that ran more ranks than CPUs (machine.py): [{host, ranks, cpus}]."""
        return machine.oversubscribed(self.prof)

    def starved(self, rank: int) -> dict[str, Any] | None:
        """The oversubscribed host `rank` ran on ({host, ranks, cpus}), else None."""
        if not self.oversubscribed:
            return None
        for r in self.prof.ranks:
            if int(r["rank"]) == rank:
                host = str(r.get("host", ""))
                return next((o for o in self.oversubscribed if o["host"] == host), None)
        return None

    def pct(self, seconds: float) -> float:
        return 100.0 * seconds / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class Finding:
    rule: int                     # the rule's number in docs/advise.md
    key: str                      # nothing-to-gain, imbalance, latency, collective-algorithm
    title: str
    what: str                     # what was seen, with the profile's figures
    why: str                      # the model's explanation, with its figures
    change: str                   # the change, written for the profile's MPI
    gain_s: float                 # predicted gain: mean wall seconds per rank
    gain_pct: float               # ... in % of the mean wall time
    gain_note: str                # how the gain was computed, its assumptions
    confidence: str               # high / medium / low
    confidence_why: str
    basis: dict[str, list[str]]   # profile / model / assumptions: where each figure came from
    network: bool = True          # a network fix: withheld when imbalance dominates
    apply: dict[str, Any] | None = None  # env / launcher_args when no code edit is needed
    figures: dict[str, Any] = field(default_factory=dict)
    # the functions the change acts on: --check decides on their time per call
    target: list[str] = field(default_factory=list)
    # [lo, hi]: the gain with the model at the ends of its 95 % intervals (kept models)
    gain_interval: list[float] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit_confidence(predicted_s: float, measured_s: float, what: str) -> tuple[str, str]:
    """high when the model's prediction of what ran is within FIT_RANGE of the measured
    time, low otherwise (the model does not describe this run)."""
    if predicted_s <= 0 or measured_s <= 0:
        return "medium", f"{what}: no measured time to compare the model with"
    ratio = measured_s / predicted_s
    lo, hi = FIT_RANGE
    verdict = "high" if lo <= ratio <= hi else "low"
    return verdict, (f"{what}: measured {measured_s:.3g} s, model {predicted_s:.3g} s "
                     f"(measured/model {ratio:.2f}; high within {lo:g}..{hi:g})")
