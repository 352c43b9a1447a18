/* The MPI functions the reproducible reductions replace (MPILENS_REPRO=1:
 * MPI_SUM on floating-point types; everything else passes through).  How
 * overrides work: runtime/common/engine.h.  MPI_Allreduce and
 * MPI_Reduce_scatter_block are overridden once for several engines, in
 * runtime/engines/coll/dispatch.c (this engine's parts: ml_repro_allreduce,
 * ml_repro_reduce_scatter_block, repro.h). */
#ifndef MLENS_REPRO_OVERRIDES_H
#define MLENS_REPRO_OVERRIDES_H
#include <mpi.h>

int mlo_MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
int mlo_MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int mlo_MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int mlo_MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

#endif
