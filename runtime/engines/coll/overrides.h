/* The MPI functions overridden for several engines at once, each override
 * naming their order (dispatch.c).  How overrides work:
 * runtime/common/engine.h. */
#ifndef MLENS_COLL_OVERRIDES_H
#define MLENS_COLL_OVERRIDES_H
#include <mpi.h>

int mlo_MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int mlo_MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int mlo_MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int mlo_MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

#endif
