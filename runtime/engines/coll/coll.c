/* Node-aware MPI_Allreduce algorithms (docs/collectives.md), forced by
 * MPILENS_COLL_ALLREDUCE; off (the MPI's own call) by default.
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
 * Eligible calls: intracommunicators, count > 0, a predefined datatype and a
 * predefined operation (all of which are commutative); anything else, and
 * every call when nothing is forced, goes to the MPI's own call.
 *
 * The node communicators are built once per user communicator, at its first
 * eligible call (collective: every rank of it makes the same call), by
 * splitting it by node and then by node-local index; they hang on the
 * communicator as an attribute and are freed with it (the keyval's delete
 * callback).  Only PMPI_* calls here. */
#include "coll.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "ml_schema.h" /* generated from schema/profile.json: the section's version */

enum { A_MPI, A_TWOLEVEL, A_MULTILEADER, A_N };
static const char *const modes[] = {"mpi", "twolevel", "multileader", NULL};

static struct {
    int allreduce;      /* MPILENS_COLL_ALLREDUCE: A_* */
    char *nodes;        /* MPILENS_COLL_NODES (testing): ranks per node, NULL: the real layout */
} set;

static int my_node = -1;                 /* this rank's node (layout in force) */
static int keyval = MPI_KEYVAL_INVALID;
int ml_coll_allreduce_on; /* forced and the keyval made: the dispatch's test (coll.h) */
static long long served[A_N], declined;  /* calls, this rank */
static long long tot_served[A_N], tot_declined; /* sums over ranks, rank 0 */

/* ---- per-communicator node communicators ---- */

typedef struct {
    MPI_Comm node;   /* the ranks of this communicator on my node */
    MPI_Comm cross;  /* the ranks with my node-local index, one per node */
    int lsize, lrank;
    int uniform;     /* every node has lsize ranks */
    int *counts;     /* [lsize] slice lengths (multileader), then [lsize] displacements */
} comm_info;

static int delete_fn(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm; (void)key; (void)extra;
    comm_info *ci = val;
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (!finalized) {
        PMPI_Comm_free(&ci->node);
        PMPI_Comm_free(&ci->cross);
    }
    free(ci->counts);
    free(ci);
    return MPI_SUCCESS;
}

/* The node communicators of comm, built at the first call (collective). */
static comm_info *info_of(MPI_Comm comm, int *rc)
{
    comm_info *ci = NULL;
    int found = 0, rank, mm[2];
    if ((*rc = PMPI_Comm_get_attr(comm, keyval, &ci, &found)) != MPI_SUCCESS)
        return NULL;
    if (found)
        return ci;
    ci = calloc(1, sizeof *ci);
    if (!ci) {
        *rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    PMPI_Comm_rank(comm, &rank);
    if ((*rc = PMPI_Comm_split(comm, my_node, rank, &ci->node)) != MPI_SUCCESS)
        goto fail;
    PMPI_Comm_size(ci->node, &ci->lsize);
    PMPI_Comm_rank(ci->node, &ci->lrank);
    if ((*rc = PMPI_Comm_split(comm, ci->lrank, rank, &ci->cross)) != MPI_SUCCESS)
        goto fail;
    mm[0] = ci->lsize;
    mm[1] = -ci->lsize;
    if ((*rc = PMPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS)
        goto fail;
    ci->uniform = mm[0] == -mm[1];
    ci->counts = malloc(2 * sizeof(int) * (size_t)ci->lsize);
    if (!ci->counts) {
        *rc = MPI_ERR_NO_MEM;
        goto fail;
    }
    if ((*rc = PMPI_Comm_set_attr(comm, keyval, ci)) != MPI_SUCCESS)
        goto fail;
    return ci;
fail:
    if (ci->node != MPI_COMM_NULL && ci->node)
        PMPI_Comm_free(&ci->node);
    if (ci->cross != MPI_COMM_NULL && ci->cross)
        PMPI_Comm_free(&ci->cross);
    free(ci->counts);
    free(ci);
    return NULL;
}

/* ---- the algorithms ---- */

static int twolevel(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                    const comm_info *ci)
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
                       MPI_Op op, const comm_info *ci)
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

/* ---- eligibility and the entry point ---- */

static int predefined_op(MPI_Op op)
{
    return op == MPI_SUM || op == MPI_PROD || op == MPI_MIN || op == MPI_MAX
        || op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR || op == MPI_BAND
        || op == MPI_BOR || op == MPI_BXOR || op == MPI_MINLOC || op == MPI_MAXLOC;
}

static int predefined_type(MPI_Datatype dt)
{
    int ni, na, nd, combiner;
    return dt != MPI_DATATYPE_NULL
        && PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) == MPI_SUCCESS
        && combiner == MPI_COMBINER_NAMED;
}

