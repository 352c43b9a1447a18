/* Node-aware MPI_Allreduce (docs/collectives.md), a collective of the coll
 * engine (collint.h): candidates mpi, twolevel and multileader.
 *
 *   twolevel     PMPI_Reduce to the node's first rank over a node
 *                communicator, PMPI_Allreduce among those node leaders,
 *                PMPI_Bcast within the node;
 *   multileader  the vector cut into one slice per rank of the node:
 *                PMPI_Reduce_scatter_block (or PMPI_Reduce_scatter when the
 *                count is not a multiple of the ranks per node) within the
 *                node, PMPI_Allreduce of each slice among the ranks with the
 *                same node-local index, PMPI_Allgather(v) within the node.
 *                Needs the same number of ranks on every node of the
 *                communicator; otherwise the call takes twolevel.
 *
 * Every rank gets the same bits: each element is combined once, on one rank
 * of a node, then among the ranks of one cross-node communicator (the MPI's
 * Allreduce, which MPI advises to give every rank the same result), and
 * copied to the rest of the node (Bcast, Allgather).
 *
 * Eligible calls (coll.c): intracommunicators, count > 0, a predefined
 * datatype and a predefined operation (all of which are commutative).
 * Adaptive: mpi, twolevel and, with the same number of ranks on every node,
 * multileader. */
#include <string.h>

#include "collint.h"

enum { A_MPI, A_TWOLEVEL, A_MULTILEADER, A_N };
static const char *const names[] = {"mpi", "twolevel", "multileader", "adaptive", NULL};

static int twolevel(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                    const ml_coll_comm *ci)
{
    int rc;
    if (ci->lrank == 0)
        rc = PMPI_Reduce(sendbuf, recvbuf, count, dt, op, 0, ci->node);
    else
        rc = PMPI_Reduce(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, NULL, count, dt, op, 0,
                         ci->node);
    if (rc == MPI_SUCCESS && ci->lrank == 0)
        rc = PMPI_Allreduce(MPI_IN_PLACE, recvbuf, count, dt, op, ci->cross);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Bcast(recvbuf, count, dt, 0, ci->node);
    return rc;
}

static int multileader(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                       MPI_Op op, const ml_coll_comm *ci)
{
    int rc, L = ci->lsize, *cnt = ci->counts, *dis = ci->counts + L;
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(dt, &lb, &ext);
    for (int i = 0, d = 0; i < L; i++) {
        cnt[i] = count / L + (i < count % L);
        dis[i] = d;
        d += cnt[i];
    }
    char *mine = (char *)recvbuf + (size_t)ext * (size_t)dis[ci->lrank];
    int n = cnt[ci->lrank], even = count % L == 0;
    if (sendbuf == MPI_IN_PLACE) {
        /* in place, the result comes at the start of recvbuf */
        rc = even ? PMPI_Reduce_scatter_block(MPI_IN_PLACE, recvbuf, n, dt, op, ci->node)
                  : PMPI_Reduce_scatter(MPI_IN_PLACE, recvbuf, cnt, dt, op, ci->node);
        if (rc == MPI_SUCCESS && n > 0 && mine != (char *)recvbuf)
            memmove(mine, recvbuf, (size_t)ext * (size_t)n);
    } else {
        rc = even ? PMPI_Reduce_scatter_block(sendbuf, mine, n, dt, op, ci->node)
                  : PMPI_Reduce_scatter(sendbuf, mine, cnt, dt, op, ci->node);
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allreduce(MPI_IN_PLACE, mine, n, dt, op, ci->cross);
    if (rc == MPI_SUCCESS)
        rc = even ? PMPI_Allgather(MPI_IN_PLACE, 0, dt, recvbuf, n, dt, ci->node)
                  : PMPI_Allgatherv(MPI_IN_PLACE, 0, dt, recvbuf, cnt, dis, dt, ci->node);
    return rc;
}

static int run(int alg, const ml_coll_args *a, ml_coll_comm *ci)
{
    return alg == A_MULTILEADER ? multileader(a->sendbuf, a->buf, a->count, a->dt, a->op, ci)
                                : twolevel(a->sendbuf, a->buf, a->count, a->dt, a->op, ci);
}

static int mpi(const ml_coll_args *a)
{
    return PMPI_Allreduce(a->sendbuf, a->buf, a->count, a->dt, a->op, a->comm);
}

static int forced(int alg, const ml_coll_comm *ci)
{
    return alg == A_MULTILEADER && ci->uniform ? A_MULTILEADER : A_TWOLEVEL;
}

static int candidates(const ml_coll_comm *ci, int cls, int *cand)
{
    (void)cls;
    cand[0] = A_MPI;
    cand[1] = A_TWOLEVEL;
    cand[2] = A_MULTILEADER;
    return ci->uniform ? 3 : 2;
}

const ml_coll_def ml_coll_allreduce_def = {
    .client = {"allreduce", A_N, names},
    .setting = "MPILENS_COLL_ALLREDUCE",
    .has_op = 1,
    .run = run,
    .mpi = mpi,
    .forced = forced,
    .candidates = candidates,
};
