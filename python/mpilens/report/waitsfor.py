"""Who waits for whom in a partial profile (docs/flight-recorder.md), and the verdict.

From each rank's last dump (partial.py): the call each rank is inside and the ranks it
waits for -
- a blocking send: its destination; a receive: its source (none for MPI_ANY_SOURCE);
  MPI_Sendrecv: both; MPI_Wait*: the peers of the requests it waits on;
- a collective: the members of its communicator that are not in the same collective
  (same function and root) on that communicator.
Then, in this order, the verdict:
- "progressing": some rank completed MPI calls between its last two dumps (rank-N.prev);
- "deadlock": a cycle of ranks each waiting for the next (the shortest through the
  lowest rank of every strongly connected group);
- "mismatch": ranks of one communicator inside different collectives;
- "never_arrived": ranks in a collective wait for members that are elsewhere (in
  another call, outside MPI, or without a dump);
- "stuck": blocked ranks without any of the above, "none": no rank is blocked.
Plain data: the terminal, JSON and HTML reports show the same.
"""

from __future__ import annotations

from typing import Any

from ..units import fmt_bytes, fmt_time
from .profile import Profile


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
    return f"rank{'s' if len(ranks) > 1 else ''} {ranges(ranks)}"


def _members(comm: Any, nranks: int) -> list[int] | None:
    if comm == "world":
        return list(range(nranks))
    if isinstance(comm, dict) and isinstance(comm.get("ranks"), list):
        return [int(r) for r in comm["ranks"] if isinstance(r, int) and r >= 0]
    return None


def comm_label(comm: Any) -> str:
    if comm == "world":
        return "MPI_COMM_WORLD"
    if isinstance(comm, dict):
        return f"the communicator of ranks {ranges(comm.get('ranks', []))}"
    return "an unknown communicator"


def _peer(v: Any) -> str:
    return str(v) if isinstance(v, int) else {"any": "any source"}.get(str(v), str(v))


def _peers_of(obj: dict[str, Any]) -> list[int]:
    return [v for k in ("dest", "source") if isinstance(v := obj.get(k), int)]


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
        what = "; ".join(describe({**q, "kind": q.get("kind")}) for q in reqs[:4])
        more = f"; {len(reqs) - 4} more" if len(reqs) > 4 else ""
        return f"{fn} on {call.get('requests', len(reqs))} request(s)" + (f": {what}{more}" if what else "")
    return fn


def _coll_key(call: dict[str, Any]) -> tuple[str, Any]:
    return (call["function"], call.get("root"))


def _total_calls(line: dict[str, Any]) -> int:
    return sum(int(f.get("calls", 0)) for f in line["functions"].values())


