/* "mpi": the eighth candidate, whatever the MPI library itself does for this
 * call (its own tuned choice per size), on the engine's private communicator.
 *
 * Cost: none (no model of the library's choice): Grouping always keeps it. */
#include <math.h>

#include "blocks.h"

int ml_a2a_mpi(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

double ml_a2a_cost_mpi(int P, const ml_plogp *p)
{
    (void)P;
    (void)p;
    return INFINITY;
}
