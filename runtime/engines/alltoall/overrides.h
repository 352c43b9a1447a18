/* The MPI function the adaptive Alltoall engine replaces
 * (MPILENS_ALLTOALL=adaptive|<algorithm>; native, the default, passes
 * through).  How overrides work: runtime/common/engine.h. */
#ifndef MLENS_ALLTOALL_OVERRIDES_H
#define MLENS_ALLTOALL_OVERRIDES_H
#include <mpi.h>

int mlo_MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

#endif
