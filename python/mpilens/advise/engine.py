"""Run the rules on a profile and rank what they find (docs/advise.md, Ranking)."""

from __future__ import annotations

import socket
from typing import Any

from ..errors import UserError
from ..report.profile import Profile
from ..units import fmt_bytes
from . import kept, machine, netmodel
from .finding import Context, Finding
from .measure import Measurer
from .rules import RULES
from .rules.latency import bin_range

MINOR_PCT = 1.0              # network findings below this % of the wall time are minor
DEFAULT_MAX_SIZE = 1 << 16   # a model measured here covers at least 0 .. 64 KiB
MEASURE_CAP = 1 << 24        # ... and at most 16 MiB


def check_profile(prof: Profile) -> None:
    """Advise needs per-rank times and peers: the rank lines."""
    if not prof.ranks:
        raise UserError(f"{prof.path}: the profile has no rank lines (written with "
                        f"MPILENS_DETAIL=off): advise needs per-rank times and peers; "
                        f"run the job again with detail on")


def largest_message(prof: Profile) -> int:
    """The upper end of the largest size class any function used."""
    top = 0
    for f in prof.functions.values():
        for key in ("hist_send", "hist_recv"):
            for b, count in enumerate(f.get(key, [])):
                if count:
                    hi = bin_range(b)[1]
                    top = max(top, int(hi) + 1 if hi != float("inf") else MEASURE_CAP)
    return top


def model_for(prof: Profile, path: str | None, remeasure: bool = False) -> netmodel.NetModel:
    """The model file given, else the kept one of the profile's hosts, MPI and ranks per
    node (kept.py), measured on this host when there is none or with --remeasure (only
    when the profile ran here and with this MPI)."""
    hosts = list(prof.header.get("hosts", []))
    library = str(prof.header.get("mpi_library", ""))
    if path is not None:
        model = netmodel.load(path)
        netmodel.check_fits(model, library, hosts)
        return model
    here = socket.gethostname()
    if netmodel.host_stem(here) not in {netmodel.host_stem(h) for h in hosts}:
        raise UserError(f"{prof.path} ran on {', '.join(hosts)}, not on this host ({here}): "
                        f"give --model FILE measured there (`mpilens bench logp --model FILE`)")
    size = 1
    while size < min(max(largest_message(prof), DEFAULT_MAX_SIZE), MEASURE_CAP):
        size <<= 1
    model = None if remeasure else kept.load_kept(prof, size)
    if model is None:
        model = kept.measure_and_keep(prof, size)
    if model.mpi_library != library:
        raise UserError(f"{prof.path} ran '{library}', but this mpilens measures with "
                        f"'{model.mpi_library}': give --model FILE measured with that MPI")
    return model


def warnings(prof: Profile, model: netmodel.NetModel | None = None) -> list[str]:
    """What makes the profile's times doubtful."""
    from .collectives import FAMILIES
    from .rules.collective import size_modes, sizes, split_by_size
    from .rules.latency import BLOCKING

    out: list[str] = []
    ctx = Context(prof, model) if model is not None else None
    for name in [*FAMILIES, *(n for n in BLOCKING if n not in FAMILIES)]:
        f = prof.functions.get(name, {})
        modes = size_modes(f) if name != "MPI_Alltoallv" else None  # its mean (rule 3)
        if modes and ctx is not None and prof.ranks \
                and split_by_size(ctx, name, f, sizes(name, f, prof.nranks)[1]):
            continue  # judged per size, from the call sites (rules 2 and 3)
        if modes:
            rules = ("rules 2 and 3" if name in FAMILIES and name in BLOCKING else
                     "rule 3" if name in FAMILIES else "rule 2")
            out.append(f"{name}'s calls have sizes from {fmt_bytes(modes[0])} to "
                       f"{fmt_bytes(modes[1])} (its send histogram): {rules} "
                       f"{'do' if rules.startswith('rules') else 'does'} not judge "
                       f"them on their mean size, nor apart (its call sites mix sizes, or "
                       f"the profile has none: MPILENS_CALLSITES)")
    if not prof.ranks:
        return out
    t = prof.columns()
    for rank in (t.mpi_s > 1.05 * t.wall_s).nonzero()[0].tolist():
        mpi, wall = float(t.mpi_s[rank]), float(t.wall_s[rank])
        out.append(f"rank {rank}'s time in MPI ({mpi:.3g} s) exceeds its "
                   f"wall time ({wall:.3g} s): "
                   + ("sampled timing estimated it from few calls; run with "
                      "MPILENS_TIMING=all" if prof.header.get("timing", {}).get("mode")
                      == "sampled" else "the profile's times are inconsistent"))
    return out


def bounded(ctx: Context, f: Finding) -> Finding:
    """A network finding's gain is at most the time in MPI per rank (rule 7's bound)."""
    if f.network and ctx.mpi_s > 0 and f.gain_s > ctx.mpi_s:
        f.figures["gain_model_s"] = f.gain_s
        f.gain_note += (f"; the model's {f.gain_s:.3g} s capped at the time in MPI per rank "
                        f"({ctx.mpi_s:.3g} s)")
        f.gain_s, f.gain_pct = ctx.mpi_s, ctx.pct(ctx.mpi_s)
    return f


