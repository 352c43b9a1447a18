"""Who waits for whom in a partial profile (docs/flight-recorder.md), and the verdict.

Each rank's last dump (partial.py, validated) says which call each thread is inside and
which non-blocking requests are outstanding.  A blocked call *needs* something from other
ranks, judged by MPI's matching rules:

- a blocking send to X is *in flight* (needs nothing) when X has a matching receive
  posted: its blocking receive, `MPI_Sendrecv` or a pending `MPI_Irecv` on the same
  communicator, with source = the sender or `MPI_ANY_SOURCE` and tag = the send's tag or
  `MPI_ANY_TAG`; otherwise it needs X;
- a receive from X likewise needs X unless X has a matching send pending (a blocking
  send, `MPI_Sendrecv`, or a pending `MPI_Isend`); from `MPI_ANY_SOURCE` it needs any
  one of the communicator's ranks;
- `MPI_Wait`/`MPI_Waitall` on requests: one need per tracked request (`MPI_Waitany`/
  `MPI_Waitsome`: any one of them);
- a collective is matched by communicator *and* place in that communicator's order of
  collectives (`coll_seq`, counted by the runtime on every rank): ranks inside the same
  place and operation have arrived; a member at a later place (or, on MPI_COMM_WORLD,
  with more collectives made: `world_collectives`) has passed it; a member behind is
  needed.  Two ranks whose dumps (now, or any dump kept) record different operations at
  the same place are a *proven mismatch*, and nothing else is: ranks inside a collective
  every other member has left are "stuck in a collective the others completed" (a
  member may leave once its part is sent; a stalled one shows that way).

A need is *certain* when both sides could be judged (communicators known, no untracked
requests, the operation cannot complete without that rank); a rank is *settled* when it
has been inside its call for SETTLED_S or more.  A **deadlock** is claimed only for ranks
that are settled, all of whose threads are inside MPI, and none of whose certain needs
can be met: computed as the greatest set in which every rank has a need that only ranks
of the set could meet (any rank outside it -- computing, missing, crashed, uncertain,
in flight -- might still meet it).  A completed eager send leaves no trace, so a snapshot
of a healthy exchange can look like a cycle for microseconds: the settling time is what
tells them apart.

Verdicts, each with what it rests on, the first that applies first:
aborted, crashed, deadlock, mismatch, stuck (on a rank computing, stopped, crashed or
without a dump), stuck in a collective the others completed, stopped (a rank resumed
only to end), progressing (two dumps, calls completed between them), communicating
(killed while inside MPI calls, no sign of a hang), stuck (cannot tell why), none.
Over the history of the dumps (analyse): the ranks' first hang dumps are judged as the
state at the hang; a hang there that the last dumps no longer show (the job moved
again) leads the verdict as a time line.
Plain data: the terminal, JSON and HTML reports show the same.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..units import fmt_bytes, fmt_time
from .profile import Profile

SETTLED_S = 1.0  # a call inside this long is not a message still on its way
WAITS_SHOWN = 64  # ranks listed per wait (the table, JSON): more are counted, not listed
STALE_S = 2.0  # a dump this much older than the newest one: the rank stopped dumping
ANY_TAG = -1
_OR_WAITS = ("MPI_Waitany", "MPI_Waitsome", "MPI_Testany", "MPI_Testsome")
_ROOT_SENDS = ("MPI_Bcast", "MPI_Scatter", "MPI_Scatterv", "MPI_Ibcast", "MPI_Iscatter",
               "MPI_Iscatterv")
_ROOT_GETS = ("MPI_Reduce", "MPI_Gather", "MPI_Gatherv", "MPI_Ireduce", "MPI_Igather",
              "MPI_Igatherv")


def ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    out: list[str] = []
    rs = sorted(set(ranks))
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ", ".join(out)


def _ranks_word(ranks: list[int]) -> str:
    return f"rank{'s' if len(set(ranks)) > 1 else ''} {ranges(ranks)}"


def _ordinal(n: int) -> str:
    suf = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"


def _members(comm: Any, nranks: int) -> list[int] | None:
    if comm == "world":
        return list(range(nranks))
    if isinstance(comm, dict) and isinstance(comm.get("ranks"), list):
        return [r for r in comm["ranks"] if isinstance(r, int) and 0 <= r < nranks]
    return None


def _ckey(comm: Any) -> tuple[int, ...] | str | None:
    """A communicator's identity across ranks: 'world', its member list, or None."""
    if comm == "world":
        return "world"
    if isinstance(comm, dict) and isinstance(comm.get("ranks"), list):
        return tuple(comm["ranks"])
    return None


def comm_label(comm: Any) -> str:
    if comm == "world":
        return "MPI_COMM_WORLD"
    if isinstance(comm, dict):
        return f"the communicator of ranks {ranges(comm.get('ranks', []))}"
    return "an unknown communicator"


def _peer(v: Any) -> str:
    return str(v) if isinstance(v, int) else {"any": "any source"}.get(str(v), str(v))


def describe(call: dict[str, Any]) -> str:
    """'MPI_Recv from 5, tag 7, 4 KiB' and the like."""
    fn, kind = call["function"], call.get("kind")
    tag = f", tag {call['tag']}" if call.get("tag", -1) not in (-1, None) and kind != "coll" else ""
    size = f", {fmt_bytes(call['bytes'])}" if call.get("bytes") else ""
    if kind == "send":
        return f"{fn} to {_peer(call.get('dest'))}{tag}{size}"
    if kind == "recv":
        return f"{fn} from {_peer(call.get('source'))}{tag}{size}"
    if kind == "sendrecv":
        return (f"{fn} to {_peer(call.get('dest'))}{tag}, from {_peer(call.get('source'))}, "
                f"tag {call.get('recv_tag')}{size}")
    if kind == "coll":
        root = f", root {call['root']}" if isinstance(call.get("root"), int) else ""
        return f"{fn} on {comm_label(call.get('comm'))}{root}{size}"
    if kind == "wait":
        reqs = call.get("waits_on", [])
        what = "; ".join(describe(q) for q in reqs[:4])
        more = f"; {len(reqs) - 4} more" if len(reqs) > 4 else ""
        head = f"{fn} on {call.get('requests', len(reqs))} request(s)"
        return head + (f": {what}{more}" if what else "")
    return fn


