/* Node-aware MPI_Allgather (docs/collectives.md), a collective of the coll
 * engine (collint.h): candidates mpi, twolevel and multileader.
 *
 *   twolevel  PMPI_Gather of the node's blocks to its leader (within the
 *             node); PMPI_Allgatherv among the node leaders, one part per
 *             node (its ranks' blocks); PMPI_Bcast of the whole result from
 *             the leader within every node.  Where every node's ranks are
 *             consecutive in the communicator (placement by block) the
 *             leaders gather straight into the receive buffer; otherwise
 *             (round-robin, ...) into a buffer in node order, then each
 *             block to its rank's place.
 *   multileader  on communicators with the same number of ranks on every
 *             node: PMPI_Allgather among the ranks with my node-local index
 *             (one per node: every rank drives part of the inter-node
 *             exchange), then PMPI_Allgather of those within the node, into a
 *             buffer in (index, node) order; then each block to its rank's
 *             place (ml_coll_index_order: O(size) ints on every rank, learned
 *             at the first multileader call).
 *
 * The placement is learned at the communicator's first twolevel call
 * (collective over it): the leaders get every node's size and, where the
 * placement is not by block, the communicator rank of every place in node
 * order (ml_coll_node_order, O(size) ints on the leaders only).  Every rank gets the
 * blocks' bytes: a gather copies, there is nothing to round.
 *
 * Eligible calls (coll.c, eligible below): intracommunicators, count > 0,
 * one predefined contiguous datatype (not a pair type with a hole) and count
 * on both sides (or MPI_IN_PLACE), the whole result (count x size elements)
 * within an int.  Adaptive: mpi, twolevel, and multileader where every node
 * has the same number of ranks (forced multileader takes twolevel on other
 * communicators). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "collint.h"

enum { G_MPI, G_TWOLEVEL, G_MULTILEADER, G_N };
static const char *const names[] = {"mpi", "twolevel", "multileader", "adaptive", NULL};

static int twolevel(const ml_coll_args *a, ml_coll_comm *ci)
{
    int rc = MPI_SUCCESS, count = a->count;
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(a->dt, &lb, &ext);
    size_t bsz = (size_t)ext * (size_t)count; /* one rank's block */
    const void *mine = a->sendbuf == MPI_IN_PLACE ? (char *)a->buf + bsz * (size_t)ci->rank
                                                  : a->sendbuf;
    if (!ci->order_ready && (rc = ml_coll_node_order(ci)) != MPI_SUCCESS)
        return rc;
    if (ci->lrank != 0) {
        rc = PMPI_Gather(mine, count, a->dt, NULL, 0, a->dt, 0, ci->node);
    } else {
        int n, me;
        PMPI_Comm_size(ci->cross, &n);
        PMPI_Comm_rank(ci->cross, &me);
        int *cnt = ci->nodes_at + 2 * n, *dis = ci->nodes_at + 3 * n;
        for (int i = 0; i < n; i++) {
            cnt[i] = ci->nodes_at[i] * count;
            dis[i] = ci->nodes_at[n + i] * count;
        }
        char *all = a->buf, *part;
        if (ci->order && !(all = malloc(bsz * (size_t)ci->size)))
            return MPI_ERR_NO_MEM;
        part = all + (size_t)ext * (size_t)dis[me];
        /* by block the leader's own block is the node's first: already in place */
        rc = PMPI_Gather(!ci->order && a->sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : mine, count,
                         a->dt, part, count, a->dt, 0, ci->node);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Allgatherv(MPI_IN_PLACE, 0, a->dt, all, cnt, dis, a->dt, ci->cross);
        if (ci->order) {
            for (int j = 0; rc == MPI_SUCCESS && j < ci->size; j++)
                if (ci->order[j] != ci->rank || a->sendbuf != MPI_IN_PLACE)
                    memcpy((char *)a->buf + bsz * (size_t)ci->order[j], all + bsz * (size_t)j,
                           bsz);
            free(all);
        }
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Bcast(a->buf, count * ci->size, a->dt, 0, ci->node);
    return rc;
}

static int multileader(const ml_coll_args *a, ml_coll_comm *ci)
{
    int rc = MPI_SUCCESS, count = a->count, n;
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(a->dt, &lb, &ext);
    PMPI_Comm_size(ci->cross, &n); /* the nodes (the same ranks on every one) */
    size_t bsz = (size_t)ext * (size_t)count;
    const void *mine = a->sendbuf == MPI_IN_PLACE ? (char *)a->buf + bsz * (size_t)ci->rank
                                                  : a->sendbuf;
    if (!ci->iorder && (rc = ml_coll_index_order(ci)) != MPI_SUCCESS)
        return rc;
    char *part = malloc(bsz * (size_t)(n + ci->size)), *all = part + bsz * (size_t)n;
    if (!part)
        return MPI_ERR_NO_MEM;
    rc = PMPI_Allgather(mine, count, a->dt, part, count, a->dt, ci->cross);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgather(part, count * n, a->dt, all, count * n, a->dt, ci->node);
    for (int j = 0; rc == MPI_SUCCESS && j < ci->size; j++)
        memcpy((char *)a->buf + bsz * (size_t)ci->iorder[j], all + bsz * (size_t)j, bsz);
    free(part);
    return rc;
}

static int run(int alg, const ml_coll_args *a, ml_coll_comm *ci)
{
    return (alg == G_MULTILEADER ? multileader : twolevel)(a, ci);
}

static int mpi(const ml_coll_args *a)
{
    return PMPI_Allgather(a->sendbuf, a->count, a->dt, a->buf, a->count, a->dt, a->comm);
}

static int forced(int alg, const ml_coll_comm *ci)
{
    return alg == G_MULTILEADER && !ci->uniform ? G_TWOLEVEL : alg;
}

static int candidates(const ml_coll_comm *ci, int cls, int *cand)
{
    (void)cls;
    cand[0] = G_MPI;
    cand[1] = G_TWOLEVEL;
    cand[2] = G_MULTILEADER;
    return ci->uniform ? 3 : 2;
}

/* A contiguous datatype: not a pair type with a hole (MPICH 4.0.2's
 * MPI_Gather of 1000 MPI_DOUBLE_INT or more fails with "Message truncated",
 * without mpilens too), and the whole result, count x size elements, one
 * int count (the within-node broadcast). */
static int eligible(const ml_coll_args *a, const ml_coll_comm *ci)
{
    MPI_Datatype dt = a->dt;
    return dt != MPI_FLOAT_INT && dt != MPI_DOUBLE_INT && dt != MPI_LONG_INT
        && dt != MPI_SHORT_INT && dt != MPI_LONG_DOUBLE_INT
        && (long long)a->count * ci->size <= INT_MAX;
}

const ml_coll_def ml_coll_allgather_def = {
    .client = {"allgather", G_N, names},
    .setting = "MPILENS_COLL_ALLGATHER",
    .run = run,
    .mpi = mpi,
    .forced = forced,
    .candidates = candidates,
    .eligible = eligible,
};