def ident(f: Finding) -> tuple[int, str, str]:
    return f.rule, f.key, f.title


def with_intervals(ctx: Context, found: list[Finding]) -> None:
    """Each finding's gain at the low and high ends of the model's 95 % intervals: the
    rules again with either bound model; a finding one of them does not make counts 0
    there.  Without intervals in the model (a file of `bench logp --model`), none."""
    ends = ctx.model.bounds()
    if ends is None:
        return
    gains = []
    for end in ends:
        c = Context(ctx.prof, end, ctx.rails, ctx.measure)
        gains.append({ident(f): f.gain_s for rule in RULES for f in rule.find(c)
                      for f in [bounded(c, f)]})
    for f in found:
        if "measured" in f.figures:  # measured candidates: their own interval
            continue
        vals = [f.gain_s] + [g.get(ident(f), 0.0) for g in gains]
        f.gain_interval = [min(vals), max(vals)]


def advise(prof: Profile, model: netmodel.NetModel,
           rails: list[str] | None = None, measure: Measurer | None = None) -> dict[str, Any]:
    """Findings, ranked: rule 7 first; when imbalance dominates, it comes next and the
    network findings are withheld; the others by predicted gain, those of low confidence
    after the rest.  Network findings predicting under MINOR_PCT of the wall time are minor."""
    check_profile(prof)
    ctx = Context(prof, model, rails, measure)
    found: list[Finding] = [bounded(ctx, f) for rule in RULES for f in rule.find(ctx)]
    with_intervals(ctx, found)
    found = [f for f in found if not f.network or f.gain_s > 0]  # nothing to gain: no advice
    over = machine.oversubscribed(prof)
    if over:  # the timings include waiting for a CPU: neither the model nor a comparison
        # of ranks' times describes the job on enough CPUs (every rule reads times)
        why = "; ".join(f"{o['host']} ran {o['ranks']} ranks on {o['cpus']} CPUs" for o in over)
        for f in found:
            if f.confidence != "low":
                f.confidence_why = (f"lowered from {f.confidence}: oversubscribed ({why}), the "
                                    f"measured times include waiting for a CPU; "
                                    + f.confidence_why)
                f.confidence = "low"
            else:
                f.confidence_why += (f"; oversubscribed ({why}): the measured times include "
                                     f"waiting for a CPU")
    imbalance_bound = any(f.key == "imbalance" and f.figures["dominant"] for f in found)
    withheld = [f for f in found if imbalance_bound and f.network]
    minor = [f for f in found if f not in withheld and f.network and f.gain_pct < MINOR_PCT]
    shown = [f for f in found if f not in withheld and f not in minor]
    shown.sort(key=lambda f: (f.rule != 7, not (f.key == "imbalance" and imbalance_bound),
                              f.confidence == "low", -f.gain_s, f.rule, f.title))
    return {
        "profile": str(prof.path),
        "mpi_library": prof.header.get("mpi_library", ""),
        "mpi_flavour": ctx.flavour,
        "nranks": prof.nranks,
        "hosts": list(prof.header.get("hosts", [])),
        "wall_s": ctx.wall_s,
        "mpi_s": ctx.mpi_s,
        "model": {"source": model.source, "measured_now": model.measured_now,
                  "mpi_library": model.mpi_library, "L_s": model.L, "g0_s": model.g[0],
                  "hosts": model.hosts, "eager_crossover": model.eager_crossover(),
                  "latency_crossover": model.latency_crossover(),
                  "intervals": model.ci95 is not None},
        "rail_interfaces": rails,
        "timing": prof.header.get("timing", {}).get("mode", "unknown"),
        "warnings": warnings(prof, model) + [
            f"oversubscribed: {o['host']} ran {o['ranks']} ranks on {o['cpus']} CPUs (the "
            f"profile's cpus_online and affinity): times include waiting for a CPU, so "
            f"every finding is of low confidence and no rank of that host is named late"
            for o in over],
        "machine": {"oversubscribed": over, "launch": machine.launch(prof)},
        "notes": list(ctx.notes),
        "imbalance_bound": imbalance_bound,
        "findings": [f.as_dict() for f in shown],
        "withheld": [f.as_dict() for f in withheld],
        "minor": [f.as_dict() for f in minor],
    }


def top_applicable(result: dict[str, Any], rule: int | None = None) -> dict[str, Any] | None:
    """The highest-ranked finding whose change needs no code edit; with rule: the
    highest-ranked one of that rule among the findings, then the minor and the withheld
    ones (--check-rule: check a change advise does not put first)."""
    if rule is None:
        return next((f for f in result["findings"] if f.get("apply")), None)
    return next((f for f in result["findings"] + result["minor"] + result["withheld"]
                 if f.get("apply") and f["rule"] == rule), None)
