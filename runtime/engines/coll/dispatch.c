/* The overrides that several engines share, and their order: the one place
 * that says which engine serves a call (runtime/common/engine.h, "Two
 * engines cannot override the same function").  Each engine's part serves
 * the call (an MPI return code) or declines it (-1).
 *
 * MPI_Allreduce:
 *   1. the reproducible reductions (MPILENS_REPRO=1: MPI_SUM on
 *      floating-point types; docs/repro.md), which take precedence;
 *   2. the node-aware algorithms (MPILENS_COLL_ALLREDUCE=twolevel,
 *      multileader or adaptive, or MPILENS_COLL=adaptive; eligible calls
 *      only; docs/collectives.md);
 *   3. the MPI's own PMPI_Allreduce.
 * Both engines are off by default: then every call takes step 3.
 *
 * MPI_Bcast:
 *   1. the node-aware algorithm (MPILENS_COLL_BCAST=twolevel or adaptive, or
 *      MPILENS_COLL=adaptive; eligible calls only; docs/collectives.md);
 *   2. the MPI's own PMPI_Bcast (every call by default).
 *
 * MPI_Allgather:
 *   1. the node-aware algorithms (MPILENS_COLL_ALLGATHER=twolevel, multileader
 *      or adaptive, or MPILENS_COLL=adaptive; eligible calls only;
 *      docs/collectives.md);
 *   2. the MPI's own PMPI_Allgather (every call by default).
 *
 * MPI_Reduce_scatter_block: as MPI_Allreduce (the reproducible reductions,
 * then the node-aware algorithm, MPILENS_COLL_REDUCE_SCATTER_BLOCK=twolevel
 * or adaptive, or MPILENS_COLL=adaptive, then PMPI_Reduce_scatter_block). */
#include "coll.h"
#include "overrides.h"
#include "../repro/repro.h"

int mlo_MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm)
{
    int rc;
    if (ml_repro_allreduce_on
        && (rc = ml_repro_allreduce(sendbuf, recvbuf, count, datatype, op, comm)) >= 0)
        return rc;
    if (ml_coll_allreduce_on
        && (rc = ml_coll_allreduce(sendbuf, recvbuf, count, datatype, op, comm)) >= 0)
        return rc;
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/* The engine's path, out of line: the default one (nothing set) is a test and
 * a jump to PMPI_Bcast, without a frame (docs/collectives.md, its cost). */
static __attribute__((noinline, cold)) int bcast_engine(void *buffer, int count,
                                                        MPI_Datatype datatype, int root,
                                                        MPI_Comm comm)
{
    int rc = ml_coll_bcast(buffer, count, datatype, root, comm);
    return rc >= 0 ? rc : PMPI_Bcast(buffer, count, datatype, root, comm);
}

int mlo_MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    if (__builtin_expect(ml_coll_bcast_on, 0))
        return bcast_engine(buffer, count, datatype, root, comm);
    return PMPI_Bcast(buffer, count, datatype, root, comm);
}

/* As MPI_Bcast's: the default path a test and a jump to PMPI_Allgather. */
static __attribute__((noinline, cold)) int allgather_engine(const void *sendbuf, int sendcount,
                                                            MPI_Datatype sendtype, void *recvbuf,
                                                            int recvcount, MPI_Datatype recvtype,
                                                            MPI_Comm comm)
{
    int rc = ml_coll_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return rc >= 0 ? rc
                   : PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm);
}

int mlo_MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (__builtin_expect(ml_coll_allgather_on, 0))
        return allgather_engine(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int mlo_MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int rc;
    if (ml_repro_allreduce_on
        && (rc = ml_repro_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op,
                                               comm)) >= 0)
        return rc;
    if (ml_coll_reduce_scatter_block_on
        && (rc = ml_coll_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op,
                                              comm)) >= 0)
        return rc;
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}
