/* Node-aware MPI_Bcast (docs/collectives.md), a collective of the coll engine
 * (collint.h): candidates mpi and twolevel.
 *
 *   twolevel  on the root's node, PMPI_Bcast from the root within the node
 *             (the node leader among its receivers); PMPI_Bcast among the
 *             node leaders from the root's node leader; on every other
 *             node, PMPI_Bcast from the leader within the node.
 *
 * Where the root is (its node's leader among the leaders, its node-local
 * index) comes from ml_coll_root: known after the first call with that root
 * on the communicator.  Every rank gets the root's bytes: a broadcast copies,
 * there is nothing to round.
 *
 * Eligible calls (coll.c): intracommunicators, count > 0, a predefined
 * datatype, a root of the communicator. */
#include "collint.h"

enum { B_MPI, B_TWOLEVEL, B_N };
static const char *const names[] = {"mpi", "twolevel", "adaptive", NULL};

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

static int run(int alg, const ml_coll_args *a, ml_coll_comm *ci)
{
    (void)alg;
    return twolevel(a->buf, a->count, a->dt, a->root, a->comm, ci);
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

static int candidates(const ml_coll_comm *ci, int *cand)
{
    (void)ci;
    cand[0] = B_MPI;
    cand[1] = B_TWOLEVEL;
    return 2;
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
