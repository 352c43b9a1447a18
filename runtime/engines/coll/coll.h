/* Node-aware collectives (runtime/engines/coll, docs/collectives.md): the
 * engine ml_engine_coll, forced by a setting per collective
 * (MPILENS_COLL_ALLREDUCE) or chosen at run time (adaptive, with
 * runtime/engines/select), off by default.
 *
 *   coll.c      settings, the node layout, per-communicator node
 *               communicators and selection keys, the algorithms, the
 *               profile section
 *   dispatch.c  the overrides shared with other engines and their order
 */
#ifndef MLENS_COLL_H
#define MLENS_COLL_H
#include <mpi.h>

/* The forced or chosen MPI_Allreduce algorithm: an MPI return code, or -1
 * when the call is not served (nothing set, or the call is not eligible:
 * dispatch.c then calls PMPI_Allreduce).  dispatch.c calls it only while
 * ml_coll_allreduce_on (forced or adaptive, and the engine started). */
extern int ml_coll_allreduce_on;
int ml_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm);

#endif