def _total_calls(line: dict[str, Any]) -> int:
    return sum(int(f.get("calls", 0)) for f in line["functions"].values())


def _cycles(edges: dict[int, set[int]]) -> list[list[int]]:
    """The shortest cycle through the lowest rank of each strongly connected group
    (iterative Tarjan: no recursion limit at many ranks)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    groups: list[list[int]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                g = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    g.append(x)
                    if x == v:
                        break
                groups.append(sorted(g))
    out = []
    for g in groups:
        start = g[0]
        if len(g) == 1 and start not in edges.get(start, ()):
            continue
        inside = set(g)
        parent: dict[int, int] = {}
        todo, seen, end = [start], {start}, None
        while todo and end is None:  # breadth first: the shortest way back to start
            nxt = []
            for v in todo:
                for w in sorted(edges.get(v, ())):
                    if w == start:
                        end = v
                        break
                    if w in inside and w not in seen:
                        seen.add(w)
                        parent[w] = v
                        nxt.append(w)
                if end is not None:
                    break
            todo = nxt
        path = [end] if end is not None else []
        while path and path[-1] != start:
            path.append(parent[path[-1]])
        out.append(list(reversed(path)) + [start])
    return sorted(out)


# ---- what each rank has posted (for matching) ----

class _Posted:
    """The receives each rank has posted, and the pending sends by destination."""

    def __init__(self) -> None:
        self.recvs: dict[int, list[tuple[Any, Any, int]]] = {}  # owner -> (comm, source, tag)
        self.sends_to: dict[int, list[tuple[int, Any, int]]] = {}  # dest -> (sender, comm, tag)

    def add(self, r: int, obj: dict[str, Any], kind: str) -> None:
        ck = _ckey(obj.get("comm"))
        if kind in ("recv", "sendrecv"):
            tag = obj.get("recv_tag" if kind == "sendrecv" else "tag", ANY_TAG)
            self.recvs.setdefault(r, []).append((ck, obj.get("source"), tag))
        if kind in ("send", "sendrecv") and isinstance(obj.get("dest"), int):
            self.sends_to.setdefault(obj["dest"], []).append((r, ck, obj.get("tag", ANY_TAG)))

    def recv_matches(self, owner: int, sender: int, ck: Any, tag: Any) -> bool:
        """owner has a receive posted that a send of sender (comm ck, tag) matches."""
        return any(c == ck and (s == sender or s == "any") and (t == tag or t == ANY_TAG)
                   for c, s, t in self.recvs.get(owner, ()))

    def send_matches(self, receiver: int, ck: Any, source: Any, tag: Any) -> bool:
        """Some rank has a send pending that a receive of receiver (ck, source, tag) matches."""
        return any(c == ck and (source == "any" or s == source) and (tag == ANY_TAG or t == tag)
                   for s, c, t in self.sends_to.get(receiver, ()))


class _Shared:
    """Member lists per communicator, made once (a need of every rank of a collective or
    of an MPI_ANY_SOURCE receive refers to one list: nothing quadratic in ranks)."""

    def __init__(self, n: int, untracked: set[int]) -> None:
        self.n = n
        self.untracked = untracked
        self.members: dict[Any, list[int] | None] = {}
        self.has_untracked: dict[Any, bool] = {}

    def of(self, comm: Any) -> list[int] | None:
        ck = _ckey(comm)
        if ck not in self.members:
            m = _members(comm, self.n)
            self.members[ck] = m
            self.has_untracked[ck] = m is not None and any(x in self.untracked for x in m)
        return self.members[ck]


def _need_p2p(r: int, obj: dict[str, Any], kind: str, posted: _Posted, sh: _Shared,
              ) -> list[dict[str, Any]]:
    """What a send or receive of rank r (a call or a request) needs: [] when in flight."""
    ck = _ckey(obj.get("comm"))
    n = sh.n
    out: list[dict[str, Any]] = []
    if kind in ("send", "sendrecv"):
        d = obj.get("dest")
        if (isinstance(d, int) and 0 <= d < n and d != r
                and not posted.recv_matches(d, r, ck, obj.get("tag", ANY_TAG))):
            out.append({"any": False, "ranks": [d],
                        "certain": ck is not None and d not in sh.untracked,
                        "what": f"a matching receive on rank {d}"})
    if kind in ("recv", "sendrecv"):
        s = obj.get("source")
        tag = obj.get("recv_tag" if kind == "sendrecv" else "tag", ANY_TAG)
        if isinstance(s, int) and 0 <= s < n and s != r:
            if not posted.send_matches(r, ck, s, tag):
                out.append({"any": False, "ranks": [s],
                            "certain": ck is not None and s not in sh.untracked,
                            "what": f"a matching send from rank {s}"})
        elif s == "any":
            members = sh.of(obj.get("comm"))
            if members is not None:
                if not posted.send_matches(r, ck, "any", tag):
                    # any one of the members (r itself included: r cannot, and waits anyway)
                    out.append({"any": True, "ranks": members,
                                "certain": ck is not None and not sh.has_untracked[ck],
                                "what": "a matching send from any rank"})
            else:
                out.append({"any": True, "ranks": [], "certain": False,
                            "what": "a matching send from any rank"})
    return out


HANG_KINDS = ("deadlock", "mismatch", "stuck_on_missing", "stuck_on_stopped",
              "stuck_on_computing", "stuck_on_crashed", "stopped", "stuck_in_completed",
              "stuck")


def analyse(prof: Profile) -> dict[str, Any]:
    """The verdict on the ranks' last dumps, and over the history of the dumps: a hang
    some ranks dumped for (`rank-N.hang`) is judged as it was then, and stays in the
    verdict when the job moved again before it ended (a stopped rank resumed by the
    launcher's SIGCONT, say)."""
    part = prof.partial or {}
    n = prof.nranks
    dumps: dict[int, dict[str, Any]] = part.get("dumps", {})
    lines = part.get("rank_lines", {})
    history = part.get("history", {})
    now = _judge(n, dumps, lines, part.get("prev", {}), part, history, None)
    first_hang: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for r, hist in history.items():
        stops = _stops(hist)
        # a hang dump just after a stop of its own rank timed the stop, not a hang (the
        # recorder now counts a call from the resumption)
        hd = next(((h, ln) for h, ln in hist if h["reason"] == "hang" and not any(
            st["from"] <= (_when(h) or 0.0) <= st["from"] + st["for_s"] + STALE_S
            for st in stops)), None)
        if hd is not None and _when(hd[0]) is not None:
            first_hang[r] = hd
    if not first_hang:
        return {**now, "timeline": []}
    t_first = min(_when(h) or 0.0 for h, _ in first_hang.values())
    t_last = max(_when(h) or 0.0 for h, _ in first_hang.values())
    snap: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    later = False  # some rank dumped again after the hang
    for r, hist in history.items():
        if r in first_hang:
            snap[r] = first_hang[r]
            later = later or hist[-1][0]["dump"] > first_hang[r][0]["dump"]
            continue
        before = [(h, ln) for h, ln in hist if (_when(h) or 0.0) <= t_last + 0.5]
        if before:
            snap[r] = before[-1]
        later = later or len(before) < len(hist)
    if not later:  # the last dumps are the hang's: judged above
        return {**now, "timeline": []}
    hung = _judge(n, {r: h for r, (h, _) in snap.items()},
                  {r: ln for r, (_, ln) in snap.items()}, {},
                  {**part, "missing": [r for r in range(n) if r not in snap]}, history, t_last)
    hv, nv = hung["verdict"], now["verdict"]
    if hv["kind"] not in HANG_KINDS:
        return {**now, "timeline": []}
    # the end: the last dumps written after the hang, and whether the ranks moved since
    ends = [h for r, h in dumps.items() if (_when(h) or 0.0) > t_last]
    t_end = max((_when(h) or 0.0 for h in ends), default=t_last)
    why = sorted({_why(h) for h in ends})
    moved = sorted(r for r, (_, ln) in snap.items()
                   if r in lines and _total_calls(lines[r]) != _total_calls(ln))
    resumed = sorted(r for r in range(n) if hung["ranks"][r]["state"] == "stopped"
                     and r in dumps and (_when(dumps[r]) or 0.0) > t_last)
    end = (f"then {' and '.join(why) or 'dumped again'} at {_clock(t_end)}" +
           (f" while moving again ({_ranks_word(moved)} completed MPI calls after the hang"
            + (f"; {_ranks_word(resumed)} resumed" if resumed else "") + ")" if moved
            else f" after {_ranks_word(resumed)} resumed (no MPI call completed since the "
                 "hang)" if resumed else ", still stuck"))
    line = {"kind": hv["kind"], "text": f"hung from {_clock(t_first)} ({hv['short']}), {end}",
            "short": hv["short"],
            "rests_on": "the hang dumps (rank-N.hang) as the verdict on them, and the call "
                        "counts and clocks of the last dumps"}
    timeline = [{"at": t_first, "what": "hang", "verdict": hv},
                {"at": t_end, "what": ", ".join(why), "verdict": nv, "moved": moved}]
    if nv["kind"] in HANG_KINDS and nv["kind"] != "stopped":  # a hang at the end too: the
        # last dumps say the most (a rank stopped, nothing stuck: the hang says more)
        return {**now, "findings": now["findings"] + [line], "timeline": timeline,
                "at_hang": _public(hung)}
    findings = ([line] + [{**f, "text": f"at the hang: {f['text']}"} for f in hung["findings"]]
                + [{**f, "text": f"at the end: {f['text']}"} for f in now["findings"]])
    return {**now, "verdict": line, "findings": findings, "timeline": timeline,
            "at_hang": _public(hung)}


def _public(w: dict[str, Any]) -> dict[str, Any]:
    """The analysis of the hang's dumps as JSON shows it (the verdict and what it rests on)."""
    return {k: w[k] for k in ("cycles", "deadlocked", "mismatched", "completed_by_others",
                              "missing", "verdict", "findings")}


def _when(h: dict[str, Any]) -> float | None:
    """A dump's wall-clock time (epoch seconds): its `time`, else its `created`."""
    t = h.get("time")
    if isinstance(t, (int, float)) and t > 0:
        return float(t)
    try:
        return datetime.strptime(str(h.get("created", "")), "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _clock(t: float) -> str:
    try:
        return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):  # a clock no calendar holds (a bad file)
        return f"{t:.6g} s since 1970"


def _why(h: dict[str, Any]) -> str:
    r = h["reason"]
    if r == "signal":
        sig = h.get("signal") or "a signal"
        return f"a snapshot on {sig}" if sig in ("SIGUSR1", "SIGUSR2") else f"ended by {sig}"
    return {"time_limit": "the time-limit dump", "hang": "another hang dump",
            "abort": "MPI_Abort", "crash": f"a crash ({h.get('signal') or 'a fault'})"}.get(r, r)


def _stops(hist: list[Any]) -> list[dict[str, float]]:
    """The stops a rank's dumps report (the recorder's clock ran, the CPU time did not)."""
    seen: dict[float, dict[str, float]] = {}
    for h, _ in hist:
        for st in h.get("stopped", []):
            seen[round(st["from"], 1)] = st
    return [seen[k] for k in sorted(seen)]


def _resumed_for(d: dict[str, Any], stops: list[dict[str, float]]) -> dict[str, float] | None:
    """The stop a rank's last dump reports as ended just before it (within STALE_S): the
    rank was stopped while the others waited, and resumed only to end (a launcher's SIGCONT
    before its SIGTERM)."""
    t = _when(d)
    if not stops or t is None or not d.get("stopped"):
        return None
    st = stops[-1]
    return st if t - (st["from"] + st["for_s"]) <= STALE_S else None


def _stopped_at(stops: list[dict[str, float]], t: float) -> dict[str, float] | None:
    """The stop that covers time t (within the recorder's tick)."""
    for st in stops:
        if st["from"] - 0.2 <= t <= st["from"] + st["for_s"] + 0.2:
            return st
    return None


def _judge(n: int, dumps: dict[int, dict[str, Any]], lines: dict[int, dict[str, Any]],
           prev: dict[int, Any], part: dict[str, Any], history: dict[int, list[Any]],
           at: float | None) -> dict[str, Any]:
    """The analysis of one state of the job: each rank's dump in dumps (its last, or the
    one it had at a hang); history: every dump kept (for the collectives they record and
    the stops they saw); at: the wall-clock time judged (None: the end)."""
    stale = _stale(dumps)
    stops = {r: _stops(h) for r, h in history.items()}
    calls: dict[int, dict[str, Any]] = {}
    all_in: dict[int, bool] = {}
    rows: list[dict[str, Any]] = []
    posted = _Posted()
    untracked: set[int] = set()
    for r in range(n):
        d = dumps.get(r)
        threads = d["threads"] if d else []
        inside = [t["call"] for t in threads if t.get("call")] if r not in stale else []
        last = next((t.get("last_call") for t in threads if t.get("last_call")), None)
        if inside:
            calls[r] = inside[0]
            all_in[r] = len(inside) == len(threads)
        state = ("no_dump" if d is None else "crashed" if d["reason"] == "crash" else
                 "aborted" if d["reason"] == "abort" else "in_mpi" if inside else "not_in_mpi")
        if r in stale:
            state = "stale"
        if at is not None:
            stop = _stopped_at(stops.get(r, []), at)
        else:  # at the end: stopped until just before its last dump (resumed to end)
            stop = _resumed_for(d, stops.get(r, [])) if d else None
        if stop is not None and state in ("no_dump", "stale", "not_in_mpi"):
            state = "stopped"
        elif at is not None and state == "no_dump" and history.get(r):
            state = "dumped_later"  # no dump yet at the hang, later ones: not known then
        rows.append({"rank": r, "state": state, "stopped": stops.get(r, []),
                     "stop": stop,
                     "function": inside[0]["function"] if inside else None,
                     "call": describe(inside[0]) if inside else None,
                     "since_s": inside[0].get("since_s") if inside else None,
                     "last_call": last,
                     "reason": d["reason"] if d else None, "dump": d["dump"] if d else None,
                     "threads_in_mpi": len(inside), "waits_for": []})
        if d is None:
            continue
        if d.get("untracked_requests") or d.get("requests_live", 0) > len(d.get("requests", [])):
            untracked.add(r)
        for c in inside:
            if c.get("kind") in ("send", "recv", "sendrecv"):
                posted.add(r, c, c["kind"])
        for q in d.get("requests", []):
            if q.get("kind") in ("send", "recv"):
                posted.add(r, q, q["kind"])

    # collectives by communicator and place in its order
    world_colls = {r: d.get("world_collectives") for r, d in dumps.items()}
    in_coll: dict[Any, dict[int, dict[str, Any]]] = {}
    for r, c in calls.items():
        if c.get("kind") == "coll" and _ckey(c.get("comm")) is not None:
            in_coll.setdefault(_ckey(c.get("comm")), {})[r] = c
    # a mismatch is proven only by two ranks' dumps recording different operations at the
    # same place of one communicator's order of collectives: the calls they are inside
    # now, or were inside at any dump they kept (partial.py's history), or made on
    # MPI_COMM_WORLD (each dump's world_ops: its last 8 there)
    places: dict[tuple[Any, int], dict[tuple[str, Any], dict[int, bool]]] = {}
    comm_of: dict[Any, Any] = {}

    def record(r: int, c: dict[str, Any], now: bool) -> None:
        ck = _ckey(c.get("comm"))
        if c.get("kind") != "coll" or ck is None or not isinstance(c.get("coll_seq"), int):
            return
        comm_of.setdefault(ck, c.get("comm"))
        ranks = places.setdefault((ck, c["coll_seq"]), {}).setdefault(
            (c["function"], c.get("root")), {})
        ranks[r] = ranks.get(r, False) or now
    for r, c in calls.items():
        record(r, c, True)
    for r, hist in history.items():
        for h, _ in hist:
            for t in h["threads"]:
                if t.get("call"):
                    record(r, t["call"], False)
            for op in h.get("world_ops", []):  # the last collectives it made on world
                record(r, {**op, "kind": "coll", "comm": "world"}, False)
    mismatched: list[dict[str, Any]] = []
    for (ck, seq), ops in sorted(places.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if len(ops) > 1:
            mismatched.append({"comm": comm_label(comm_of[ck]), "coll_seq": seq, "groups": [
                {"function": fn, "root": root, "ranks": sorted(rs),
                 "earlier": sorted(x for x, now in rs.items() if not now)}
                for (fn, root), rs in sorted(ops.items(), key=lambda kv: min(kv[1]))]})
    proven = {(m["comm"], m["coll_seq"]) for m in mismatched}

    # ranks long inside a collective that every other member has made and left: they
    # may be stalled (stopped, descheduled) after their part was sent -- MPI lets the
    # others leave then -- so this proves no mismatch; it cannot tell why
    completed: list[dict[str, Any]] = []
    for ck, byrank in sorted(in_coll.items(), key=lambda kv: str(kv[0])):
        comm = next(iter(byrank.values())).get("comm")
        members = _members(comm, n) or []
        at_seq: dict[int, list[int]] = {}
        for r, c in byrank.items():
            if isinstance(c.get("coll_seq"), int):
                at_seq.setdefault(c["coll_seq"], []).append(r)
        for seq, rs in sorted(at_seq.items()):
            if (comm_label(comm), seq) in proven:
                continue
            if min(float(byrank[r].get("since_s") or 0) for r in rs) < SETTLED_S:
                continue
            rset = set(rs)
            others = [m for m in members if m not in rset]
            if not others or not all(_passed(m, ck, seq, in_coll, world_colls) for m in others):
                continue
            completed.append({"comm": comm_label(comm), "coll_seq": seq,
                              "function": sorted({byrank[r]["function"] for r in rs}),
                              "ranks": sorted(rs), "others": sorted(others)[:WAITS_SHOWN],
                              "others_n": len(others)})

    # what each blocked rank needs (need objects shared by the ranks of one collective)
    sh = _Shared(n, untracked)
    needs: dict[int, list[dict[str, Any]]] = {}
    never: dict[Any, dict[str, Any]] = {}
    coll_needs: dict[Any, list[dict[str, Any]]] = {}
    for r, c in calls.items():
        kind = c.get("kind")
        nd: list[dict[str, Any]] = []
        if kind in ("send", "recv", "sendrecv"):
            nd = _need_p2p(r, c, kind, posted, sh)
        elif kind == "wait":
            reqs = c.get("waits_on", [])
            sub: list[dict[str, Any]] = []
            complete = c.get("requests", len(reqs)) == len(reqs) and r not in untracked
            for q in reqs:
                if q.get("kind") in ("send", "recv"):
                    sub += _need_p2p(r, q, q["kind"], posted, sh)
                elif q.get("kind") == "coll":
                    sub.append({"any": False, "ranks": sh.of(q.get("comm")) or [],
                                "certain": False, "what": f"the other ranks of {q['function']}"})
            if c["function"] in _OR_WAITS:
                if sub and len(sub) == len(reqs):  # no request in flight: any one of them
                    nd = [{"any": True, "ranks": sorted({x for s in sub for x in s["ranks"]}),
                           "certain": complete and all(s["certain"] for s in sub),
                           "what": "any one of its requests"}]
            else:
                nd = [{**s, "certain": s["certain"] and complete} for s in sub]
        elif kind == "coll":
            nd = _need_coll(r, c, sh, in_coll, world_colls, rows, never, coll_needs)
        needs[r] = nd
        wf: list[int] = []
        for s in nd:
            for x in s["ranks"]:
                if x != r and x not in wf:
                    wf.append(x)
                if len(wf) > WAITS_SHOWN:
                    break
        rows[r]["waits_for"] = sorted(wf[:WAITS_SHOWN])
        rows[r]["waits_for_more"] = len(wf) > WAITS_SHOWN

    # the deadlocked: settled, every thread inside MPI, certain needs only ranks of the set meet
    settled = {r for r, c in calls.items()
               if rows[r]["state"] == "in_mpi" and float(c.get("since_s") or 0) >= SETTLED_S}
    sure = {r: [s for s in needs.get(r, []) if s["certain"] and s["ranks"]] for r in settled}
    dead = _greatest_dead({r for r in settled if all_in.get(r) and sure[r]}, sure)
    sample: dict[int, list[int]] = {}  # per need: a few of its ranks that are deadlocked
    for r in dead:
        for s in sure[r]:
            if id(s) not in sample:
                sample[id(s)] = [x for x in _first_in(s["ranks"], dead, 8)]
    cyc_edges = {r: {x for s in sure[r] for x in sample[id(s)]} for r in dead}
    cycles = _cycles(cyc_edges) if dead else []
    blockers = _blockers(rows, settled - dead, needs)

    # progress between each rank's last two dumps
    compared = sorted(r for r in prev if r in lines)
    moved = [r for r in compared if _total_calls(lines[r]) != _total_calls(prev[r][1])]
    progress = {"compared": compared, "moved": moved} if compared else None

    findings = _findings(rows, dumps, calls, needs, settled, dead, cycles, mismatched,
                         progress, n, part, blockers, completed)
    never_list = [{**v, "waiting": [{"function": fn, "ranks": sorted(rs)}
                                    for fn, rs in v["waiting"].items()],
                   "away": sorted(v["away"], key=lambda a: a["rank"])}
                  for _, v in sorted(never.items(), key=lambda kv: (kv[0][0] != "world",
                                                                     str(kv[0])))]
    return {"ranks": rows, "cycles": cycles, "deadlocked": sorted(dead),
            "mismatched": mismatched, "completed_by_others": completed,
            "never_arrived": never_list, "progress": progress,
            "missing": part.get("missing", []), "skipped": part.get("skipped", []),
            "settled_s": SETTLED_S, "verdict": findings[0], "findings": findings}


def _stale(dumps: dict[int, dict[str, Any]]) -> set[int]:
    """Ranks whose last dump says nothing about now: older than STALE_S before the newest,
    or not written for the terminating signal every other rank dumped for (a stopped
    rank cannot write one).  Their calls are not taken as current."""
    newest = max((float(d.get("elapsed_s", 0.0)) for d in dumps.values()), default=0.0)
    term = [float(d.get("elapsed_s", 0.0)) for d in dumps.values() if d["reason"] == "signal"
            and d.get("signal") not in ("SIGUSR1", "SIGUSR2")]
    first_term = min(term, default=None)
    out = set()
    for r, d in dumps.items():
        if d["reason"] in ("crash", "abort"):
            continue
        e = float(d.get("elapsed_s", 0.0))
        late = first_term is not None and d["reason"] != "signal" and e < first_term - 0.5
        if newest - e > STALE_S or late:
            out.add(r)
    return out


def _passed(m: int, ck: Any, seq: int, in_coll: dict[Any, dict[int, dict[str, Any]]],
            world_colls: dict[int, Any]) -> bool:
    """Rank m has made its collective number seq on ck and left it."""
    mc = in_coll.get(ck, {}).get(m)
    if mc is not None:
        return isinstance(mc.get("coll_seq"), int) and mc["coll_seq"] > seq
    wc = world_colls.get(m)
    return ck == "world" and isinstance(wc, int) and wc >= seq


def _need_coll(r: int, c: dict[str, Any], sh: _Shared,
               in_coll: dict[Any, dict[int, dict[str, Any]]], world_colls: dict[int, Any],
               rows: list[dict[str, Any]], never: dict[Any, dict[str, Any]],
               cache: dict[Any, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A collective's needs: the members that have neither arrived at it nor passed it
    (worked out once per communicator, place and operation; the need objects are shared
    by the ranks inside it)."""
    members = sh.of(c.get("comm"))
    ck = _ckey(c.get("comm"))
    if members is None or ck is None:
        return []
    seq = c.get("coll_seq")
    fn, root = c["function"], c.get("root")
    key = (ck, seq, fn, root)
    role = "root" if r == root else "other"
    if (key, role) in cache:
        e = never.get(key)
        if e is not None:
            e["waiting"].setdefault(fn, []).append(r)
        return cache[(key, role)]
    byrank = in_coll.get(ck, {})
    away: list[int] = []
    certain_away: list[int] = []
    for m in members:
        mc = byrank.get(m)
        if mc is not None:
            ms = mc.get("coll_seq")
            same = (mc["function"], mc.get("root")) == (fn, root)
            if isinstance(seq, int) and isinstance(ms, int):
                if ms > seq or ms == seq:
                    continue  # passed it, arrived, or a mismatch (reported as such)
                away.append(m)
                certain_away.append(m)
            elif not same:
                away.append(m)  # another collective, order not recorded
            continue
        wc = world_colls.get(m)
        if ck == "world" and isinstance(seq, int) and isinstance(wc, int):
            if wc >= seq:
                continue  # made this one already: passed
            away.append(m)
            certain_away.append(m)
        else:
            away.append(m)
    if away and key not in never:
        never[key] = {"comm": comm_label(c.get("comm")), "coll_seq": seq, "waiting": {fn: [r]},
                      "away": [{"rank": a, "state": rows[a]["state"], "call": rows[a]["call"]}
                               for a in away[:WAITS_SHOWN]], "away_n": len(away)}
    elif key in never:
        never[key]["waiting"].setdefault(fn, []).append(r)
    # whom the operation cannot complete without, on this rank
    if fn in _ROOT_SENDS and isinstance(root, int):
        if r == root:  # the root may finish once its data is out: no certain need
            strict, loose = [], away
        else:
            strict = [root] if root in certain_away else []
            loose = [root] if root in away else []
    elif fn in _ROOT_GETS and isinstance(root, int) and r != root:
        strict, loose = [], []  # may finish once its data is out
    else:
        strict, loose = certain_away, away
    out: list[dict[str, Any]] = []
    if strict:
        out.append({"any": False, "ranks": strict, "certain": True,
                    "what": f"{_ranks_word(strict[:WAITS_SHOWN])} to reach {fn}"})
    if len(loose) > len(strict):
        rest = [x for x in loose if x not in set(strict)]
        out.append({"any": False, "ranks": rest, "certain": False,
                    "what": f"{_ranks_word(rest[:WAITS_SHOWN])} to reach {fn}"})
    cache[(key, role)] = out
    return out


def _first_in(ranks: list[int], group: set[int], k: int) -> list[int]:
    out = []
    for x in ranks:
        if x in group:
            out.append(x)
            if len(out) == k:
                break
    return out


def _greatest_dead(cand: set[int], sure: dict[int, list[dict[str, Any]]]) -> set[int]:
    """The largest subset of cand in which every rank has a certain need that no rank
    outside it can meet (an AND need with one of its ranks inside, an OR need with all of
    them inside).  Linear: counters per need object, a rank leaves once all its needs are
    meetable, and that updates only the needs it is in."""
    objs: dict[int, dict[str, Any]] = {}
    holders: dict[int, list[int]] = {}
    for r in cand:
        for s in sure[r]:
            objs[id(s)] = s
            holders.setdefault(id(s), []).append(r)
    inside: dict[int, list[int]] = {}  # rank -> the needs listing it
    count: dict[int, int] = {}
    for i, s in objs.items():
        rs = set(s["ranks"])
        for x in rs:
            inside.setdefault(x, []).append(i)
        k = sum(1 for x in rs if x in cand)
        count[i] = k if not s["any"] else len(rs) - k  # AND: ranks inside; OR: outside

    def unmeetable(i: int) -> bool:
        return count[i] > 0 if not objs[i]["any"] else count[i] == 0

    left = {r: sum(1 for s in sure[r] if unmeetable(id(s))) for r in cand}
    dead = set(cand)
    todo = [r for r in cand if left[r] == 0]
    while todo:
        x = todo.pop()
        if x not in dead:
            continue
        dead.discard(x)
        for i in inside.get(x, ()):
            was = unmeetable(i)
            count[i] += -1 if not objs[i]["any"] else 1
            if was and not unmeetable(i):
                for h in holders[i]:
                    if h in dead:
                        left[h] -= 1
                        if left[h] == 0:
                            todo.append(h)
    return dead


_TERMINAL = ("no_dump", "stale", "stopped", "crashed", "aborted", "not_in_mpi")


def _blockers(rows: list[dict[str, Any]], waiting: set[int],
              needs: dict[int, list[dict[str, Any]]]) -> dict[tuple[int, ...], list[int]]:
    """Settled ranks that wait, directly or through other waiting ranks, for ranks outside
    MPI, without a dump, stopped or dead: {those ranks (a few): the waiting ranks}."""
    objs: dict[int, dict[str, Any]] = {}
    holders: dict[int, list[int]] = {}
    for r in waiting:
        for s in needs.get(r, []):
            objs[id(s)] = s
            holders.setdefault(id(s), []).append(r)
    label: dict[int, tuple[int, ...]] = {}
    todo: list[int] = []
    inside: dict[int, list[int]] = {}
    for i, s in objs.items():
        term = []
        for x in s["ranks"]:
            inside.setdefault(x, []).append(i)
            if rows[x]["state"] in _TERMINAL and len(term) < 8:
                term.append(x)
        if term:
            for h in holders[i]:
                if h not in label:
                    label[h] = tuple(sorted(term))
                    todo.append(h)
    seen: set[int] = set()
    while todo:  # through the waiting ranks: holders of needs listing a labelled rank
        x = todo.pop(0)
        for i in inside.get(x, ()):
            if i in seen:
                continue
            seen.add(i)
            for h in holders[i]:
                if h not in label:
                    label[h] = label[x]
                    todo.append(h)
    out: dict[tuple[int, ...], list[int]] = {}
    for h, t in sorted(label.items()):
        out.setdefault(t, []).append(h)
    return out


def _state_words(row: dict[str, Any], plural: bool = False) -> str:
    st = row["state"]
    last = f" (its last MPI call: {row['last_call']})" if row.get("last_call") and not plural \
        else ""
    if st == "stopped" and not plural:
        stop = row.get("stop") or {}
        return (f"was stopped from {_clock(stop.get('from', 0.0))} for "
                f"{fmt_time(stop.get('for_s', 0.0))} (its clock ran, its CPU time did not)")
    if plural:
        return {"no_dump": "left no dump (stopped, killed or ended before they could write one)",
                "stopped": "were stopped (their clocks ran, their CPU time did not)",
                "crashed": "crashed", "aborted": "called MPI_Abort",
                "stale": "stopped dumping (their last dumps are older than the others': "
                         "stopped or unresponsive)",
                "not_in_mpi": "are outside MPI (computing, or waiting outside MPI)"}[st]
    return {"no_dump": "left no dump (stopped, killed or ended before it could write one)",
            "crashed": "crashed", "aborted": "called MPI_Abort",
            "stale": "stopped dumping (its last dump is older than the others': stopped or "
                     "unresponsive)",
            "not_in_mpi": f"is outside MPI (computing, or waiting outside MPI){last}",
            "dumped_later": "had not dumped yet (its dumps came later)",
            }.get(st, f"is in {row['call']}")


def _findings(rows: list[dict[str, Any]], dumps: dict[int, dict[str, Any]],
              calls: dict[int, dict[str, Any]], needs: dict[int, list[dict[str, Any]]],
              settled: set[int], dead: set[int], cycles: list[list[int]],
              mismatched: list[dict[str, Any]], progress: dict[str, Any] | None, n: int,
              part: dict[str, Any], blockers: dict[tuple[int, ...], list[int]],
              completed: list[dict[str, Any]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    have = len(dumps)
    of = f"{have} of {n} ranks left a dump"
    for r in sorted(r for r, d in dumps.items() if d["reason"] == "abort"):
        d = dumps[r]
        c = calls.get(r) or {}
        where = comm_label(c.get("comm")) if c.get("function", "").startswith("MPI_Abort") else "?"
        last = rows[r]["last_call"]
        out.append({"kind": "aborted", "text":
                    f"aborted: rank {r} called MPI_Abort on {where} with error code "
                    f"{d.get('errorcode')}, {fmt_time(float(d.get('elapsed_s', 0.0)))} after "
                    f"MPI_Init" + (f" (its call before: {last})" if last else "") + f"; {of}",
                    "rests_on": f"rank {r}'s dump written by MPI_Abort's wrapper"})
    for r in sorted(r for r, d in dumps.items() if d["reason"] == "crash"):
        d = dumps[r]
        where = (f"inside {rows[r]['call']}" if r in calls else
                 f"outside MPI, its last MPI call {rows[r]['last_call']}" if rows[r]["last_call"]
                 else "outside MPI, before any MPI call")
        out.append({"kind": "crashed", "text":
                    f"crashed: rank {r} on {d.get('signal') or 'a fault'}, {where}; {of}",
                    "rests_on": f"rank {r}'s dump written by its fault handler"})
    for cyc in cycles:
        steps = [f"rank {a} in {rows[a]['call']}" for a in cyc[:-1]]
        unmatched = sorted({s["what"] for a in cyc[:-1] for s in needs[a]})
        shortest = min(float(calls[a].get("since_s") or 0) for a in cyc[:-1])
        others = sorted(set(dead) - set(cyc))
        out.append({"kind": "deadlock", "text":
                    "deadlock: " + " -> ".join(str(r) for r in cyc) + " (" + "; ".join(steps) +
                    "): none of them can be met -- missing: " + "; ".join(unmatched) +
                    f"; every call waiting for {fmt_time(shortest)} or more" +
                    (f"; {_ranks_word(others)} wait on them" if others else ""),
                    "short": "deadlock " + " -> ".join(str(r) for r in cyc),
                    "rests_on": "MPI's matching rules on the dumps' calls and requests, and "
                                f"calls inside for >= {fmt_time(SETTLED_S)}"})
    for m in mismatched:
        nth = _ordinal(m["coll_seq"])
        parts = []
        for g in m["groups"]:
            root = f" (root {g['root']})" if isinstance(g["root"], int) else ""
            now = [x for x in g["ranks"] if x not in set(g["earlier"])]
            where = [f"{_ranks_word(now)} in"] if now else []
            if g["earlier"]:
                where.append(f"{_ranks_word(g['earlier'])} made")
            parts.append(f"{', '.join(where)} {g['function']}{root}")
        out.append({"kind": "mismatch", "text":
                    f"mismatched collectives on {m['comm']}: " + ", ".join(parts) +
                    f" -- for each of them its {nth} collective on it",
                    "short": f"mismatched collectives on {m['comm']}",
                    "rests_on": "the operation each rank's dump records at one place of the "
                                "communicator's order of collectives"})
    # stuck on someone outside MPI, dead, or without a dump
    blocked = sorted(r for r in settled if r not in dead and needs.get(r))
    kinds = {"no_dump": "stuck_on_missing", "stale": "stuck_on_stopped",
             "stopped": "stuck_on_stopped",
             "crashed": "stuck_on_crashed", "aborted": "stuck_on_crashed",
             "not_in_mpi": "stuck_on_computing"}
    order = list(kinds)
    for term in sorted(blockers, key=lambda t: (min(order.index(rows[x]["state"]) for x in t), t)):
        waiting = blockers[term]
        longest = max(float(calls[w].get("since_s") or 0) for w in waiting)
        fns = sorted({rows[w]["function"] for w in waiting})
        first = min(term, key=lambda x: (order.index(rows[x]["state"]), x))
        states = {rows[x]["state"] for x in term}
        if len(term) == 1:
            what = f"rank {term[0]}, which {_state_words(rows[term[0]])}"
        elif len(states) == 1:
            what = f"{_ranks_word(list(term))}, which {_state_words(rows[term[0]], True)}"
        else:
            what = "; ".join(f"rank {x}, which {_state_words(rows[x])}" for x in term)
        out.append({"kind": kinds[rows[first]["state"]], "text":
                    f"stuck on {_ranks_word(list(term))}: {_ranks_word(waiting)} (in "
                    f"{', '.join(fns)}, up to {fmt_time(longest)}) wait, directly or through "
                    f"others, for {what}; {of}",
                    "short": f"stuck on {_ranks_word(list(term))}, which " +
                             "; ".join(sorted({_short_state(rows[x]) for x in term})),
                    "rests_on": "MPI's matching rules, calls inside for >= "
                                f"{fmt_time(SETTLED_S)}, and the dumps (or their absence) of "
                                f"{_ranks_word(list(term))}"})
    # ranks that say they were stopped (clock ran, CPU time did not), not named above
    named = {x for t in blockers for x in t if rows[x]["state"] == "stopped"}
    stopped = [r for r in range(n) if rows[r].get("stop") and r not in named]
    if stopped:
        top = max(stopped, key=lambda r: rows[r]["stop"]["for_s"])
        st = rows[top]["stop"]
        when = f"from {_clock(st['from'])} for {fmt_time(st['for_s'])}"
        last = rows[top]["last_call"]
        out.append({"kind": "stopped", "text":
                    (f"rank {top} was stopped {when}" if len(stopped) == 1 else
                     f"{_ranks_word(stopped)} were stopped (the longest: rank {top}, {when})")
                    + " -- its clock ran, its CPU time did not"
                    + (f" (its last MPI call: {last})" if last and len(stopped) == 1 else "")
                    + f"; {of}",
                    "short": f"{_ranks_word(stopped)} stopped",
                    "rests_on": "each rank's recorder: its 100 ms poll took that long while "
                                "the process used almost no CPU time"})
    for c in completed:
        since = min(float(calls[r].get("since_s") or 0) for r in c["ranks"])
        others = _ranks_word(c["others"]) + (" ..." if c["others_n"] > len(c["others"]) else "")
        fn = "/".join(c["function"])
        out.append({"kind": "stuck_in_completed", "text":
                    f"stuck in a collective the others completed: {_ranks_word(c['ranks'])} "
                    f"in {fn} on {c['comm']}, {_ordinal(c['coll_seq'])} collective on it, for "
                    f"{fmt_time(since)} or more, while {others} made it and went on (cannot "
                    "tell why: a member may leave once its part is sent)",
                    "short": f"{_ranks_word(c['ranks'])} stuck in {fn}, which the others "
                             "completed",
                    "rests_on": "each rank's count of collectives per communicator, and "
                                f"calls inside for >= {fmt_time(SETTLED_S)}"})
    if progress and progress["moved"]:
        out.append({"kind": "progressing", "text":
                    f"still progressing: {_ranks_word(progress['moved'])} completed MPI calls "
                    "between their last two dumps",
                    "rests_on": "the call counts of each rank's last two dumps"})
    labelled = {r for w in blockers.values() for r in w}
    active: dict[int, bool] = {}  # per need: one of its ranks is active (in MPI, not settled)

    def waits_on_active(r: int) -> bool:
        for s in needs.get(r, []):
            if id(s) not in active:
                active[id(s)] = any(x in calls and x not in settled for x in s["ranks"])
            if active[id(s)]:
                return True
        return False
    stuck_unknown = [r for r in blocked if r not in labelled and not waits_on_active(r)]
    inside = sorted(calls)
    if stuck_unknown and not any(f["kind"] in ("deadlock", "mismatch") for f in out):
        out.append({"kind": "stuck", "short": "ranks inside MPI without a proven cause", "text":
                    f"{_ranks_word(stuck_unknown)} inside MPI for {fmt_time(SETTLED_S)} or more "
                    "without a proven cause (a peer's state or a communicator could not be "
                    f"judged); {of}", "rests_on": "the calls' times in the dumps"})
    if part.get("missing") and not any(f["kind"].startswith("stuck_on") or
                                       f["kind"] in ("aborted", "crashed") for f in out):
        out.append({"kind": "missing", "text":
                    f"{_ranks_word(part['missing'])} left no dump; {of}",
                    "rests_on": "the partial directory's files"})
    if not out and inside:
        longest = max(float(calls[r].get("since_s") or 0) for r in inside)
        out.append({"kind": "communicating", "text":
                    f"no sign of a hang: {_ranks_word(inside)} inside MPI calls (the longest "
                    f"for {fmt_time(longest)}), each one matched by its peers, waiting for "
                    f"ranks that are active, or waiting for less than {fmt_time(SETTLED_S)}; "
                    f"{of}",
                    "rests_on": "MPI's matching rules and the calls' times in the dumps"})
    if progress and not progress["moved"] and not any(f["kind"] == "progressing" for f in out):
        out.append({"kind": "stuck" if not out else "no_progress", "text":
                    f"no MPI call completed between the last two dumps of "
                    f"{_ranks_word(progress['compared'])}",
                    "rests_on": "the call counts of each rank's last two dumps"})
    if not out:
        out.append({"kind": "none", "text": f"no rank is inside an MPI call; {of}",
                    "rests_on": "the dumps"})
    # stops the ranks' dumps report that ended well before (the rank ran on since): noted
    earlier = [r for r, d in sorted(dumps.items()) if d.get("stopped") and not rows[r].get("stop")]
    if earlier:
        top = max(earlier, key=lambda r: dumps[r]["stopped"][-1]["for_s"])
        st = dumps[top]["stopped"][-1]
        out.append({"kind": "stopped_earlier", "text":
                    f"{_ranks_word(earlier)} {'was' if len(earlier) == 1 else 'were'} stopped "
                    f"earlier and ran on (rank {top} from {_clock(st['from'])} for "
                    f"{fmt_time(st['for_s'])})",
                    "rests_on": "the stops each rank's recorder saw (its clock ran, its CPU "
                                "time did not)"})
    return [{**f, "short": f.get("short", f["kind"])} for f in out]


def _short_state(row: dict[str, Any]) -> str:
    st = row["state"]
    if st == "stopped":
        return f"was stopped for {fmt_time((row.get('stop') or {}).get('for_s', 0.0))}"
    return {"no_dump": "left no dump", "stale": "stopped dumping", "crashed": "crashed",
            "aborted": "called MPI_Abort", "not_in_mpi": "is outside MPI"}.get(st, st)
