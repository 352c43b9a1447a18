"""Rule 10, polling loops: MPI_Test* / MPI_Iprobe called far more often than messages
arrive (HPC Challenge: 4.2 million MPI_Testany, 83 % of its wall time).

Per rank that polls: its calls of the polling functions and the messages it received
(`peers.recv`); polls per message at or above PER_MESSAGE and at least MIN_POLLS
polls on that rank make it a polling loop.  The time is waiting, not transfer: no
network change shortens it; the change is to wait instead of poll, or to poll less.
"""

from __future__ import annotations

from ...units import fmt_time
from ..finding import Context, Finding

RULE = 10
POLLS = ("MPI_Test", "MPI_Testany", "MPI_Testall", "MPI_Testsome", "MPI_Iprobe",
         "MPI_Improbe")
PER_MESSAGE = 100     # polls per received message: most polls find nothing
MIN_POLLS = 10_000    # polls on a rank before it is a loop worth changing


def find(ctx: Context) -> list[Finding]:
    ranks = []
    for r in ctx.prof.ranks:
        fs = {n: r["functions"][n] for n in POLLS if n in r["functions"]}
        polls = sum(int(f.get("calls", 0)) for f in fs.values())
        if polls < MIN_POLLS:
            continue
        msgs = sum(int(p[1]) for p in r.get("peers", {}).get("recv", []))
        if polls < PER_MESSAGE * max(msgs, 1):
            continue
        ranks.append((r["rank"], polls, msgs, sum(float(f.get("time_s", 0.0))
                                                  for f in fs.values()), fs))
    if not ranks:
        return []
    polls = sum(p[1] for p in ranks)
    msgs = sum(p[2] for p in ranks)
    time = sum(p[3] for p in ranks) / ctx.nranks
    names: dict[str, int] = {}
    for *_, fs in ranks:
        for n, f in fs.items():
            names[n] = names.get(n, 0) + int(f.get("calls", 0))
    top = max(names, key=lambda n: (names[n], n))
    return [Finding(
        rule=RULE, key="polling", title=f"Polling: {top} called {polls:,} times",
        what=(f"{len(ranks)} rank(s) poll: {polls:,} calls of "
              + ", ".join(f"{n} {c:,}" for n, c in sorted(names.items()))
              + f" for {msgs:,} received messages ({polls / max(msgs, 1):,.0f} polls per "
              f"message); {fmt_time(time)} per rank ({ctx.pct(time):.1f} % of the wall time) "
              f"in them"),
        why=("the polls wait for messages: their time is waiting, not transfer, so no "
             "network or algorithm change shortens it; each poll costs a call, and on "
             "a node with more ranks than cores a polling rank takes the CPU from the "
             "rank it waits for"),
        change=(f"wait instead of polling: MPI_Waitany / MPI_Waitsome / MPI_Wait in place "
                f"of a loop of {top} with nothing else to do; when there is other work, "
                f"poll less often (every k iterations of it) (code change)"),
        gain_s=time, gain_pct=ctx.pct(time),
        gain_note=("upper bound: the polls' own time; what the ranks wait for stays "
                   "(a blocking wait still waits, but does not call millions of times)"),
        confidence="low",
        confidence_why="the polls' time is measured; how much of it the change saves is not",
        basis={"profile": [f"{', '.join(POLLS)}: per-rank calls and time_s",
                           "rank lines: peers.recv (messages received)"],
               "model": [],
               "assumptions": ["a poll that finds nothing costs its call only"]},
        network=False,
        figures={"polls": polls, "messages": msgs, "ranks": [p[0] for p in ranks],
                 "functions": names, "time_per_rank_s": time})]
