"""Export to the LLNL performance-analysis stack: the call sites as a Hatchet GraphFrame.

`graphframe(profile)` builds a calling-context tree from the call sites' stacks
(outermost frame at the root, the MPI call a leaf below its innermost frame): one
node per function (name and file) under the same parent, so that sites sharing
their outer frames share those nodes, and one leaf per MPI call site (the MPI
function with the file and line of the call).  Metrics, summed over ranks (job totals):
`time` (exclusive: the MPI time of the call sites ending at the node, in seconds),
`time (inc)` (the node and everything below it), `calls`, `bytes_sent`,
`bytes_recv`.  Frame attributes: `name`, `type` ("function" for the program's
frames, "mpi" for the MPI call), `file`, `line`.  `thicket(profiles)` composes
several runs' GraphFrames into one Thicket.

Needs llnl-hatchet, and llnl-thicket for `thicket` (`pip install llnl-hatchet llnl-thicket`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .report import callsites

if TYPE_CHECKING:
    from .api import Profile

METRICS = ("time", "calls", "bytes_sent", "bytes_recv")


def _node(frame: dict[str, Any], kind: str) -> dict[str, Any]:
    return {"frame": frame | {"type": kind}, "metrics": dict.fromkeys(METRICS, 0),
            "children": {}}


def _literal(node: dict[str, Any]) -> dict[str, Any]:
    """A node of the tree below as Hatchet's literal format, with inclusive time."""
    kids = [_literal(c) for c in node["children"].values()]
    metrics = dict(node["metrics"])
    metrics["time (inc)"] = metrics["time"] + sum(k["metrics"]["time (inc)"] for k in kids)
    out: dict[str, Any] = {"frame": node["frame"], "metrics": metrics}
    if kids:
        out["children"] = kids
    return out


def literal(profile: Profile) -> list[dict[str, Any]]:
    """The call sites' tree in Hatchet's literal format (GraphFrame.from_literal)."""
    roots: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in callsites.callsite_rows(profile.raw):
        level = roots
        for f in reversed(r["frames"]):  # outermost first; a function is one node
            name = f["function"] or callsites.location(f)
            key = (name, f["file"] or f["module"])
            if key not in level:
                level[key] = _node({"name": name, "file": f["file"] or f["module"]},
                                   "function")
            level = level[key]["children"]
        inner = r["frames"][0] if r["frames"] else {"file": None, "line": None, "module": ""}
        key = (r["function"], inner["file"] or inner["module"], inner["line"])
        if key not in level:  # the MPI call, at its source line
            level[key] = _node({"name": r["function"], "file": inner["file"] or inner["module"],
                                "line": inner["line"] or 0}, "mpi")
        m = level[key]["metrics"]
        m["time"] += r["time_s"]
        m["calls"] += r["calls"]
        m["bytes_sent"] += r["bytes_sent"]
        m["bytes_recv"] += r["bytes_recv"]
    return [_literal(n) for n in roots.values()]


def graphframe(profile: Profile) -> Any:
    """The call sites as a hatchet.GraphFrame (module docstring)."""
    try:
        import hatchet
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"the Hatchet export needs llnl-hatchet: "
                                  f"{sys.executable} -m pip install llnl-hatchet") from None
    tree = literal(profile)
    if not tree:
        raise ValueError(f"{profile.path}: the profile has no call sites (written with "
                         "MPILENS_CALLSITES=0, MPILENS_DETAIL=off or by a version 1 mpilens)")
    return hatchet.GraphFrame.from_literal(tree)


def thicket(profiles: list[Profile]) -> Any:
    """Several runs' call sites as one thicket.Thicket (llnl-thicket): each profile's
    GraphFrame, keyed by its path (Thicket's `profile_mapping`), their call trees
    unioned (Thicket.concat_thickets)."""
    try:
        import thicket as th
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"composing runs needs llnl-thicket: "
                                  f"{sys.executable} -m pip install llnl-thicket") from None
    names = [str(p.path) for p in profiles]
    if len(set(names)) != len(names):
        raise ValueError(f"thicket: a profile given twice ({', '.join(names)})")
    parts = [th.Thicket.thicketize_graphframe(graphframe(p), str(p.path)) for p in profiles]
    return th.Thicket.concat_thickets(parts, disable_tqdm=True)
