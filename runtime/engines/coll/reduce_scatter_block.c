/* Node-aware MPI_Reduce_scatter_block (docs/collectives.md), a collective of
 * the coll engine (collint.h): candidates mpi, twolevel and multileader.
 *
 *   twolevel  PMPI_Reduce of the whole vector (size x recvcount elements) to
 *             the node leader within the node; among the node leaders,
 *             PMPI_Reduce_scatter of the vector in node-major order (node
 *             j's part: its ranks' blocks, ranks per node x recvcount
 *             elements); PMPI_Scatter of the node's blocks from the leader
 *             within the node.  Where a node's ranks are not consecutive
 *             (round-robin placement, a reordered communicator), the leader
 *             first copies the blocks into node-major order.
 *
 *   multileader  every rank reorders its vector by node-local index: part i
 *             holds the blocks of the ranks of index i (in rank order, that
 *             of their cross communicator), nodes x recvcount elements;
 *             PMPI_Reduce_scatter_block of the parts within the node (rank
 *             i gets part i, summed over the node), then of part i among
 *             the ranks of index i (each gets its own block).  Every rank
 *             drives part of the inter-node exchange.  Needs the same
 *             number of ranks on every node; otherwise the call takes
 *             twolevel.  The order (size integers, ml_coll_index_order) is
 *             learnt at the first call and kept on every rank.
 *
 * twolevel's order (ml_coll_node_order) is learnt once per communicator, at
 * its first twolevel call: size + 4 x nodes integers, on the leaders only.
 *
 * Each element is combined once on a node leader, then among the leaders by
 * the MPI's PMPI_Reduce_scatter, and copied to the rank that owns its block:
 * one computation per element, whatever the rank (multileader: combined
 * once within the node, then among one rank per node, by the MPI's
 * PMPI_Reduce_scatter_block each time).
 *
 * Eligible calls (coll.c): intracommunicators, recvcount > 0, a predefined
 * datatype and a predefined operation (all of which are commutative), and
 * (here) size x recvcount at most INT_MAX (a larger vector: the MPI's own
 * call, inside the algorithm's count).  MPI_IN_PLACE is served.  Adaptive: mpi,
 * twolevel and, with the same number of ranks on every node, multileader. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "collint.h"

enum { R_MPI, R_TWOLEVEL, R_MULTILEADER, R_N };
static const char *const names[] = {"mpi", "twolevel", "multileader", "adaptive", NULL};

static int twolevel(const void *sendbuf, void *recvbuf, int n, MPI_Datatype dt, MPI_Op op,
                    MPI_Comm comm, ml_coll_comm *ci)
{
    int rc = MPI_SUCCESS;
    long long N = (long long)ci->size * n;
    if (N > INT_MAX) /* the node's vector does not fit a count */
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, n, dt, op, comm);
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (!ci->order_ready && (rc = ml_coll_node_order(ci)) != MPI_SUCCESS)
        return rc;
    if (ci->lrank != 0) {
        rc = PMPI_Reduce(in, NULL, (int)N, dt, op, 0, ci->node);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Scatter(NULL, n, dt, recvbuf, n, dt, 0, ci->node);
        return rc;
    }
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(dt, &lb, &ext);
    int nodes, *per = ci->nodes_at;
    PMPI_Comm_size(ci->cross, &nodes);
    int *cnt = per + 2 * nodes, same = !ci->order;
    const int *order = ci->order;
    size_t blk = (size_t)ext * (size_t)n;
    /* the node's sum, in node-major order (unless it is already), the node's part
     * (MPICH 4's in-place MPI_Reduce_scatter copies overlapping ranges) */
    size_t all = blk * (size_t)ci->size;
    char *sum = malloc(all * (same ? 1 : 2) + blk * (size_t)ci->lsize), *vec = sum;
    if (!sum)
        return MPI_ERR_NO_MEM;
    rc = PMPI_Reduce(in, sum, (int)N, dt, op, 0, ci->node);
    if (rc == MPI_SUCCESS && !same) { /* node-major order */
        vec = sum + all;
        for (int i = 0; i < ci->size; i++)
            memcpy(vec + blk * (size_t)i, sum + blk * (size_t)order[i], blk);
    }
    for (int j = 0; j < nodes; j++)
        cnt[j] = per[j] * n;
    char *part = vec + all;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce_scatter(vec, part, cnt, dt, op, ci->cross);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Scatter(part, n, dt, recvbuf, n, dt, 0, ci->node);
    free(sum);
    return rc;
}

static int multileader(const void *sendbuf, void *recvbuf, int n, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm, ml_coll_comm *ci)
{
    int rc = MPI_SUCCESS, nodes = ci->size / ci->lsize;
    if ((long long)ci->size * n > INT_MAX)
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, n, dt, op, comm);
    if (!ci->iorder && (rc = ml_coll_index_order(ci)) != MPI_SUCCESS)
        return rc;
    const char *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(dt, &lb, &ext);
    size_t blk = (size_t)ext * (size_t)n;
    char *vec = malloc(blk * ((size_t)ci->size + (size_t)nodes));
    if (!vec)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < ci->size; i++)
        memcpy(vec + blk * (size_t)i, in + blk * (size_t)ci->iorder[i], blk);
    char *part = vec + blk * (size_t)ci->size;
    rc = PMPI_Reduce_scatter_block(vec, part, nodes * n, dt, op, ci->node);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce_scatter_block(part, recvbuf, n, dt, op, ci->cross);
    free(vec);
    return rc;
}

static int run(int alg, const ml_coll_args *a, ml_coll_comm *ci)
{
    return (alg == R_MULTILEADER ? multileader : twolevel)(a->sendbuf, a->buf, a->count, a->dt,
                                                            a->op, a->comm, ci);
}

static int mpi(const ml_coll_args *a)
{
    return PMPI_Reduce_scatter_block(a->sendbuf, a->buf, a->count, a->dt, a->op, a->comm);
}

static int forced(int alg, const ml_coll_comm *ci)
{
    return alg == R_MULTILEADER && ci->uniform ? R_MULTILEADER : R_TWOLEVEL;
}

static int candidates(const ml_coll_comm *ci, int cls, int *cand)
{
    (void)cls;
    cand[0] = R_MPI;
    cand[1] = R_TWOLEVEL;
    cand[2] = R_MULTILEADER;
    return ci->uniform ? 3 : 2;
}

const ml_coll_def ml_coll_reduce_scatter_block_def = {
    .client = {"reduce_scatter_block", R_N, names},
    .setting = "MPILENS_COLL_REDUCE_SCATTER_BLOCK",
    .has_op = 1,
    .run = run,
    .mpi = mpi,
    .forced = forced,
    .candidates = candidates,
};
