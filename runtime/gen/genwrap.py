#!/usr/bin/env python3
"""Generate libmpilens wrappers for exactly the functions the target MPI declares.

C bindings: every `MPI_Xxx` function declared in the preprocessed `mpi.h` of the
MPI compiler wrapper (`--cc`) that also has a `PMPI_Xxx` declaration and is not
a macro (MPI-4 large-count `_c` variants included where declared).

Fortran bindings (`mpif.h` / `use mpi`): every procedure of the MPI Forum's API
description (pympistandard) that the MPI's Fortran library exports as
`pmpi_xxx_`; each wrapper is exported under the four common manglings
(mpi_xxx_, mpi_xxx__, mpi_xxx, MPI_XXX) and passes its arguments through
unchanged (hidden CHARACTER lengths included) to the MPI's own `pmpi_xxx_`.

What a call means (bytes, peers, requests) is derived from the standard
parameter names (IPM-style semantic tags), so one template serves every
function of a family.  Outputs: ml_funcs.h, ml_funcs.c, wrap_c.c, wrap_f.c.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    import pympistandard
    STD_PATH = Path(pympistandard.__file__).parent / "data" / "apis.json"
except ImportError:  # pragma: no cover - reported below
    STD_PATH = None


# ----------------------------------------------------------------------------
# Parsing the preprocessed mpi.h


@dataclass
class Param:
    text: str          # declaration as written (type + name + array suffix)
    name: str
    ctype: str         # type without name (array suffix -> pointer)


@dataclass
class CFunc:
    name: str
    ret: str
    params: list[Param]
    varargs: bool = False
    std: list[str] = field(default_factory=list)  # standard parameter names


def run(cmd: list[str], stdin: str | None = None) -> str:
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"genwrap: {' '.join(cmd)} failed:\n{r.stderr}")
    return r.stdout


def strip_attributes(s: str) -> str:
    out = []
    i = 0
    while True:
        j = s.find("__attribute__", i)
        if j < 0:
            out.append(s[i:])
            break
        out.append(s[i:j])
        k = s.index("(", j)
        depth = 0
        while True:
            if s[k] == "(":
                depth += 1
            elif s[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1
    return "".join(out)


def split_top(s: str, sep: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


DECL = re.compile(r"^(?:extern\s+)?(?P<ret>[A-Za-z_][\w\s\*]*?)\s*(?P<ptr>\**)\s*\b(?P<name>P?MPI_\w+)\s*\((?P<args>.*)\)$", re.DOTALL)


def parse_param(text: str, idx: int) -> Param:
    t = " ".join(text.split())
    m = re.match(r"^(?P<type>.*?)(?P<name>\b[A-Za-z_]\w*)\s*(?P<arr>(\[[^\]]*\]\s*)*)$", t)
    keywords = {"int", "char", "void", "double", "float", "long", "short", "unsigned", "const"}
    if not m or m.group("name") in keywords or m.group("name").startswith("MPI_") and not m.group("type").strip():
        name = f"a{idx}"
        return Param(text=f"{t} {name}", name=name, ctype=t)
    ctype = m.group("type").strip()
    if not ctype:  # only a type name, e.g. "MPI_Comm"
        name = f"a{idx}"
        return Param(text=f"{t} {name}", name=name, ctype=t)
    arr = m.group("arr").strip()
    if arr:
        dims = re.findall(r"\[[^\]]*\]", arr)
        ctype = ctype + " *" + ("(*)" + "".join(dims[1:]) if len(dims) > 1 else "")
    return Param(text=t, name=m.group("name"), ctype=ctype)


def parse_mpi_h(cc: str) -> tuple[dict[str, CFunc], set[str], str]:
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "t.c"
        src.write_text("#include <mpi.h>\n")
        pre = run([cc, "-E", str(src)])
        macros = run([cc, "-E", "-dM", str(src)])
    macro_names = set(re.findall(r"^#define\s+(\w+)", macros, re.MULTILINE))
    text = "\n".join(ln for ln in pre.splitlines() if not ln.startswith("#"))
    text = strip_attributes(text)
    funcs: dict[str, CFunc] = {}
    for stmt in split_top(text, ";"):
        stmt = " ".join(stmt.split())
        if "MPI_" not in stmt or stmt.startswith("typedef") or "{" in stmt:
            continue
        m = DECL.match(stmt)
        if not m:
            continue
        name = m.group("name")
        ret = (m.group("ret") + " " + m.group("ptr")).strip()
        ret = re.sub(r"^(extern|static|inline)\s+", "", ret)
        args = m.group("args").strip()
        params: list[Param] = []
        varargs = False
        if args and args != "void":
            for i, a in enumerate(split_top(args, ",")):
                a = a.strip()
                if a == "...":
                    varargs = True
                    continue
                params.append(parse_param(a, i))
        funcs[name] = CFunc(name=name, ret=ret, params=params, varargs=varargs)
    return funcs, macro_names, pre


# ----------------------------------------------------------------------------
# Semantic families (by function base name; parameters found by standard name)

P2P_SEND = {"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend"}
P2P_SEND_INIT = {"Send_init", "Bsend_init", "Ssend_init", "Rsend_init"}
COLL_SHAPE = {
    "Bcast": "ML_BCAST", "Reduce": "ML_REDUCE", "Allreduce": "ML_ALLREDUCE",
    "Scan": "ML_SCAN", "Exscan": "ML_SCAN", "Reduce_scatter_block": "ML_RSB",
    "Reduce_scatter": "ML_RS", "Gather": "ML_GATHER", "Gatherv": "ML_GATHER",
    "Scatter": "ML_SCATTER", "Scatterv": "ML_SCATTER", "Allgather": "ML_ALLGATHER",
    "Allgatherv": "ML_ALLGATHER", "Alltoall": "ML_ALLTOALL", "Alltoallv": "ML_ALLTOALL",
    "Alltoallw": "ML_ALLTOALL", "Neighbor_allgather": "ML_NALLGATHER",
    "Neighbor_allgatherv": "ML_NALLGATHER", "Neighbor_alltoall": "ML_NALLTOALL",
    "Neighbor_alltoallv": "ML_NALLTOALL", "Neighbor_alltoallw": "ML_NALLTOALL",
}
RMA_SEND = {"Put", "Rput", "Accumulate", "Raccumulate"}
RMA_GET = {"Get", "Rget"}
RMA_BOTH = {"Get_accumulate", "Rget_accumulate", "Fetch_and_op", "Compare_and_swap"}
IO_RE = re.compile(r"^File_(i?)(write|read)(_at|_shared|_ordered)?(_all)?(_begin)?$")
COMPLETE = {"Wait", "Test", "Waitany", "Testany", "Waitall", "Testall", "Waitsome", "Testsome"}
TOPO_CREATE = {"Cart_create": "comm_cart", "Graph_create": "comm_graph",
               "Dist_graph_create": "comm_dist_graph", "Dist_graph_create_adjacent": "comm_dist_graph"}


TL_CLASSES = ("ML_TL_P2P", "ML_TL_COLL", "ML_TL_RMA", "ML_TL_IO", "ML_TL_OTHER")


def tl_class(name: str) -> int:
    """Time-line class of an MPI function, by name (runtime/core/timeline.c): 0 p2p,
    1 coll, 2 rma, 3 io, 4 other."""
    def has(words: tuple[str, ...]) -> bool:
        return any(w in name[4:] for w in words)
    p2p = ("send", "recv", "Send", "Recv", "Wait", "Test", "Probe", "probe", "Start", "Cancel", "Request")
    coll = ("Barrier", "barrier", "Bcast", "bcast", "Reduce", "reduce", "Gather", "gather", "Scatter",
            "scatter", "Alltoall", "alltoall", "Scan", "scan", "Neighbor_")
    rma = ("Put", "Get", "Rput", "Rget", "Accumulate", "accumulate", "Fetch_and_op", "Compare_and_swap", "Win_")
    # MPI_Get_ names that are not one-sided (MPI_Get_accumulate and the large-count MPI_Get_c are)
    not_rma = ("MPI_Get_count", "MPI_Get_elements", "MPI_Get_address", "MPI_Get_version",
               "MPI_Get_library_version", "MPI_Get_processor_name", "MPI_Get_hw_resource_info")
    if not name.startswith("MPI_"):
        return 4
    if name.startswith("MPI_File_"):
        return 3
    if (name.startswith("MPI_Win_") or has(rma)) and not any(name.startswith(x) for x in not_rma):
        return 2
    if has(coll) and "Reduce_local" not in name and not name.startswith("MPI_Op"):
        return 1
    if has(p2p) and "_c2f" not in name and "_f2c" not in name:
        return 0
    return 4


def base_of(name: str) -> str:
    b = name[4:]  # strip MPI_
    if b.endswith("_c") and b[:-2]:
        b = b[:-2]
    return b


def coll_base(b: str) -> str | None:
    """Collective base name for blocking, I-nonblocking and _init persistent forms."""
    for cand in (b, b[1:2].upper() + b[2:] if b.startswith("I") else None,
                 b[:-5] if b.endswith("_init") else None):
        if cand and cand in COLL_SHAPE:
            return cand
    return None


class Binding:
    """How to express a parameter role as a C value, in C or in Fortran."""

    lang = "c"

    def __init__(self, names: list[str], cnames: list[str] | None = None):
        self.names = names              # standard names, by position
        self.cnames = cnames or names   # identifiers used in the wrapper

    def has(self, n: str) -> bool:
        return n in self.names

    def raw(self, n: str) -> str:
        return self.cnames[self.names.index(n)]

    def count(self, n: str) -> str:
        return f"(int64_t)({self.raw(n)})"

    def int_(self, n: str) -> str:
        return self.raw(n)

    def dtype(self, n: str) -> str:
        return self.raw(n)

    def comm(self, n: str) -> str:
        return self.raw(n)

    def win(self, n: str) -> str:
        return self.raw(n)

    def ref(self, n: str) -> str:
        """A handle passed by reference (MPI_Comm *comm): its value."""
        return f"*{self.raw(n)}"

    def buf(self, n: str) -> str:
        return f"(const void *)({self.raw(n)})"

    def arr(self, n: str) -> str:
        return f"(const void *)({self.raw(n)})"


class FBinding(Binding):
    lang = "f"

    def count(self, n: str) -> str:
        return f"(int64_t)*(const MPI_Fint *)({self.raw(n)})"

    def int_(self, n: str) -> str:
        return f"(int)*(const MPI_Fint *)({self.raw(n)})"

    def dtype(self, n: str) -> str:
        return f"PMPI_Type_f2c(*(const MPI_Fint *)({self.raw(n)}))"

    def comm(self, n: str) -> str:
        return f"PMPI_Comm_f2c(*(const MPI_Fint *)({self.raw(n)}))"

    def win(self, n: str) -> str:
        return f"PMPI_Win_f2c(*(const MPI_Fint *)({self.raw(n)}))"

    def buf(self, n: str) -> str:
        return f"ml_fbuf({self.raw(n)})"

    def ref(self, n: str) -> str:
        return self.raw(n)


@dataclass
class Plan:
    pre: list[str] = field(default_factory=list)    # before the call (may rebind args)
    post: list[str] = field(default_factory=list)   # after a successful call, when recording
    subst: dict[str, str] = field(default_factory=dict)   # argument replacements in the call
    kind: str = "time"
    fl: str = ""    # the in-flight hook's arguments (fl_args; runtime/core/flight.h)
    onpre: list[str] = field(default_factory=list)  # before the call, when recording (S set)
    decl: list[str] = field(default_factory=list)   # locals the onpre lines set
    comm: str = ""  # C: the call's communicator argument (a plain MPI_Comm), for the in-flight state
    local_cb: bool = False  # the call's bytes in a local _cb (its helpers are all inline), not ml_thr.cb


def status_plan(b: Binding, plan: Plan, name: str = "status") -> str:
    """Make sure a status is available after the call; returns a C expression of type MPI_Status*."""
    raw = b.raw(name)
    if b.lang == "c":
        plan.pre.append("MPI_Status _stl;")
        plan.pre.append(f"MPI_Status *_st = ({raw} == MPI_STATUS_IGNORE) ? &_stl : {raw};")
        plan.subst[name] = "_st"
        return "_st"
    plan.pre.append("MPI_Fint _fstl[ML_F_STATUS_SIZE];")
    plan.pre.append(f"MPI_Fint *_fst = ((void *)({raw}) == ml_f_status_ignore) ? _fstl : (MPI_Fint *)({raw});")
    plan.subst[name] = "_fst"
    plan.post.append("MPI_Status _st; PMPI_Status_f2c(_fst, &_st);")
    return "&_st"


def fl_args(kind: str, b: Binding, peer: str = "", tag: str = "", count: str = "",
            peer2: str = "", tag2: str = "", rq: str = "NULL", nrq: str = "0") -> str:
    """ml_fl_in's arguments after (S, FID): what the thread is inside (standard parameter
    names of the peer, tag, count and datatype; absent ones are left out)."""
    def arg(n: str, conv: str, none: str) -> str:
        return getattr(b, conv)(n) if n and b.has(n) else none
    dt = "sendtype" if count == "sendcount" else "datatype"
    nbytes = f"ml_fl_bytes({b.count(count)}, {b.dtype(dt)})" if count and b.has(count) and b.has(dt) else "0"
    comm = arg('comm', 'comm', 'MPI_COMM_NULL')

    def wpeer(n: str) -> str:  # the world rank (or ML_FL_*) of a peer argument
        if n.startswith("_"):
            return n  # computed once before (the wrapper's local)
        return f"ml_fl_peer({comm}, {b.int_(n)})" if n and b.has(n) else "ML_FL_NONE"
    if count == "_nb":
        nbytes = "_nb"
    return (f"ML_FL_{kind}, {comm}, {wpeer(peer)}, "
            f"{arg(tag, 'int_', '-1')}, {nbytes}, {wpeer(peer2)}, "
            f"{arg(tag2, 'int_', '-1')}, {rq}, {nrq}")


COMM_MAKERS = {  # base name -> (kind, parent parameter, new communicator parameter)
    "Comm_dup": ("dup", "comm", "newcomm"), "Comm_dup_with_info": ("dup", "comm", "newcomm"),
    "Comm_idup": ("idup", "comm", "newcomm"), "Comm_idup_with_info": ("idup", "comm", "newcomm"),
    "Comm_split": ("split", "comm", "newcomm"), "Comm_split_type": ("split_type", "comm", "newcomm"),
    "Comm_create": ("create", "comm", "newcomm"), "Comm_create_group": ("create", "comm", "newcomm"),
    "Comm_create_from_group": ("create", None, "newcomm"), "Cart_sub": ("cart_sub", "comm", "newcomm"),
    "Cart_create": ("cart", "comm_old", "comm_cart"), "Graph_create": ("graph", "comm_old", "comm_graph"),
    "Dist_graph_create": ("dist_graph", "comm_old", "comm_dist_graph"),
    "Dist_graph_create_adjacent": ("dist_graph", "comm_old", "comm_dist_graph"),
    "Intercomm_create": ("intercomm", "local_comm", "newintercomm"),
    "Intercomm_create_from_groups": ("intercomm", None, "newintercomm"),
    "Intercomm_merge": ("merge", "intercomm", "newintracomm"),
    "Comm_accept": ("accept", "comm", "newcomm"), "Comm_connect": ("connect", "comm", "newcomm"),
    "Comm_spawn": ("spawn", "comm", "intercomm"), "Comm_spawn_multiple": ("spawn", "comm", "intercomm"),
    "Comm_join": ("join", None, "intercomm"), "Comm_get_parent": ("parent", None, "parent"),
}


def comm_plan(base: str, b: Binding, p: Plan) -> None:
    """Per-communicator records (runtime/core/comms.c): the call's communicator, the
    communicators the call makes, the ones it frees."""
    if base in ("Comm_free", "Comm_disconnect"):
        p.pre.append(f"ml_comm_freeing({b.comm('comm') if b.lang == 'f' else b.ref('comm')});")
        return
    if base == "Comm_set_name" and b.has("comm"):
        p.post.append(f"ml_comm_named({b.comm('comm')});")  # the record's copy of the name
    mk = COMM_MAKERS.get(base)
    if mk and b.has(mk[2]):
        kind, parent, new = mk
        newc = b.comm(new) if b.lang == "f" else b.ref(new)
        par = b.comm(parent) if parent and b.has(parent) else "MPI_COMM_NULL"
        p.post.append(f'ml_comm_created({newc}, {par}, "{kind}");')
    arg = "comm" if b.has("comm") else "comm_old" if b.has("comm_old") else None
    if arg and (mk is None or mk[2] != arg) and not base.endswith(("_f2c", "_c2f", "_toint", "_fromint")):
        p.post.insert(0, f"_hc = {b.comm(arg)};")  # the call's communicator (callend.h)
        if b.lang == "c":
            p.comm = b.comm(arg)


def plan_for(fname: str, b: Binding) -> Plan:
    p = Plan()
    base = base_of(fname)
    comm_plan(base, b, p)
    F = "FID"
    if base in ("Probe", "Iprobe", "Mprobe", "Improbe"):
        p.fl = fl_args("RECV", b, "source", "tag")
    if base in ("Barrier", "Ibarrier", "Barrier_init"):
        p.fl = fl_args("COLL", b)
        if base == "Ibarrier":
            p.post.append(f"if (ML_FL_ON) ml_req_track_in(S, _sh, {creq_of(b)}, {F}, ML_RQ_COLL, {b.comm('comm')}, 0, ML_NOPEER);")
        return p
    if base == "Abort":  # the rank's partial profile before the abort goes on (flight.c)
        p.pre.append(f"ml_flight_abort(FID, {b.comm('comm')}, {b.int_('errorcode')});")
        return p
    # --- point-to-point sends
    if base in P2P_SEND:
        p.kind = "send"
        # size and world peer once, before the call: for the in-flight state and the records
        p.decl.append("int64_t _nb = 0; int _wp = ML_FL_NONE;")
        p.onpre.append(f"_nb = ml_fl_bytes({b.count('count')}, {b.dtype('datatype')}); "
                       f"_wp = ml_fl_peer({b.comm('comm')}, {b.int_('dest')});")
        p.fl = fl_args("SEND", b, "_wp", "tag", "_nb")
        p.local_cb = True
        p.post.append(f"if ({b.int_('dest')} != MPI_PROC_NULL) ml_p2p_sent(S, &_cb, tm, DI, (uint64_t)_nb, _wp);")
        if base.startswith("I"):
            p.post.append(f"if (ML_FL_ON) ml_req_track_in(S, _sh, {creq_of(b)}, {F}, ML_RQ_SEND, {b.comm('comm')}, _nb, _wp);")
        return p
    if base in P2P_SEND_INIT:
        p.kind = "send_init"
        p.fl = fl_args("SEND", b, "dest", "tag", "count")
        req = b.raw("request")
        creq = f"PMPI_Request_f2c(*(MPI_Fint *)({req}))" if b.lang == "f" else f"*{req}"
        p.post.append(
            f"ml_req_track_in(S, _sh, {creq}, {F}, ML_RQ_PSEND | ML_RQ_PERSIST, "
            f"{b.comm('comm')}, {b.count('count')} * ml_type_size({b.dtype('datatype')}), "
            f"ml_peer_world({b.comm('comm')}, {b.int_('dest')}));")
        return p
    if base in ("Recv", "Mrecv", "Irecv", "Imrecv", "Recv_init"):
        p.fl = fl_args("RECV", b, "source", "tag", "count")
    if base in ("Recv", "Mrecv"):
        p.kind = "recv"
        st = status_plan(b, p)
        comm = b.comm("comm") if b.has("comm") else "MPI_COMM_NULL"
        p.local_cb = True
        p.post.append(f"ml_p2p_recv_d(S, &_cb, tm != ML_TM_OFF, DI, {comm}, {st});")
        return p
    if base in ("Irecv", "Imrecv", "Recv_init"):
        p.kind = "irecv"
        req = b.raw("request")
        creq = f"PMPI_Request_f2c(*(MPI_Fint *)({req}))" if b.lang == "f" else f"*{req}"
        comm = b.comm("comm") if b.has("comm") else "MPI_COMM_NULL"
        flags = "ML_RQ_RECV | ML_RQ_PERSIST" if base == "Recv_init" else "ML_RQ_RECV"
        # from MPI_PROC_NULL nothing arrives (MPICH 4.0 returns one shared request for all
        # such receives, and Waitall gives its second status source 0: not tracked)
        track = f"ml_req_track_in(S, _sh, {creq}, {F}, {flags}, {comm}, 0, ML_NOPEER);"
        if b.has("source"):
            track = f"if ({b.int_('source')} != MPI_PROC_NULL) {track}"
        p.post.append(track)
        return p
    if base in ("Sendrecv", "Sendrecv_replace", "Isendrecv", "Isendrecv_replace"):
        cnt = "sendcount" if b.has("sendcount") else "count"
        p.fl = fl_args("SENDRECV", b, "dest", "sendtag", cnt, "source", "recvtag")
    if base in ("Sendrecv", "Sendrecv_replace"):
        p.kind = "sendrecv"
        cnt, dt = ("sendcount", "sendtype") if b.has("sendcount") else ("count", "datatype")
        st = status_plan(b, p)
        p.post.append(f"ml_p2p_send(S, {F}, {b.count(cnt)}, {b.dtype(dt)}, {b.int_('dest')}, {b.comm('comm')});")
        p.post.append(f"ml_p2p_recv(S, {F}, {b.comm('comm')}, {st});")
        return p
    if base in ("Isendrecv", "Isendrecv_replace"):
        p.kind = "isendrecv"
        cnt, dt = ("sendcount", "sendtype") if b.has("sendcount") else ("count", "datatype")
        req = b.raw("request")
        creq = f"PMPI_Request_f2c(*(MPI_Fint *)({req}))" if b.lang == "f" else f"*{req}"
        p.post.append(f"ml_p2p_send(S, {F}, {b.count(cnt)}, {b.dtype(dt)}, {b.int_('dest')}, {b.comm('comm')});")
        p.post.append(f"ml_req_track_in(S, _sh, {creq}, {F}, ML_RQ_RECV, {b.comm('comm')}, 0, ML_NOPEER);")
        return p
    # --- completion
    if base in COMPLETE:
        return completion_plan(base, b, p)
    if base == "Start":
        req = b.raw("request")
        creq = f"PMPI_Request_f2c(*(MPI_Fint *)({req}))" if b.lang == "f" else f"*{req}"
        p.pre.append(f"MPI_Request _r0 = {creq};")
        p.post.append(f"ml_req_start(S, {F}, _r0);")
        return p
    if base == "Startall":
        n = b.int_("count")
        reqs = b.raw("array_of_requests")
        if b.lang == "f":
            p.pre.append(f"int _n = {n}; MPI_Request *_rs = ml_scratch(sizeof(MPI_Request) * (_n > 0 ? _n : 1), 0);")
            p.pre.append(f"for (int _i = 0; _i < _n; _i++) _rs[_i] = PMPI_Request_f2c(((MPI_Fint *)({reqs}))[_i]);")
        else:
            p.pre.append(f"int _n = {n}; const MPI_Request *_rs = {reqs};")
        p.post.append(f"for (int _i = 0; _i < _n; _i++) ml_req_start(S, {F}, _rs[_i]);")
        return p
    if base == "Request_free":
        req = b.raw("request")
        creq = f"PMPI_Request_f2c(*(MPI_Fint *)({req}))" if b.lang == "f" else f"*{req}"
        p.pre.append(f"if (ml_req_live) ml_req_free({creq});")
        return p
    if base == "Pcontrol" and b.lang == "f":  # levels only (runtime/core/region.c)
        p.pre.append(f"ml_pcontrol({b.int_('level')}, NULL);")
        return p
    if base == "Type_free":
        p.pre.append("ml_type_forget();")
        return p
    if base in ("Comm_free", "Comm_disconnect"):
        p.pre.append(f"ml_comm_forget({b.comm('comm') if b.lang == 'f' else b.ref('comm')});")
        return p
    if base == "Win_free":
        p.pre.append(f"ml_win_forget({b.win('win') if b.lang == 'f' else b.ref('win')});")
        return p
    if base in TOPO_CREATE:  # the application's Cartesian/graph topology (runtime/core/topo.c)
        new = b.comm(TOPO_CREATE[base]) if b.lang == "f" else b.ref(TOPO_CREATE[base])
        p.post.append(f"{{ void ml_topo_created(MPI_Comm); ml_topo_created({new}); }}")
        return p
    # --- collectives
    cb = coll_base(base)
    if cb:
        return coll_plan(cb, b, p)
    # --- one-sided
    if base in RMA_SEND | RMA_GET | RMA_BOTH:
        p.kind = "rma"
        if base in ("Fetch_and_op", "Compare_and_swap"):
            one = "(int64_t)1"
            p.post.append(f"ml_rma(S, {F}, ML_SEND, {one}, {b.dtype('datatype')}, {b.int_('target_rank')}, {b.win('win')});")
            p.post.append(f"ml_rma(S, {F}, ML_RECV, {one}, {b.dtype('datatype')}, {b.int_('target_rank')}, {b.win('win')});")
            return p
        side = "ML_RECV" if base in RMA_GET else "ML_SEND"
        p.post.append(f"ml_rma(S, {F}, {side}, {b.count('origin_count')}, {b.dtype('origin_datatype')}, {b.int_('target_rank')}, {b.win('win')});")
        if base in RMA_BOTH:
            p.post.append(f"ml_rma(S, {F}, ML_RECV, {b.count('result_count')}, {b.dtype('result_datatype')}, {b.int_('target_rank')}, {b.win('win')});")
        return p
    # --- MPI-IO: writes count as sent, reads as received (the file is the peer)
    m = IO_RE.match(base)
    if m and b.has("count") and b.has("datatype"):
        p.kind = "io"
        side = "ML_SEND" if m.group(2) == "write" else "ML_RECV"
        p.post.append(f"ml_io(S, {F}, {side}, {b.count('count')}, {b.dtype('datatype')});")
        return p
    return p


def completion_plan(base: str, b: Binding, p: Plan) -> Plan:
    """Wait/Test families: save the request handles before the call, attribute
    receives that completed afterwards (ml_cpl_end gets, per completed entry,
    its index and its status)."""
    p.kind = "complete"
    single = base in ("Wait", "Test")
    reqs = b.raw("request" if single else "array_of_requests")
    stname = "status" if base in ("Wait", "Test", "Waitany", "Testany") else "array_of_statuses"
    st_raw = b.raw(stname)
    n = "1" if single else b.int_("incount" if b.has("incount") else "count")
    fl = b.lang == "f"
    if not fl:
        ign = "MPI_STATUS_IGNORE" if stname == "status" else "MPI_STATUSES_IGNORE"
        p.pre.append("ml_cpl_t _cp;")
        p.pre.append(f"MPI_Status *_st = ml_cpl_begin(&_cp, {n}, {reqs}, {st_raw}, {st_raw} == {ign});")
        p.subst[stname] = "_st"
    else:
        ign = "ml_f_status_ignore" if stname == "status" else "ml_f_statuses_ignore"
        p.pre.append(f"int _n = {n}; ml_cpl_t _cp; _cp.track = 0;")
        p.pre.append("if (ml_req_live) { MPI_Request *_crq = ml_scratch(sizeof(MPI_Request) * (_n > 0 ? _n : 1), 1);")
        p.pre.append(f"  for (int _i = 0; _i < _n; _i++) _crq[_i] = PMPI_Request_f2c(((MPI_Fint *)({reqs}))[_i]);")
        p.pre.append("  ml_cpl_begin(&_cp, _n, _crq, NULL, 0); }")
        p.pre.append(f"MPI_Fint *_fst = (MPI_Fint *)({st_raw});")
        p.pre.append(f"if (_cp.track && (void *)_fst == {ign}) "
                     "_fst = ml_scratch(sizeof(MPI_Fint) * ML_F_STATUS_SIZE * (_n > 0 ? _n : 1), 2);")
        p.subst[stname] = "_fst"
    p.fl = fl_args("WAIT", b, rq="_cp.track ? _cp.saved : NULL", nrq="_cp.track ? _cp.n : 0")
    flag = ""
    if base in ("Test", "Testany", "Testall"):
        flag = f"*(const MPI_Fint *)({b.raw('flag')})" if fl else f"*{b.raw('flag')}"
    # ndone, idx, statuses of the completed entries
    if base in ("Wait", "Test", "Waitall", "Testall"):
        nd, idx = "_cp.n", "NULL"
    elif base in ("Waitany", "Testany"):
        k = f"*(const MPI_Fint *)({b.raw('index')})" if fl else f"*{b.raw('index')}"
        p.post.append(f"int _k = {k}; if (_k != MPI_UNDEFINED) _k -= {1 if fl else 0};")
        cond = "_k >= 0"
        flag = f"{flag} && {cond}" if flag else cond
        nd, idx = "1", "&_k"
    else:
        oc = f"*(const MPI_Fint *)({b.raw('outcount')})" if fl else f"*{b.raw('outcount')}"
        ix = b.raw("array_of_indices")
        p.post.append(f"int _oc = {oc}; if (_oc == MPI_UNDEFINED) _oc = 0;")
        if fl:
            p.post.append("int *_ix = ml_scratch(sizeof(int) * (_oc > 0 ? _oc : 1), 3);")
            p.post.append(f"for (int _i = 0; _i < _oc; _i++) _ix[_i] = ((const MPI_Fint *)({ix}))[_i] - 1;")
            nd, idx = "_oc", "_ix"
        else:
            nd, idx = "_oc", ix
    if fl:
        p.post.append(f"if (_cp.track{' && ' + flag if flag else ''}) {{ int _m = {nd};")
        p.post.append("  for (int _i = 0; _i < _m; _i++) PMPI_Status_f2c(_fst + (size_t)_i * ML_F_STATUS_SIZE, &_cp.st[_i]);")
        p.post.append(f"  ml_cpl_end(S, &_cp, _m, {idx}, _cp.st); }}")
    else:
        if single:  # one request: the inline path (ml.h)
            p.post.append(f"if (_cp.track{' && ' + flag if flag else ''}) ml_cpl_end1(S, _sh, &_cp, _st);")
        else:
            p.post.append(f"if (_cp.track{' && ' + flag if flag else ''}) ml_cpl_end(S, &_cp, {nd}, {idx}, _st);")
    return p


def coll_plan(cb: str, b: Binding, p: Plan) -> Plan:
    p.kind = "coll"
    shape = COLL_SHAPE[cb]
    f: dict[str, str] = {"shape": shape, "comm": b.comm("comm")}
    c64 = "0"
    if b.has("buffer"):
        f["sendbuf"] = b.buf("buffer")
        f["recvbuf"] = b.buf("buffer")
    for n in ("sendbuf", "recvbuf"):
        if b.has(n):
            f[n] = b.buf(n)
    for n, key in (("count", "scount"), ("sendcount", "scount"), ("recvcount", "rcount")):
        if b.has(n):
            f[key] = b.count(n)
    if b.has("count"):
        f["rcount"] = f["scount"]
    for n, key in (("datatype", "stype"), ("sendtype", "stype"), ("recvtype", "rtype")):
        if b.has(n):
            f[key] = b.dtype(n)
    if b.has("datatype"):
        f["rtype"] = f["stype"]
    for n, key in (("sendcounts", "scounts"), ("recvcounts", "rcounts")):
        if b.has(n):
            f[key] = b.arr(n)
    for n, key in (("sendtypes", "stypes"), ("recvtypes", "rtypes")):
        if b.has(n):
            f[key] = b.arr(n)
            if b.lang == "f":
                f["ftypes"] = "1"
    if b.has("root"):
        f["root"] = b.int_("root")
    if b.lang == "c" and b.cfunc_name.endswith("_c"):
        c64 = "1"
    f["counts64"] = c64
    init = ", ".join(f".{k} = {v}" for k, v in f.items())
    p.post.append(f"ml_coll_t _c = {{ {init} }}; ml_coll(S, {'FID'}, &_c);")
    scalar = next((n for n in ("count", "sendcount") if b.has(n)), "")
    p.fl = fl_args("COLL", b, "root", count=scalar)
    name = b.cfunc_name[4:]
    if name.startswith("I") and not name.endswith("_init"):
        p.post.append(f"if (ML_FL_ON) ml_req_track_in(S, _sh, {creq_of(b)}, FID, ML_RQ_COLL, {b.comm('comm')}, "
                      f"S->shared ? 0 : S->fl.bytes, S->shared ? ML_FL_NONE : S->fl.peer);")
    return p


def creq_of(b: Binding) -> str:
    """The C handle of the request a call returned."""
    req = b.raw("request")
    return f"PMPI_Request_f2c(*(MPI_Fint *)({req}))" if b.lang == "f" else f"*{req}"


# ----------------------------------------------------------------------------
# Emitting C wrappers

HOOKS_INIT = {"MPI_Init", "MPI_Init_thread"}
DIDX: dict[str, int] = {}  # function -> its data record index (-1: none), set in main
OVERRIDE_INCLUDES: list[str] = []  # one #include per engine's overrides.h (set in main)


def timed_body(plan: Plan, call: str, ok: str, served: bool) -> list[str]:
    """The body of every timed wrapper, C and Fortran alike.

    call: the statement that makes the MPI call (it sets the C `ret` or the Fortran
    ierror); ok: a C expression, true when the call succeeded; served: the function is
    overridden by an engine, which marks the calls it served itself (ml_mark_served).

    The rule: every call is counted and timed; what a call moved (bytes, message
    sizes, peers, tracked requests) is recorded only when it succeeded: a failed MPI
    call moved no bytes (with MPI_ERRORS_RETURN the application sees the error and
    goes on).  Only the outermost MPI call of a thread is recorded (ml_enter).

    The function's constants (FID, its data record DI, its time-line class TLC) are
    in the wrapper's enum, so each helper tests them at compile time.  A slot shared
    by threads (beyond MPILENS_MAX_THREADS) is tested once after the call: its lock
    is taken once around every update.
    """
    out = ["    int on = ml_enter();"]
    out += ["    " + ln for ln in plan.pre if ln]
    out.append("    ml_slot_t *S = NULL; int tm = 0, _sh = 0; uint64_t t0 = 0; MPI_Comm _hc = MPI_COMM_NULL;")
    if plan.local_cb:
        out.append("    ml_callbytes_t _cb = {0, 0, 0};")
    out += ["    " + ln for ln in plan.decl]
    onpre = " ".join(plan.onpre)
    tcb = "0" if plan.local_cb else "DI >= 0"
    out.append(f"    if (on) {{ S = ml_slot(); _sh = S->shared; tm = ml_call_start(S, FID, {tcb}); if (ML_TIMED(tm)) t0 = ml_now();"
               f"{' ' + onpre if onpre else ''} }}")
    # a call of no other kind: its communicator argument if it has one (in a register
    # already, where MPI_COMM_NULL may cost a load), else MPI_COMM_NULL
    fl = plan.fl or f"ML_FL_OTHER, {plan.comm or 'MPI_COMM_NULL'}, ML_FL_NONE, -1, 0, ML_FL_NONE, -1, NULL, 0"
    out.append(f"    if (ML_FL_ON && on && !_sh) (void)ml_fl_set(S, FID, {fl}, ML_TIMED(tm) ? t0 : ml_hot.fl_clock);")
    # served: 0 before every call (each overridden call resets it after itself, the
    # only place ml_mark_served is called from), read and reset after it
    out.append(f"    {call};")
    out.append("    if (ML_FL_ON && on && !_sh) ml_fl_done(S);")
    if fl.startswith("ML_FL_COLL"):  # the end of a call sampled for late arrival (late.h)
        out.append("    if (ML_FL_ON && on && !_sh) ml_la_out();")
    if served:
        out.append("    int served = ml_thr.served; ml_thr.served = 0;")
    out += ["    uint64_t dt = ML_TIMED(tm) ? ml_now() - t0 : 0;", "    ml_leave();",
            "    if (on) {"]
    post = [ln for ln in plan.post if ln]
    rec: list[str] = []  # the updates after the call, twice below
    if served:
        rec.append("if (served) ml_served_count(S, FID);")
    if post:
        rec.append(f"if ({ok}) {{")
        rec += ["    " + ln for ln in post]
        rec.append("}")
    cb = "_cb" if plan.local_cb else "ml_thr.cb"
    binx = "_cb.bin" if plan.local_cb and plan.kind == "recv" else "-1"
    hc = "1" if any(ln.startswith("_hc = ") for ln in post) else "0"  # the call has a communicator (comm_plan)
    rec.append(f"ml_call_done(S, FID, DI, TLC, tm, t0, dt, {hc}, _hc, {cb}.s, {cb}.r, {binx}, "
               "__builtin_return_address(0));")
    # a shared slot's copy under its lock, and the usual one: _sh tested once after the call
    out.append("        if (__builtin_expect(_sh, 0)) {")
    out.append("            ml_shared_lock();")
    out += ["            " + ln for ln in rec]
    out.append("            ml_shared_unlock();")
    out.append("        } else {")
    out += ["            " + ln for ln in rec]
    out.append("        }")
    out.append("    }")
    return out


NO_WRAP = {"MPI_Pcontrol"}  # varargs: wrapped by hand in core.c


def emit_call(fn: str, params: list[str], plan: Plan, names: list[str]) -> str:
    args = []
    for std, cname in zip(names, params):
        args.append(plan.subst.get(std, cname))
    return f"{fn}({', '.join(args)})"


def gen_c(funcs: list[CFunc], fid: dict[str, int], overrides: set[str]) -> str:
    out = [HEADER, "#include \"flight.h\"", "#include \"callend.h\"", *OVERRIDE_INCLUDES,
           "#define ML_EXPORT __attribute__((visibility(\"default\")))", ""]
    for f in funcs:
        names = f.std if f.std else [pr.name for pr in f.params]
        cnames = [pr.name for pr in f.params]
        b = Binding(names, cnames)
        b.cfunc_name = f.name
        try:
            plan = plan_for(f.name, b)
        except (ValueError, KeyError) as exc:
            sys.exit(f"genwrap: cannot plan {f.name}: {exc}")
        decl = ", ".join(pr.text for pr in f.params) or "void"
        target = ("mlo_" + f.name) if f.name in overrides else "P" + f.name
        call = emit_call(target, cnames, plan, names)
        isvoid = f.ret == "void"
        out.append(f"ML_EXPORT {f.ret} {f.name}({decl})\n{{")
        out.append(f"    enum {{ FID = {fid[f.name]}, DI = {DIDX[f.name]}, TLC = {TL_CLASSES[tl_class(f.name)]} }};")
        if f.name in HOOKS_INIT:
            out.append(f"    uint64_t t0 = ml_now_slow();\n    {f.ret} ret = {call};")
            out.append("    if (ret == MPI_SUCCESS) ml_after_init(argc, argv);")
            out.append("    if (ml_hot.active && ml_thr.depth == 0) { ml_slot_t *S = ml_slot(); ml_time(S, FID, ml_ns_to_ticks(ml_now_slow() - t0)); }")
            out.append("    return ret;\n}\n")
            continue
        if f.name == "MPI_Finalize":
            out.append("    ml_before_finalize();\n    return PMPI_Finalize();\n}\n")
            continue
        call = f"{'' if isvoid else f.ret + ' ret = '}{call}"
        ok = "ret == MPI_SUCCESS" if f.ret == "int" else "1"
        out += timed_body(plan, call, ok, f.name in overrides)
        out.append("    return ret;" if not isvoid else "    return;")
        out.append("}\n")
    return "\n".join(out)


# ----------------------------------------------------------------------------
# Fortran


def fortran_exports(fc: str) -> set[str]:
    """Symbols the MPI Fortran libraries export (found by linking tiny programs: mpif.h,
    and `use mpi_f08` where this compiler can read that module)."""
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "t.f90"
        src.write_text("program t\ninclude 'mpif.h'\ninteger ierr\ncall MPI_INIT(ierr)\ncall MPI_FINALIZE(ierr)\nend program\n")
        exe = Path(td) / "t"
        run([fc, str(src), "-o", str(exe)])
        ldd = run(["ldd", str(exe)])
        src8 = Path(td) / "t8.f90"
        src8.write_text("program t\nuse mpi_f08\ncall MPI_Init()\ncall MPI_Finalize()\nend program\n")
        if subprocess.run([fc, str(src8), "-o", str(exe) + "8"], capture_output=True, check=False).returncode == 0:
            ldd += run(["ldd", str(exe) + "8"])
    found = re.findall(r"^\s*(\S+)\s+=>\s+(/\S+)", ldd, re.MULTILINE)
    libs = list(dict.fromkeys(path for _, path in found))
    # A library the loader cannot find (Intel MPI from PyPI: its rpath names a
    # missing lib/release) is looked for beside the ones it found.
    dirs = {os.path.dirname(p) for p in libs}
    for name in re.findall(r"^\s*(\S+)\s+=>\s+not found", ldd, re.MULTILINE):
        libs += [os.path.join(d, name) for d in dirs if os.path.exists(os.path.join(d, name))][:1]
    syms: set[str] = set()
    for lib in libs:
        if "mpi" not in os.path.basename(lib):
            continue
        for ln in run(["nm", "-D", "--defined-only", lib]).splitlines():
            parts = ln.split()
            if len(parts) >= 3:
                syms.add(parts[2])
    return syms


FRET = {"WALL_TIME": "double", "TICK_RESOLUTION": "double",
        "LOCATION_SMALL": "MPI_Aint", "DISPLACEMENT": "MPI_Aint"}
STRING_KINDS = {"STRING", "STRING_ARRAY", "STRING_2DARRAY"}


F2C_SCALAR = {
    "DATATYPE": "PMPI_Type_f2c(*(const MPI_Fint *)({a}))",
    "OPERATION": "PMPI_Op_f2c(*(const MPI_Fint *)({a}))",
    "COMMUNICATOR": "PMPI_Comm_f2c(*(const MPI_Fint *)({a}))",
    "RANK": "(int)*(const MPI_Fint *)({a})",
    "POLYXFER_NUM_ELEM_NNI": "(int)*(const MPI_Fint *)({a})",
    "POLYXFER_NUM_ELEM": "(int)*(const MPI_Fint *)({a})",
    "BUFFER": "(void *)ml_fbuf({a})",
}


def f2c_arg(p: dict, a: str, fname: str) -> str:
    """C value of a Fortran argument, for calling a C override engine."""
    if p["kind"] in ("POLYXFER_NUM_ELEM_NNI", "POLYXFER_NUM_ELEM") and p["length"]:
        return f"(const int *)({a})"  # MPI_Fint arrays (MPI_Fint is int: checked in ml.h)
    if p["kind"] not in F2C_SCALAR or p["length"]:
        sys.exit(f"genwrap: cannot call the override of {fname} from Fortran: parameter "
                 f"{p['name']} of kind {p['kind']} has no conversion")
    return F2C_SCALAR[p["kind"]].format(a=a)


def gen_f(std: dict, exports: set[str], fid: dict[str, int], overrides: set[str]) -> tuple[str, int, int]:
    out = [HEADER, '#include "flight.h"', '#include "callend.h"', *OVERRIDE_INCLUDES, ""]
    n = n08 = 0
    f08_ok = not any(x.endswith("_f08ts_") for x in exports)
    for key, e in sorted(std.items()):
        a = e["attributes"]
        if not a["f90_expressible"] or a["callback"] or a["not_with_mpif"] or a["predefined_function"]:
            continue
        name = e.get("name_f90") or e["name"]
        low = name.lower()
        if f"pmpi_{low[4:]}_" not in exports:
            continue
        params = [p for p in e["parameters"] if "f90_parameter" not in p["suppress"].split()
                  and p["kind"] != "VARARGS"]
        names = [p["name"] for p in params]
        cnames = [f"a{i}" for i in range(len(params))]
        hidden = [f"l{i}" for i, p in enumerate(params) if p["kind"] in STRING_KINDS]
        ret = FRET.get(e["return_kind"], "void")
        cname = e["name"]
        b = FBinding(names, cnames)
        b.cfunc_name = cname
        plan = plan_for(cname, b) if cname in fid else Plan()
        decl = ", ".join([f"void *{c}" for c in cnames] + [f"size_t {h}" for h in hidden]) or "void"
        args = [plan.subst.get(s, c) for s, c in zip(names, cnames)] + hidden
        # mpif.h / `use mpi` (pmpi_xxx_), and mpi_f08 where its binding has the same
        # arguments by reference (Open MPI's mpi_xxx_f08_: handles are one-integer
        # derived types, buffers plain addresses, ierror optional); MPICH's f08
        # bindings pass buffers as descriptors (mpi_xxx_f08ts_) and are left alone.
        variants = [("f", f"pmpi_{low[4:]}_")]
        pm08 = f"pmpi_{low[4:]}_f08_"
        if f08_ok and a["f08_expressible"] and pm08 in exports:
            p08 = [p["name"] for p in e["parameters"] if "f08_parameter" not in p["suppress"].split()
                   and p["kind"] != "VARARGS"]
            if p08 == names:
                variants.append(("f08", pm08))
        for var, pm in variants:
            out.append(f"extern {ret} {pm}({decl});")
            fn = f"ml_{var}_{low[4:]}"
            out.append(f"static {ret} {fn}({decl})\n{{")
            call = f"{pm}({', '.join(args)})"
            if cname in overrides:
                # The engine is C: convert the Fortran arguments and call it (the MPI's own
                # pmpi_xxx_ would bypass it where the Fortran binding calls PMPI_Xxx).
                cargs = [f2c_arg(p, c, cname) for p, c in zip(params, cnames) if p["name"] != "ierror"]
                call = f"*(MPI_Fint *)({cnames[-1]}) = mlo_{cname}({', '.join(cargs)})"
            if cname in HOOKS_INIT:
                out.append(f"    uint64_t t0 = ml_now_slow();\n    ml_thr.depth++;\n    {call};\n    ml_thr.depth--;")
                out.append(f"    if (*(MPI_Fint *)(a{len(cnames) - 1}) == MPI_SUCCESS) ml_after_init(NULL, NULL);")
                out.append(f"    if (ml_hot.active) {{ ml_slot_t *S = ml_slot(); ml_time(S, {fid[cname]}, ml_ns_to_ticks(ml_now_slow() - t0)); }}")
            elif cname == "MPI_Finalize":
                out.append(f"    ml_before_finalize();\n    ml_thr.depth++;\n    {call};\n    ml_thr.depth--;")
            elif cname not in fid:  # known to the Fortran library only: pass through, untimed
                out.append(f"    {'return ' if ret != 'void' else ''}{call};")
            else:
                out.append(f"    enum {{ FID = {fid[cname]}, DI = {DIDX[cname]}, TLC = {TL_CLASSES[tl_class(cname)]} }};")
                ierr = f"*(MPI_Fint *)({cnames[-1]})" if names and names[-1] == "ierror" else ""
                fcall = f"{'' if ret == 'void' else ret + ' ret = '}{call}"
                out += timed_body(plan, fcall, f"{ierr} == MPI_SUCCESS" if ierr else "1",
                                  cname in overrides)
                if ret != "void":
                    out.append("    return ret;")
            out.append("}")
            if var == "f":
                for mangled in (f"{low}_", f"{low}__", low, name.upper()):
                    out.append(f'{ret} {mangled}({decl}) __attribute__((alias("{fn}"), visibility("default")));')
            elif names and names[-1] == "ierror":  # optional in mpi_f08: may be absent (NULL)
                fwd = ", ".join(cnames[:-1] + [f"{cnames[-1]} ? {cnames[-1]} : &_ie"] + hidden)
                out.append(f'{ret} {low}_f08_({decl}) __attribute__((visibility("default")));')
                out.append(f"{ret} {low}_f08_({decl})\n{{\n    MPI_Fint _ie;\n    "
                           f"{'return ' if ret != 'void' else ''}{fn}({fwd});\n}}")
            else:
                out.append(f'{ret} {low}_f08_({decl}) __attribute__((alias("{fn}"), visibility("default")));')
            out.append("")
            n08 += var == "f08"
        n += 1
    return "\n".join(out), n, n08


HEADER = ("/* Generated by runtime/gen/genwrap.py — do not edit. */\n#define _GNU_SOURCE\n#include <stdint.h>\n#include <stddef.h>\n"
          "#pragma GCC diagnostic ignored \"-Wdeprecated-declarations\"\n#pragma GCC diagnostic ignored \"-Wunused-parameter\"")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--fc", default="")
    ap.add_argument("--overrides", nargs="*", default=[],
                    help="every engine's overrides.h (runtime/engines/*/overrides.h)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if STD_PATH is None:
        sys.exit("genwrap: the Python package pympistandard is required (pip install pympistandard)")
    std = json.loads(STD_PATH.read_text())

    decl, macros, _ = parse_mpi_h(args.cc)
    # Only functions the MPI's libraries really define (mpi.h may declare more,
    # e.g. MPICH's PMPI_Status_f2f08 lives in its Fortran 2008 library).
    exports = fortran_exports(args.fc) if args.fc else set()
    funcs = []
    for name in sorted(decl):
        if not name.startswith("MPI_") or name in macros or "P" + name not in decl:
            continue
        if name in NO_WRAP or ("P" + name) in macros:
            continue
        if exports and "P" + name not in exports:
            continue
        f = decl[name]
        if f.varargs:
            continue
        key = name.lower()
        e = std.get(key) or (std.get(key[:-2]) if key.endswith("_c") else None)
        if e:
            sn = [p["name"] for p in e["parameters"] if "c_parameter" not in p["suppress"].split()]
            if len(sn) == len(f.params):
                f.std = sn
        funcs.append(f)
    overrides: set[str] = set()
    for path in sorted(args.overrides):
        otext = re.sub(r"/\*.*?\*/|//[^\n]*", "", Path(path).read_text(), flags=re.DOTALL)
        mine = set(re.findall(r"\bmlo_(MPI_\w+)\s*\(", otext))
        if mine & overrides:
            sys.exit(f"genwrap: {path} overrides {sorted(mine & overrides)}, "
                     "which another engine already overrides")
        overrides |= mine
        OVERRIDE_INCLUDES.append(f'#include "{Path(path).resolve()}"')
    missing = overrides - {f.name for f in funcs}
    if missing:
        sys.exit(f"genwrap: overrides for functions this mpi.h does not declare: {sorted(missing)}")

    names = ["(overhead)"] + [f.name for f in funcs] + ["MPI_Pcontrol"]
    fid = {n: i for i, n in enumerate(names)}
    data_kinds = {"send", "recv", "irecv", "sendrecv", "isendrecv", "coll", "rma", "io", "send_init"}
    didx: list[int] = []
    nd = 0
    for n in names:
        k = "time"
        if n.startswith("MPI_"):
            b = Binding(decl[n].std or [p.name for p in decl[n].params]) if n in decl else Binding([])
            b.cfunc_name = n
            try:
                k = plan_for(n, b).kind
            except (ValueError, KeyError):
                k = "time"
        if n in ("MPI_Start", "MPI_Startall"):
            k = "send"
        if k in data_kinds:
            didx.append(nd)
            nd += 1
        else:
            didx.append(-1)

    DIDX.update(zip(names, didx))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wrap_c = gen_c(funcs, fid, overrides)
    nf = nf08 = 0
    wrap_f = HEADER + '\n#include "ml.h"\n/* no Fortran compiler: no Fortran wrappers */\n'
    if args.fc:
        wrap_f, nf, nf08 = gen_f(std, exports, fid, overrides)
    h = [HEADER, "#ifndef MLENS_FUNCS_H", "#define MLENS_FUNCS_H",
         f"#define ML_NFUNC {len(names)}", f"#define ML_NDATA {max(nd, 1)}",
         f"#define ML_NWRAP_C {len(funcs) + 1}", f"#define ML_NWRAP_F {nf}",
         f"#define ML_FID_PCONTROL {fid['MPI_Pcontrol']}",
         "extern const char *const ml_func_name[ML_NFUNC];",
         "extern const short ml_func_didx[ML_NFUNC];",
         "extern const unsigned char ml_tl_class[ML_NFUNC];", "#endif", ""]
    c = [HEADER, '#include "ml_funcs.h"',
         "const char *const ml_func_name[ML_NFUNC] = {" + ", ".join(f'"{n}"' for n in names) + "};",
         "const short ml_func_didx[ML_NFUNC] = {" + ", ".join(map(str, didx)) + "};",
         "/* time-line class: 0 p2p, 1 coll, 2 rma, 3 io, 4 other (genwrap.py tl_class) */",
         "const unsigned char ml_tl_class[ML_NFUNC] = {" + ", ".join(str(tl_class(n)) for n in names) + "};", ""]
    for fname, text in (("ml_funcs.h", "\n".join(h)), ("ml_funcs.c", "\n".join(c)),
                        ("wrap_c.c", wrap_c), ("wrap_f.c", wrap_f)):
        p = out / fname
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
    print(f"mpilens: wrapped {len(funcs) + 1} C functions, {nf} Fortran functions "
          f"(x4 manglings) and {nf08} mpi_f08 functions of {args.cc}; {nd} record byte counts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
