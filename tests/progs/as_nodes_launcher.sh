#!/bin/sh
# as_nodes_launcher.sh ARGS...: stand-in launcher for `mpilens advise --check` placement
# tests on one machine.  It runs "$LAUNCHER_PROG" ARGS (the real mpirun/mpiexec), but takes
# out a placement option the check added -- Open MPI's `--rankfile FILE` (lines
# "rank R=HOST slot=S") or hydra's `-f FILE` (one "HOST:1" line per rank, in rank order) --
# and hands that mapping to as_node.sh as MPILENS_TEST_NODES ("host of rank 0, of rank 1,
# ..."), since the real launcher does not know these host names.
want=
for a do
    shift
    if [ -n "$want" ]; then
        case $want in
            --rankfile) MPILENS_TEST_NODES=$(sed -n 's/^rank \([0-9]*\)=\([^ ]*\).*/\1 \2/p' "$a" |
                                             sort -n | awk '{printf "%s ", $2}') ;;
            *) MPILENS_TEST_NODES=$(sed 's/:.*//' "$a" | tr '\n' ' ') ;;
        esac
        export MPILENS_TEST_NODES
        want=
        continue
    fi
    case $a in
        --rankfile|-f) want=$a; continue ;;
    esac
    set -- "$@" "$a"
done
exec "${LAUNCHER_PROG:?as_nodes_launcher.sh: LAUNCHER_PROG is not set}" "$@"