def _cycles(edges: dict[int, set[int]]) -> list[list[int]]:
    """The shortest cycle through the lowest rank of each strongly connected group."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    groups: list[list[int]] = []
    counter = [0]

    def strong(v: int) -> None:  # Tarjan (ranks are few: recursion is fine)
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            g = []
            while True:
                w = stack.pop()
                on.discard(w)
                g.append(w)
                if w == v:
                    break
            groups.append(sorted(g))

    for v in sorted(edges):
        if v not in index:
            strong(v)
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


def analyse(prof: Profile) -> dict[str, Any]:
    part = prof.partial or {}
    n = prof.nranks
    dumps: dict[int, dict[str, Any]] = part.get("dumps", {})
    calls: dict[int, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for r in range(n):
        d = dumps.get(r)
        inside = [t["call"] for t in d["threads"] if t.get("call")] if d else []
        if inside:
            calls[r] = inside[0]
        rows.append({"rank": r, "state": "no_dump" if d is None else
                     "in_mpi" if inside else "not_in_mpi",
                     "function": inside[0]["function"] if inside else None,
                     "call": describe(inside[0]) if inside else None,
                     "since_s": inside[0].get("since_s") if inside else None,
                     "reason": d["reason"] if d else None, "dump": d["dump"] if d else None,
                     "threads_in_mpi": len(inside), "waits_for": []})

    # collectives, grouped by communicator
    by_comm: dict[tuple[int, ...], dict[str, Any]] = {}
    for r, c in calls.items():
        if c.get("kind") != "coll":
            continue
        members = _members(c.get("comm"), n)
        if members is None:
            continue
        e = by_comm.setdefault(tuple(members), {"comm": c.get("comm"), "groups": {}})
        e["groups"].setdefault(_coll_key(c), []).append(r)

    edges: dict[int, set[int]] = {}
    cyc_edges: dict[int, set[int]] = {}  # without a collective's waits for ranks in another one
    for r, c in calls.items():
        kind = c.get("kind")
        w: set[int] = set()
        other: set[int] = set()
        if kind in ("send", "recv", "sendrecv"):
            w = set(_peers_of(c))
        elif kind == "wait":
            for q in c.get("waits_on", []):
                if q.get("kind") == "coll":
                    w |= set(_members(q.get("comm"), n) or [])
                else:
                    w |= set(_peers_of(q))
        elif kind == "coll":
            members = _members(c.get("comm"), n)
            if members is not None:
                groups = by_comm[tuple(members)]["groups"]
                w = set(members) - set(groups[_coll_key(c)])
                other = {x for k, rs in groups.items() if k != _coll_key(c) for x in rs}
        w.discard(r)
        w = {x for x in w if 0 <= x < n}
        if w:
            edges[r] = w
            cyc_edges[r] = w - other
            rows[r]["waits_for"] = sorted(w)

    cycles = _cycles(cyc_edges)
    mismatched, never = [], []
    for members, e in sorted(by_comm.items()):
        groups = sorted(([fn, root, sorted(rs)] for (fn, root), rs in e["groups"].items()),
                        key=lambda g: g[2])
        if len(groups) > 1:
            mismatched.append({"comm": comm_label(e["comm"]),
                               "groups": [{"function": fn, "root": root, "ranks": rs}
                                          for fn, root, rs in groups]})
        arrived = {r for g in groups for r in g[2]}
        away = [r for r in members if r not in arrived]
        if away:
            never.append({"comm": comm_label(e["comm"]),
                          "waiting": [{"function": fn, "ranks": rs} for fn, _, rs in groups],
                          "away": [{"rank": r, "state": rows[r]["state"], "call": rows[r]["call"]}
                                   for r in away]})

    # progress between each rank's last two dumps
    prev = part.get("prev", {})
    lines = part.get("rank_lines", {})
    compared = sorted(r for r in prev if r in lines)
    moved = [r for r in compared if _total_calls(lines[r]) != _total_calls(prev[r][1])]
    progress = {"compared": compared, "moved": moved} if compared else None

    findings: list[dict[str, str]] = []
    if moved:
        findings.append({"kind": "progressing", "text":
                         f"still progressing: {_ranks_word(moved)} completed MPI calls between "
                         "their last two dumps"})
    for cyc in cycles:
        steps = []
        for a in cyc[:-1]:
            steps.append(f"rank {a} in {rows[a]['call']}")
        findings.append({"kind": "deadlock", "text":
                         "deadlock: " + " -> ".join(str(r) for r in cyc) + " (" + "; ".join(steps) + ")"})
    for m in mismatched:
        parts = []
        for g in m["groups"]:
            root = f" (root {g['root']})" if isinstance(g["root"], int) else ""
            parts.append(f"{_ranks_word(g['ranks'])} in {g['function']}{root}")
        findings.append({"kind": "mismatch", "text":
                         f"mismatched collectives on {m['comm']}: " + ", ".join(parts)})
    for nv in never:
        waiting = ", ".join(f"{_ranks_word(g['ranks'])} in {g['function']}" for g in nv["waiting"])
        away = "; ".join(f"rank {a['rank']} " + (
            "has no dump" if a["state"] == "no_dump" else "is not inside MPI" if
            a["state"] == "not_in_mpi" else f"is in {a['call']}") for a in nv["away"])
        findings.append({"kind": "never_arrived", "text":
                         f"never arrived on {nv['comm']}: {waiting} wait; {away}"})
    if progress and not moved:
        findings.append({"kind": "stuck", "text":
                         f"no MPI call completed between the last two dumps of "
                         f"{_ranks_word(compared)}"})
    blocked = [r for r in range(n) if rows[r]["state"] == "in_mpi"]
    if not findings:
        findings.append({"kind": "stuck" if blocked else "none", "text":
                         (f"{_ranks_word(blocked)} inside MPI, longest for "
                          f"{fmt_time(max(rows[r]['since_s'] or 0 for r in blocked))}; "
                          "no cycle, mismatch or missing rank found") if blocked else
                         "no rank is inside an MPI call"})
    return {"ranks": rows, "cycles": cycles, "mismatched": mismatched, "never_arrived": never,
            "progress": progress, "missing": part.get("missing", []),
            "verdict": findings[0], "findings": findings}
