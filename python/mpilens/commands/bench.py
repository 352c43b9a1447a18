"""`mpilens bench FAMILY [options] [-- launcher args]`: run a benchmark family.

Families p2p, coll, halo, logp, io, memory, overhead run the C program
mpilens-bench under the launcher given after `--` (default: the launcher of the
MPI mpilens was built with, --np ranks).  Options this command does not know are
passed to mpilens-bench, which validates them (see docs/bench.md).  The result
is printed as a table, saved with --json and drawn with --plot.  Families
alltoall and repro are run by their own modules (mpilens.bench.alltoall,
mpilens.bench.repro) with the remaining arguments.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from .. import outfile, paths
from ..bench import launch as bench_launch
from ..bench import tables as bench_tables
from ..errors import UserError

C_FAMILIES = ("p2p", "coll", "halo", "logp", "io", "memory", "overhead")
MODULE_FAMILIES = {"alltoall": "mpilens.bench.alltoall", "repro": "mpilens.bench.repro"}
PLOT_FORMATS = (".png", ".svg", ".pdf")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a benchmark family (p2p, coll, halo, logp, io, "
                                     "memory, overhead, alltoall, repro)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("family", choices=[*C_FAMILIES, *MODULE_FAMILIES], help="benchmark family")
    p.add_argument("rest", nargs=argparse.REMAINDER,
                   help="options, then -- and the launcher line (e.g. -- mpirun -np 4)")
    p.set_defaults(func=run, remainder="rest")


FAMILY_OPTIONS = {
    "p2p": "--ranks A,B | --pairs intra,inter --min-size --max-size --samples --warmup --iters --bw-iters --window "
           "--modes latency,pingping,bw,bibw --reference none|osu --osu-iters --osu-rounds",
    "coll": "--ops LIST --min-size --max-size --samples --warmup --nranks LIST --root",
    "halo": "--dimension 1|2 --npartner 2..12 --min-size --max-size --samples --iters "
            "--warmup --variants p2p,lockall,lock,fence",
    "logp": "--min-size --max-size --samples --iters --train --model FILE",
    "io": "--dir DIR --size --block --nblocks --samples --patterns LIST --keep",
    "memory": "--size --repeats",
    "overhead": "--calls --blocks --pp-calls --rss-calls",
}


def _options_parser(family: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"mpilens bench {family}", allow_abbrev=False,
        usage=f"mpilens bench {family} [options] [-- launcher args]",
        epilog=f"{family} options (checked by mpilens-bench; docs/bench.md): "
               f"{FAMILY_OPTIONS[family]}")
    p.add_argument("--json", type=Path, help="save the JSON result here")
    p.add_argument("--force", action="store_true", help="allow overwriting --json / --plot")
    p.add_argument("--plot", type=Path, help="draw the result (.png, .svg or .pdf)")
    p.add_argument("--np", type=int, default=None,
                   help="ranks for the default launcher (default 2)")
    p.add_argument("--nprocs", default=None,
                   help="memory: comma list of rank counts, one run each")
    p.add_argument("--rails", default=None,
                   help="p2p: comma list of rail counts (e.g. 1,2,4), one run each over the "
                        "first k of --rail-interfaces (Open MPI's btl_tcp_if_include)")
    p.add_argument("--rail-interfaces", default=None,
                   help="p2p --rails: the interfaces, in order (default rail0,rail1,...: "
                        "tests/cluster/vcluster's)")
    p.add_argument("--from", dest="from_json", type=Path, default=None,
                   help="show/plot a saved JSON result instead of running")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quiet", action="store_true", help="no table")
    p.add_argument("--timeout", type=float, default=None, help="seconds before giving up")
    return p


def _run_module(family: str, argv: list[str]) -> int:
    name = MODULE_FAMILIES[family]
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise UserError(f"benchmark family '{family}' is not available in this "
                            f"installation ({name} is missing)") from None
        raise
    return int(mod.main(argv) or 0)


def _nprocs(text: str | None, family: str) -> list[int] | None:
    if text is None:
        return None
    if family != "memory":
        raise UserError("--nprocs is accepted only by the memory family (use --np)")
    try:
        counts = [int(v) for v in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise UserError(f"--nprocs '{text}' is invalid (accepted: comma list of rank "
                        f"counts such as 2,4,8)")
    return counts


RAIL_VARIABLES = ("OMPI_MCA_btl_tcp_if_include", "UCX_NET_DEVICES")


def _rails(opts: argparse.Namespace, family: str, launcher: list[str]
           ) -> list[tuple[int, list[str]]] | None:
    """--rails: (rail count, interfaces) per run, or None."""
    if opts.rails is None:
        if opts.rail_interfaces is not None:
            raise UserError("--rail-interfaces is used with --rails only")
        return None
    if family != "p2p":
        raise UserError("--rails is accepted only by the p2p family")
    try:
        counts = [int(v) for v in opts.rails.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1 or len(set(counts)) != len(counts):
        raise UserError(f"--rails '{opts.rails}' is invalid (accepted: distinct rail counts "
                        "such as 1,2,4)")
    names = (opts.rail_interfaces.split(",") if opts.rail_interfaces
             else [f"rail{k}" for k in range(max(counts))])
    if max(counts) > len(names) or not all(names):
        raise UserError(f"--rails {opts.rails}: --rail-interfaces names {len(names)} "
                        f"interface(s), {max(counts)} needed")
    if any("btl_tcp_if_include" in a or "UCX_NET_DEVICES" in a for a in launcher):
        raise UserError("--rails chooses the interfaces of each run: remove btl_tcp_if_include "
                        "/ UCX_NET_DEVICES from the launcher line")
    return [(k, names[:k]) for k in counts]


def _rails_doc(docs: list[tuple[int, list[str], dict[str, Any]]]) -> dict[str, Any]:
    """One document for the runs over 1, 2, 4... rails: each run, and per size the
    median bandwidth of each and its gain over the first."""
    runs = [{"rails": k, "interfaces": names, "result": d} for k, names, d in docs]
    base = {r["size"]: (r.get("bw_Bps") or {}).get("median") for r in docs[0][2]["results"]}
    gain = []
    for size, b0 in base.items():
        row: dict[str, Any] = {"size": size, "bw_Bps": {}, "gain": {}}
        for k, _, d in docs:
            v = next(((r.get("bw_Bps") or {}).get("median") for r in d["results"]
                      if r["size"] == size), None)
            row["bw_Bps"][str(k)] = v
            row["gain"][str(k)] = v / b0 if v and b0 else None
        gain.append(row)
    errors = sum(d["errors"] for _, _, d in docs)
    return {"format": "mpilens-bench", "version": 1, "family": "p2p", "rails": runs,
            "gain": gain, "errors": errors, "validated": errors == 0}


def _load(path: Path, family: str) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"--from {path}: cannot read a JSON result ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != "mpilens-bench":
        raise UserError(f"--from {path}: not an mpilens-bench result")
    if doc.get("family") != family:
        raise UserError(f"--from {path}: holds family '{doc.get('family')}', not '{family}'")
    return doc


def run(args: argparse.Namespace) -> int:
    rest: list[str] = list(args.rest)
    if args.family in MODULE_FAMILIES:
        return _run_module(args.family, rest)
    if "--" in rest:
        k = rest.index("--")
        mine, launcher = rest[:k], rest[k + 1:]
    else:
        mine, launcher = rest, []
    opts, passthrough = _options_parser(args.family).parse_known_args(mine)
    paths.use_launcher(launcher)
    outfile.check_output(opts.json, opts.force, "--json")
    if opts.plot is not None:
        if opts.plot.suffix.lower() not in PLOT_FORMATS:
            raise UserError(f"--plot {opts.plot}: unknown format (accepted: "
                            f"{', '.join(PLOT_FORMATS)})")
        outfile.check_output(opts.plot, opts.force, "--plot")
    model = next((mine[i + 1] for i, a in enumerate(mine[:-1]) if a == "--model"), None)
    if args.family == "logp" and model:  # written by the benchmark itself (bench/src/logp.c)
        outfile.check_output(Path(model), True, "--model")  # a model is replaced, as before
    counts = _nprocs(opts.nprocs, args.family)
    if counts and len(counts) > 1 and launcher and not any("{np}" in a for a in launcher):
        raise UserError("--nprocs with several counts needs '{np}' in the launcher line "
                        "(e.g. -- mpirun -np {np})")
    if opts.np is not None and opts.np < 1:
        raise UserError(f"--np {opts.np} is invalid (accepted: 1 or more ranks)")
    rails = _rails(opts, args.family, launcher)
    progress = not opts.no_progress and sys.stderr.isatty()
    try:
        if opts.from_json is not None:
            doc = _load(opts.from_json, args.family)
        elif rails:
            line = bench_launch.launcher_for(launcher, opts.np or 2)
            doc = _rails_doc([(k, names, bench_launch.run_bench(
                line, "p2p", passthrough, progress=progress, label=f"{k} rail(s)",
                timeout=opts.timeout, extra_env=dict.fromkeys(RAIL_VARIABLES, ",".join(names))))
                for k, names in rails])
        elif counts:
            docs = [bench_launch.run_bench(bench_launch.launcher_for(launcher, n), "memory",
                                           passthrough, progress=progress, label=f"{n} ranks",
                                           timeout=opts.timeout) for n in counts]
            doc: dict[str, Any] = {"format": "mpilens-bench", "version": 1,
                                   "family": "memory", "series": docs,
                                   "errors": sum(d["errors"] for d in docs)}
            doc["validated"] = doc["errors"] == 0
        else:
            doc = bench_launch.run_bench(
                bench_launch.launcher_for(launcher, opts.np or 2), args.family, passthrough,
                progress=progress, timeout=opts.timeout)
    except bench_launch.BenchFailed as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return 1
    if opts.json is not None:
        outfile.write_text(opts.json, json.dumps(doc, indent=1) + "\n")
    if not opts.quiet:
        bench_tables.show(doc)
    if opts.plot is not None:
        from ..bench import plots as bench_plots  # matplotlib is slow to import: only when drawing

        bench_plots.save(doc, opts.plot)
    return 1 if doc.get("errors") else 0
