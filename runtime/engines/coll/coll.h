/* Node-aware collectives (runtime/engines/coll, docs/collectives.md): the
 * engine ml_engine_coll, forced by a setting per collective
 * (MPILENS_COLL_ALLREDUCE, MPILENS_COLL_BCAST, MPILENS_COLL_ALLGATHER,
 * MPILENS_COLL_REDUCE_SCATTER_BLOCK) or chosen at run time (adaptive, with
 * runtime/engines/select), off by default.
 *
 *   coll.c       settings, the node layout, per-communicator node
 *                communicators and selection keys, the calls' path, the
 *                profile section; the list of collectives (collint.h)
 *   allreduce.c  MPI_Allreduce's algorithms
 *   bcast.c      MPI_Bcast's algorithms
 *   allgather.c  MPI_Allgather's algorithms
 *   reduce_scatter_block.c  MPI_Reduce_scatter_block's
 *   dispatch.c   the overrides shared with other engines and their order
 */
#ifndef MLENS_COLL_H
#define MLENS_COLL_H
#include <mpi.h>

/* The forced or chosen algorithm of MPI_Allreduce, MPI_Bcast, MPI_Allgather:
 * an MPI return code, or -1 when the call is not served (nothing set, or the
 * call is not eligible: dispatch.c then calls the MPI).  dispatch.c calls
 * them only while ml_coll_allreduce_on, ml_coll_bcast_on, ml_coll_allgather_on
 * (forced or adaptive, and the engine started). */
extern int ml_coll_allreduce_on;
extern __attribute__((visibility("hidden"))) int ml_coll_bcast_on; /* one load in the default path */
int ml_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm);
int ml_coll_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
extern __attribute__((visibility("hidden"))) int ml_coll_allgather_on;
int ml_coll_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
/* The same for MPI_Reduce_scatter_block (reduce_scatter_block.c), while
 * ml_coll_reduce_scatter_block_on. */
extern int ml_coll_reduce_scatter_block_on;
int ml_coll_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

#endif
