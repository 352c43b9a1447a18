#!/bin/bash
# Real profiles for bench/profsize/groups.py: heat2d 64 100 25 at 4, 8, 16 and 64 ranks
# (two runs each), LAMMPS (Debian's lmp, an LJ melt of 4,000 atoms, 300 steps) and HPCC
# (Debian's hpcc, its example input with Ns 300 and NBs 40) at 4 ranks, Open MPI, each
# run under NEW (default output: compressed, its default MPILENS_COMPRESS_GROUP) then
# under BASE (MPILENS_OUTPUT=*.prof.gz), interleaved so that both see the same load;
# then heat2d at 64 ranks under NEW with MPILENS_COMPRESS_GROUP=1, 4, 16 and 64 (tags
# g1 ...).  Every run has MPILENS_FIN_TRACE=1 (rank 0's finalize steps and peak memory
# in its err.txt).  At the end OUT_DIR/summary.json: per run the bytes per rank as
# written, the header's member, profiler_finalize_s and rank 0's trace.
#   bench/profsize/real_runs.sh NEW_PREFIX BASE_PREFIX OUT_DIR
#   bench/profsize/groups.py OUT_DIR/*/*/*.prof.gz --blocks 1,2,4,8,16,32,64
set -eu
NEW=$1 BASE=$2 OUT=$3
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$OUT"
sed '6s/^1000 /300  /; 8s/^80  /40  /' /usr/share/doc/hpcc/examples/_hpccinf.txt > "$OUT/hpccinf.txt"
cat > "$OUT/in.melt" <<'IN'
units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 10 0 10 0 10
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 3.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every 20 delay 0 check no
fix             1 all nve
thermo          50
run             300
IN
run() { # prefix tag case np command... (GROUP: MPILENS_COMPRESS_GROUP if set)
    local P=$1 tag=$2 case=$3 np=$4
    shift 4
    local d="$OUT/$tag/$case"
    rm -rf "$d"
    mkdir -p "$d"
    cp "$OUT/hpccinf.txt" "$OUT/in.melt" "$d/"
    local out=()
    [ "$tag" = base ] && out=(-x "MPILENS_OUTPUT=$d/base-%j.prof.gz")
    [ -n "${GROUP:-}" ] && out+=(-x "MPILENS_COMPRESS_GROUP=$GROUP")
    (cd "$d" && nice -n 10 mpirun --allow-run-as-root --oversubscribe -np "$np" -x MPILENS_FIN_TRACE=1 "${out[@]}" \
        "$P/bin/mpilens-exec" "$@" > out.txt 2> err.txt)
    echo "$tag $case: $(ls "$d"/*.prof.gz)"
}
for rep in 1 2; do
    for np in 4 8 16 64; do
        run "$NEW" new "heat2d-$np-$rep" "$np" "$NEW/examples/heat2d" 64 100 25
        run "$BASE" base "heat2d-$np-$rep" "$np" "$BASE/examples/heat2d" 64 100 25
    done
done
run "$NEW" new lammps-4 4 /usr/bin/lmp -in in.melt
run "$BASE" base lammps-4 4 /usr/bin/lmp -in in.melt
run "$NEW" new hpcc-4 4 /usr/bin/hpcc
run "$BASE" base hpcc-4 4 /usr/bin/hpcc
for g in 1 4 16 64; do
    GROUP=$g run "$NEW" "g$g" heat2d-64 64 "$NEW/examples/heat2d" 64 100 25
done
python3 - "$OUT" <<'PY'
import gzip, json, re, sys, zlib
from pathlib import Path
out = Path(sys.argv[1])
runs = {}
for prof in sorted(out.glob("*/*/*.prof.gz")):
    raw, sizes = prof.read_bytes(), []
    data = raw
    while data:
        d = zlib.decompressobj(31)
        d.decompress(data)
        sizes.append(len(data) - len(d.unused_data))
        data = d.unused_data
    header = json.loads(gzip.decompress(raw).split(b"\n", 1)[0])
    trace = re.search(r"mpilens-fin-trace (\{.*\})", (prof.parent / "err.txt").read_text())
    runs[str(prof.relative_to(out))] = {
        "nranks": header["nranks"], "file_bytes": len(raw), "header_member": sizes[0],
        "members": len(sizes), "bytes_per_rank": (len(raw) - sizes[0]) / header["nranks"],
        "profiler_finalize_s": header.get("profiler_finalize_s"),
        "fin_trace": json.loads(trace.group(1)) if trace else None}
(out / "summary.json").write_text(json.dumps(runs, indent=1) + "\n")
for k, v in runs.items():
    print(f"{k}: {v['bytes_per_rank']:.0f} B/rank, {v['members']} members, "
          f"finalize {v['profiler_finalize_s']['total'] if v['profiler_finalize_s'] else '?'} s")
PY
