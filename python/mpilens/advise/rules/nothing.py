"""Rule 7, nothing to gain: communication under 5 % of the wall time is said first."""

from __future__ import annotations

from ...units import fmt_time
from ..finding import Context, Finding

RULE = 7
SHARE = 0.05  # below this share of the wall time in MPI, there is little to gain


def find(ctx: Context) -> list[Finding]:
    share = ctx.mpi_s / ctx.wall_s if ctx.wall_s > 0 else 0.0
    if share >= SHARE:
        return []
    return [Finding(
        rule=RULE, key="nothing-to-gain", title="Little to gain in communication",
        what=(f"{100 * share:.1f} % of the wall time is in MPI (mean per rank "
              f"{fmt_time(ctx.mpi_s)} of {fmt_time(ctx.wall_s)}), under {100 * SHARE:g} %"),
        why="even free communication would shorten the run by at most that share",
        change="none: look at the computation first",
        gain_s=ctx.mpi_s, gain_pct=ctx.pct(ctx.mpi_s),
        gain_note="upper bound: all MPI time removed", confidence="high",
        confidence_why="measured times only, no model",
        basis={"profile": [f"wall_s.mean {ctx.wall_s:.6g} s", f"mpi_s.mean {ctx.mpi_s:.6g} s"],
               "model": [], "assumptions": []},
        network=False, figures={"mpi_share": share})]
