/* Node-aware MPI_Bcast (docs/collectives.md), a collective of the coll engine
 * (collint.h): candidates mpi, twolevel and, for large calls, scatterallgather.
 *
 *   twolevel          on the root's node, PMPI_Bcast from the root within the
 *                     node (the node leader among its receivers); PMPI_Bcast
 *                     among the node leaders from the root's node leader; on
 *                     every other node, PMPI_Bcast from the leader within the
 *                     node.
 *   scatterallgather  the root's buffer to its node leader (PMPI_Send, unless
 *                     the root is the leader); among the node leaders,
 *                     PMPI_Scatterv of one slice per leader from the root's
 *                     leader, then PMPI_Allgatherv of the slices (a leader
 *                     sends and receives about 2 x count, not count per
 *                     level of a tree); PMPI_Bcast from the leader within
 *                     every node.
 *
 * Where the root is (its node's leader among the leaders, its node-local
 * index) comes from ml_coll_root: known after the first call with that root
 * on the communicator.  Every rank gets the root's bytes: a broadcast copies,
 * there is nothing to round.
 *
 * Eligible calls (coll.c): intracommunicators, count > 0, a predefined
 * datatype, a root of the communicator.  Adaptive: mpi and twolevel, and
 * scatterallgather on calls of LARGE_CLASS bytes or more. */
#include <stdlib.h>

#include "collint.h"

enum { B_MPI, B_TWOLEVEL, B_SCATTERALLGATHER, B_N };
static const char *const names[] = {"mpi", "twolevel", "scatterallgather", "adaptive", NULL};
#define LARGE_CLASS 16 /* 64 KiB */

static int twolevel(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                    ml_coll_comm *ci)
{
    int leader, lrank;
    int rc = ml_coll_root(ci, root, comm, &leader, &lrank);
    int home = ci->leader == leader; /* the root's node */
    if (rc == MPI_SUCCESS && home)
        rc = PMPI_Bcast(buf, count, dt, lrank, ci->node);
    if (rc == MPI_SUCCESS && ci->lrank == 0)
        rc = PMPI_Bcast(buf, count, dt, leader, ci->cross);
    if (rc == MPI_SUCCESS && !home)
        rc = PMPI_Bcast(buf, count, dt, 0, ci->node);
    return rc;
}

/* Among the leaders (ci->cross of a leader): the buffer from leader root,
 * scattered in one slice per leader, then gathered by all. */
static int leaders_scatter_allgather(void *buf, int count, MPI_Datatype dt, int root,
                                     ml_coll_comm *ci)
{
    int n, me;
    MPI_Aint lb, ext;
    PMPI_Comm_size(ci->cross, &n);
    PMPI_Comm_rank(ci->cross, &me);
    PMPI_Type_get_extent(dt, &lb, &ext);
    if (!ci->lcounts && !(ci->lcounts = malloc(2 * sizeof(int) * (size_t)n)))
        return MPI_ERR_NO_MEM;
    int *cnt = ci->lcounts, *dis = ci->lcounts + n;
    for (int i = 0, d = 0; i < n; i++) {
        cnt[i] = count / n + (i < count % n);
        dis[i] = d;
        d += cnt[i];
    }
    char *mine = (char *)buf + (size_t)ext * (size_t)dis[me];
    int rc = PMPI_Scatterv(buf, cnt, dis, dt, me == root ? MPI_IN_PLACE : mine, cnt[me], dt,
                           root, ci->cross);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgatherv(MPI_IN_PLACE, 0, dt, buf, cnt, dis, dt, ci->cross);
    return rc;
}

static int scatterallgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                            ml_coll_comm *ci)
{
    int leader, lrank;
    int rc = ml_coll_root(ci, root, comm, &leader, &lrank);
    if (rc == MPI_SUCCESS && lrank != 0 && ci->leader == leader) { /* the root's node */
        if (ci->lrank == lrank)
            rc = PMPI_Send(buf, count, dt, 0, 0, ci->node);
        else if (ci->lrank == 0)
            rc = PMPI_Recv(buf, count, dt, lrank, 0, ci->node, MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS && ci->lrank == 0)
        rc = leaders_scatter_allgather(buf, count, dt, leader, ci);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Bcast(buf, count, dt, 0, ci->node);
    return rc;
}

static int run(int alg, const ml_coll_args *a, ml_coll_comm *ci)
{
    return (alg == B_SCATTERALLGATHER ? scatterallgather : twolevel)(a->buf, a->count, a->dt,
                                                                    a->root, a->comm, ci);
}

static int mpi(const ml_coll_args *a)
{
    return PMPI_Bcast(a->buf, a->count, a->dt, a->root, a->comm);
}

static int forced(int alg, const ml_coll_comm *ci)
{
    (void)ci;
    return alg;
}

static int candidates(const ml_coll_comm *ci, int cls, int *cand)
{
    (void)ci;
    cand[0] = B_MPI;
    cand[1] = B_TWOLEVEL;
    cand[2] = B_SCATTERALLGATHER;
    return cls >= LARGE_CLASS ? 3 : 2;
}

const ml_coll_def ml_coll_bcast_def = {
    .client = {"bcast", B_N, names},
    .setting = "MPILENS_COLL_BCAST",
    .has_root = 1,
    .run = run,
    .mpi = mpi,
    .forced = forced,
    .candidates = candidates,
};
