#!/bin/sh
# as_node.sh PROGRAM ARGS...: run one rank of a job as if on its own host, on this machine:
# a new UTS namespace (root) whose host name is the rank's entry in MPILENS_TEST_NODES
# ("node0 node1 node0 node1": rank r gets word r), the rank from Open MPI's
# OMPI_COMM_WORLD_RANK or hydra's PMI_RANK.  The profile then shows that host per rank
# (placement tests of mpilens advise); the traffic stays on this machine.
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:?as_node.sh: no rank in the environment}}
set -- "$@"
host=$(echo "$MPILENS_TEST_NODES" | awk -v r="$rank" '{print $(r + 1)}')
[ -n "$host" ] || { echo "as_node.sh: MPILENS_TEST_NODES has no host for rank $rank" >&2; exit 2; }
exec unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
