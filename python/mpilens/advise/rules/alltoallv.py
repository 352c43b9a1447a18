"""Rule 8, MPI_Alltoallv / MPI_Alltoallw count imbalance.

An Alltoallv's time is set by the rank that moves the most: when one rank sends (or
receives) far more than the mean, every rank waits for it.  From the rank lines: per
rank the function's bytes sent and received; the imbalance is the largest over the mean
(of either direction).  At IMBALANCED or more the finding proposes balancing the counts
(a code change) and names the MPI's algorithm knob for the function.
"""

from __future__ import annotations

from ...units import fmt_bytes, fmt_time
from ..finding import Context, Finding

RULE = 8
IMBALANCED = 1.5   # largest rank's bytes over the mean at or above which counts are imbalanced
FUNCTIONS = ("MPI_Alltoallv", "MPI_Alltoallw")
KNOBS = {  # the MPI's algorithm knob (installed versions: docs/advise.md, Rule 8)
    "openmpi": ("mpirun --mca coll_tuned_use_dynamic_rules 1 --mca "
                "coll_tuned_{f}_algorithm N (1 basic_linear: every exchange posted at once, "
                "2 pairwise: one partner per step)"),
    "mpich": ("MPIR_CVAR_{F}_INTRA_ALGORITHM=scattered (exchanges posted in batches) or "
              "nb (a nonblocking schedule)"),
    "intelmpi": "I_MPI_ADJUST_{F}=1 (Isend/Irecv/Waitall) or 2 (plain)",
}


def find(ctx: Context) -> list[Finding]:
    out = []
    for name in FUNCTIONS:
        per = [(r["rank"], float(r["functions"][name].get("time_s", 0.0)),
                int(r["functions"][name].get("bytes_sent", 0)),
                int(r["functions"][name].get("bytes_recv", 0)))
               for r in ctx.prof.ranks if int(r["functions"].get(name, {}).get("calls", 0)) > 0]
        if len(per) < 2:
            continue
        n = len(per)
        ratios = {}
        for k, label in ((2, "sends"), (3, "receives")):
            mean = sum(p[k] for p in per) / n
            heavy = max(per, key=lambda p: (p[k], -p[0]))
            if mean > 0:
                ratios[label] = (heavy[k] / mean, heavy[0], heavy[k], mean)
        if not ratios:
            continue
        label, (ratio, rank, most, mean) = max(ratios.items(), key=lambda kv: kv[1][0])
        if ratio < IMBALANCED:
            continue
        time = sum(p[1] for p in per) / ctx.nranks
        gain = time * (1 - 1 / ratio)
        knob = KNOBS.get(ctx.flavour, "the MPI's own Alltoallv algorithm setting")
        base = name.removeprefix("MPI_").lower()
        out.append(Finding(
            rule=RULE, key="alltoallv-imbalance", title=f"{name}: imbalanced counts",
            what=(f"rank {rank} {label} {fmt_bytes(most)} in {name}, {ratio:.2f} x the mean "
                  f"{fmt_bytes(mean)} over the {n} ranks that called it; "
                  f"{fmt_time(time)} per rank in it"),
            why=(f"each {name} ends when the rank that moves the most is done: the others "
                 f"wait for rank {rank}"),
            change=(f"balance the counts (move data so that every rank {label[:-1]}s about "
                    f"the mean; code change); or try the MPI's algorithm: "
                    + knob.format(f=base, F=base.upper())
                    + " and check it with the profiler"),
            gain_s=gain, gain_pct=ctx.pct(gain),
            gain_note=(f"upper bound: the time in {name} scaled from the largest rank's bytes "
                       f"to the mean's, {fmt_time(time)} x (1 - 1/{ratio:.2f})"),
            confidence="low",
            confidence_why=("the bytes are exact; that the time follows the largest rank's "
                            "bytes is an assumption"),
            basis={"profile": [f"{name}: per-rank bytes_sent, bytes_recv and time_s"],
                   "model": [],
                   "assumptions": [(f"the time of {name} is proportional to the bytes of "
                                    f"the rank that moves the most")]},
            network=False,
            figures={"function": name, "ratio": ratio, "direction": label, "rank": rank,
                     "bytes_max": most, "bytes_mean": mean, "time_per_rank_s": time}))
    return out