int ml_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm)
{
    int inter = 1, rc;
    if (set.allreduce == A_MPI || keyval == MPI_KEYVAL_INVALID)
        return -1;
    if (count <= 0 || comm == MPI_COMM_NULL || !predefined_op(op) || !predefined_type(datatype)
        || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
        declined++;
        return -1;
    }
    comm_info *ci = info_of(comm, &rc);
    if (!ci)
        return rc;
    ml_mark_served();
    if (set.allreduce == A_MULTILEADER && ci->uniform) {
        served[A_MULTILEADER]++;
        return multileader(sendbuf, recvbuf, count, datatype, op, ci);
    }
    served[A_TWOLEVEL]++;
    return twolevel(sendbuf, recvbuf, count, datatype, op, ci);
}

/* ---- the engine ---- */

/* MPILENS_COLL_NODES: positive integers separated by commas. */
static int parse_nodes(const char *v, void *out, ml_buf_t *why)
{
    (void)out; (void)why;
    free(set.nodes);
    set.nodes = NULL;
    if (!v)
        return 0;
    for (const char *p = v;; p++) {
        char *end;
        errno = 0;
        long n = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : 0;
        if (n < 1 || n > 1000000000 || errno)
            return -1;
        p = end;
        if (!*p)
            break;
        if (*p != ',')
            return -1;
    }
    set.nodes = strdup(v);
    return set.nodes ? 0 : -1;
}

static const ml_setting settings[] = {
    {.key = "coll_allreduce", .type = ML_SET_CHOICE, .def = "mpi", .choices = modes,
     .out = &set.allreduce,
     .help = "MPI_Allreduce: the MPI's own (mpi), or a node-aware algorithm forced on eligible "
             "calls (docs/collectives.md)"},
    {.key = "coll_nodes", .type = ML_SET_CUSTOM, .parse = parse_nodes,
     .unset = "the node layout found at MPI_Init (ranks with the same host name)",
     .accepted = "positive integers separated by commas (ranks of consecutive nodes)",
     .help = "testing: the node layout the node-aware algorithms assume, ranks per node in "
             "world rank order (docs/collectives.md)"},
    {0}};

static int init(void)
{
    int wrank, wsize;
    memset(served, 0, sizeof served);
    declined = 0;
    if (set.allreduce == A_MPI)
        return 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
    my_node = ml_my_node();
    if (set.nodes) {
        long first = 0;
        int k = 0;
        my_node = -1;
        for (const char *p = set.nodes; *p; k++) {
            char *end;
            long n = strtol(p, &end, 10);
            if (my_node < 0 && wrank < first + n)
                my_node = k;
            first += n;
            p = *end ? end + 1 : end;
        }
        char msg[200] = "";
        if (first != wsize)
            snprintf(msg, sizeof msg,
                     "mpilens: MPILENS_COLL_NODES declares %ld ranks, the job has %d", first,
                     wsize);
        ml_agree_or_stop(msg[0] ? msg : NULL);
    }
    if (my_node < 0)
        my_node = 0;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &keyval, NULL)
        != MPI_SUCCESS)
        return 1;
    ml_coll_allreduce_on = 1;
    return 0;
}

static void finalize(void)
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (set.allreduce == A_MPI || finalized)
        return;
    long long mine[A_N + 1], sum[A_N + 1];
    memcpy(mine, served, sizeof served);
    mine[A_N] = declined;
    PMPI_Reduce(mine, sum, A_N + 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    memcpy(tot_served, sum, sizeof tot_served);
    tot_declined = sum[A_N];
    if (keyval != MPI_KEYVAL_INVALID) {
        MPI_Comm pre[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
        for (int i = 0; i < 2; i++) {
            void *v;
            int found = 0;
            if (PMPI_Comm_get_attr(pre[i], keyval, &v, &found) == MPI_SUCCESS && found)
                PMPI_Comm_delete_attr(pre[i], keyval);
        }
        PMPI_Comm_free_keyval(&keyval);
        keyval = MPI_KEYVAL_INVALID;
    }
    ml_coll_allreduce_on = 0;
}

/* {"allreduce":{"forced":"multileader","calls":{"twolevel":N,"multileader":N},
 *  "declined":N}}: calls summed over ranks. */
static int section(ml_buf_t *b)
{
    if (set.allreduce == A_MPI)
        return 0;
    ml_buf_printf(b, "{\"allreduce\":{\"forced\":\"%s\",\"calls\":{\"twolevel\":%lld,"
                  "\"multileader\":%lld},\"declined\":%lld}}", modes[set.allreduce],
                  tot_served[A_TWOLEVEL], tot_served[A_MULTILEADER], tot_declined);
    return 1;
}

const ml_engine_t ml_engine_coll = {
    .name = "coll",
    .version = ML_SECTION_VERSION_COLL,
    .settings = settings,
    .init = init,
    .finalize = finalize,
    .section = section,
};
