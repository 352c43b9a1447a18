/* Ranks of a group in MPI_COMM_WORLD: the one translation behind the
 * profiler's peer accounting (runtime/core/sem.c) and the Alltoall engine's
 * process groups (runtime/engines/alltoall/state.c).  PMPI calls only. */
#ifndef MLENS_GROUPS_H
#define MLENS_GROUPS_H
#include <mpi.h>

/* World rank of each of the n ranks of g, in g's order (malloc'd), with
 * MPI_UNDEFINED for a process outside MPI_COMM_WORLD; NULL if no memory. */
int *ml_group_world_ranks(MPI_Group g, int n);

#endif
