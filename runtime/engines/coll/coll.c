/* The coll engine's common part (coll.h, collint.h; docs/collectives.md):
 * node-aware algorithms of several collectives (allreduce.c, bcast.c,
 * allgather.c, reduce_scatter_block.c),
 * forced per collective by MPILENS_COLL_<NAME>, or chosen at run time among
 * them and the MPI's own call (adaptive: MPILENS_COLL_<NAME>=adaptive or
 * MPILENS_COLL=adaptive, the selection in runtime/engines/select); off (the
 * MPI's own call) by default.  A collective is one ml_coll_def, listed in
 * colls[] below, and its setting in settings[].
 *
 * Eligible calls: intracommunicators, count > 0, a predefined datatype, a
 * predefined operation (collectives with one), a root of the communicator
 * (collectives with one), and the collective's own checks (ml_coll_def's
 * eligible; MPI_Allgather: the same datatype and count on both sides,
 * ml_coll_allgather); anything else, and every call when nothing is forced,
 * goes to the MPI's own call.
 *
 * Adaptive: per (collective, communicator, size class of count x type
 * size) a key of the selection (select.h) with the collective's candidates.
 * On a communicator within one node, or with one rank per node, the
 * node-aware ones are the MPI's own call with extra steps: mpi at once, no
 * race.
 *
 * The node communicators are built once per user communicator, at its first
 * eligible call (collective: every rank of it makes the same call), by
 * splitting it by node and then by node-local index; they hang on the
 * communicator as an attribute and are freed with it (the keyval's delete
 * callback).  Only PMPI_* calls here. */
#include "coll.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collint.h"
#include "engine.h"
#include "ml_schema.h" /* generated from schema/profile.json: the section's version */

/* The collectives: one line each (collint.h). */
enum { C_ALLREDUCE, C_BCAST, C_ALLGATHER, C_REDUCE_SCATTER_BLOCK, C_N };
static const ml_coll_def *const colls[C_N] = {&ml_coll_allreduce_def, &ml_coll_bcast_def,
                                              &ml_coll_allgather_def,
                                              &ml_coll_reduce_scatter_block_def};

static const char *const all_modes[] = {"mpi", "adaptive", NULL};

/* A collective's state: its setting, the mode in force, its counts and
 * finished keys. */
typedef struct {
    int setting;        /* MPILENS_COLL_<NAME>: a candidate or ncand (adaptive), -1 unset */
    int mode;           /* in force: 0 the MPI's own, a candidate forced, ncand adaptive */
    long long served[ML_SEL_MAXCAND], declined; /* calls, this rank (mpi: only by choice) */
    long long tot_served[ML_SEL_MAXCAND], tot_declined; /* sums over ranks, rank 0 */
    ml_sel_table table;
} coll_state;

static coll_state st[C_N] = {
    [0 ... C_N - 1] = {.setting = -1, .table.lock = PTHREAD_MUTEX_INITIALIZER}};

static struct {
    int all;            /* MPILENS_COLL: 0 mpi, 1 adaptive */
    int learn;          /* MPILENS_COLL_LEARN: rounds of a race */
    char *nodes;        /* MPILENS_COLL_NODES (testing): ranks per node, NULL: the real layout */
} set;

static int my_node = -1;                 /* this rank's node (layout in force) */
static int keyval = MPI_KEYVAL_INVALID;
int ml_coll_allreduce_on, ml_coll_bcast_on, ml_coll_allgather_on; /* dispatch's tests (coll.h) */
int ml_coll_reduce_scatter_block_on;

static ml_coll_comm *live;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per collective, the last FAST eligible calls' communicator, datatype,
 * operation and count and their keys: a repeated call (the common case, also
 * when a loop alternates a few kinds of calls) skips the eligibility queries
 * and the attribute lookup.  Datatype and operation are predefined (never
 * freed); a communicator freed bumps comm_gen (its handle may come back for
 * another). */
#define FAST 4
static unsigned comm_gen;
typedef struct {
    MPI_Comm comm;
    MPI_Datatype dt;
    MPI_Op op;
    int count;
    unsigned gen;
    ml_coll_comm *ci;
    ml_sel_key *k;
} fast_t;
static __thread __attribute__((tls_model("initial-exec"))) fast_t fast[C_N][FAST];
static __thread __attribute__((tls_model("initial-exec"))) unsigned fast_next[C_N];

/* ---- per-communicator node communicators ---- */

/* The communicator's keys into the tables (its rank 0 only), once. */
static void keep_keys(ml_coll_comm *ci)
{
    for (int c = 0; ci->keys && c < C_N; c++)
        for (int s = 0; s < ML_SEL_CLASSES; s++) {
            ml_sel_key *k = &ci->keys[c * ML_SEL_CLASSES + s];
            if (ci->rank == 0)
                ml_sel_keep(&st[c].table, ci->size, s, k);
            free(k->t);
        }
    free(ci->keys);
    ci->keys = NULL;
}

static int delete_fn(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm; (void)key; (void)extra;
    ml_coll_comm *ci = val;
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (!finalized) {
        PMPI_Comm_free(&ci->node);
        PMPI_Comm_free(&ci->cross);
    }
    __atomic_add_fetch(&comm_gen, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&live_lock);
    if (ci->prev)
        ci->prev->next = ci->next;
    else if (live == ci)
        live = ci->next;
    if (ci->next)
        ci->next->prev = ci->prev;
    pthread_mutex_unlock(&live_lock);
    keep_keys(ci);
    free(ci->counts);
    free(ci->lcounts);
    free(ci->nodes_at);
    free(ci->order);
    free(ci->iorder);
    free(ci);
    return MPI_SUCCESS;
}

/* The node communicators of comm, built at the first call (collective). */
static ml_coll_comm *info_of(MPI_Comm comm, int *rc)
{
    ml_coll_comm *ci = NULL;
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
    ci->rank = rank;
    PMPI_Comm_size(comm, &ci->size);
    if ((*rc = PMPI_Comm_split(comm, my_node, rank, &ci->node)) != MPI_SUCCESS)
        goto fail;
    PMPI_Comm_size(ci->node, &ci->lsize);
    PMPI_Comm_rank(ci->node, &ci->lrank);
    if ((*rc = PMPI_Comm_split(comm, ci->lrank, rank, &ci->cross)) != MPI_SUCCESS)
        goto fail;
    PMPI_Comm_rank(ci->cross, &ci->leader); /* the leader's, sent over the node */
    if ((*rc = PMPI_Bcast(&ci->leader, 1, MPI_INT, 0, ci->node)) != MPI_SUCCESS)
        goto fail;
    mm[0] = ci->lsize;
    mm[1] = -ci->lsize;
    if ((*rc = PMPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS)
        goto fail;
    ci->uniform = mm[0] == -mm[1];
    ci->one_node = -mm[1] == ci->size; /* the smallest node holds every rank */
    ci->one_per_node = mm[0] == 1;
    ci->counts = malloc(2 * sizeof(int) * (size_t)ci->lsize);
    ci->keys = calloc(C_N * ML_SEL_CLASSES, sizeof *ci->keys);
    if (!ci->counts || !ci->keys) {
        *rc = MPI_ERR_NO_MEM;
        goto fail;
    }
    if ((*rc = PMPI_Comm_set_attr(comm, keyval, ci)) != MPI_SUCCESS)
        goto fail;
    pthread_mutex_lock(&live_lock);
    ci->next = live;
    if (live)
        live->prev = ci;
    live = ci;
    pthread_mutex_unlock(&live_lock);
    return ci;
fail:
    if (ci->node != MPI_COMM_NULL && ci->node)
        PMPI_Comm_free(&ci->node);
    if (ci->cross != MPI_COMM_NULL && ci->cross)
        PMPI_Comm_free(&ci->cross);
    free(ci->counts);
    free(ci->keys);
    free(ci);
    return NULL;
}

int ml_coll_node_order(ml_coll_comm *ci)
{
    int *ranks = NULL, rc, n;
    if (ci->lrank == 0 && !(ranks = malloc(sizeof(int) * (size_t)ci->lsize)))
        return MPI_ERR_NO_MEM;
    rc = PMPI_Gather(&ci->rank, 1, MPI_INT, ranks, 1, MPI_INT, 0, ci->node);
    if (rc == MPI_SUCCESS && ci->lrank == 0) {
        PMPI_Comm_size(ci->cross, &n);
        ci->nodes_at = malloc(4 * sizeof(int) * (size_t)n);
        ci->order = malloc(sizeof(int) * (size_t)ci->size);
        if (!ci->nodes_at || !ci->order)
            rc = MPI_ERR_NO_MEM;
        if (rc == MPI_SUCCESS)
            rc = PMPI_Allgather(&ci->lsize, 1, MPI_INT, ci->nodes_at, 1, MPI_INT, ci->cross);
        if (rc == MPI_SUCCESS) {
            for (int i = 0, d = 0; i < n; i++) {
                ci->nodes_at[n + i] = d;
                d += ci->nodes_at[i];
            }
            rc = PMPI_Allgatherv(ranks, ci->lsize, MPI_INT, ci->order, ci->nodes_at,
                                 ci->nodes_at + n, MPI_INT, ci->cross);
        }
        int block = 1;
        for (int j = 0; rc == MPI_SUCCESS && j < ci->size && block; j++)
            block = ci->order[j] == j;
        if (rc != MPI_SUCCESS || block) {
            free(ci->order);
            ci->order = NULL;
        }
    }
    free(ranks);
    if (rc == MPI_SUCCESS)
        ci->order_ready = 1;
    return rc;
}

int ml_coll_index_order(ml_coll_comm *ci)
{
    int n, rc, *mine;
    PMPI_Comm_size(ci->cross, &n); /* the nodes (the same ranks on every one) */
    mine = malloc(sizeof(int) * (size_t)n);
    ci->iorder = malloc(sizeof(int) * (size_t)ci->size);
    if (!mine || !ci->iorder)
        rc = MPI_ERR_NO_MEM;
    else
        rc = PMPI_Allgather(&ci->rank, 1, MPI_INT, mine, 1, MPI_INT, ci->cross);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgather(mine, n, MPI_INT, ci->iorder, n, MPI_INT, ci->node);
    free(mine);
    if (rc != MPI_SUCCESS) {
        free(ci->iorder);
        ci->iorder = NULL;
    }
    return rc;
}

int ml_coll_root(ml_coll_comm *ci, int root, MPI_Comm comm, int *leader, int *lrank)
{
    int *e = ci->root[root % ML_COLL_ROOTS];
    if (e[0] != root + 1) { /* the same miss on every rank: the same roots in the same order */
        int v[2] = {ci->leader, ci->lrank};
        int rc = PMPI_Bcast(v, 2, MPI_INT, root, comm);
        if (rc != MPI_SUCCESS)
            return rc;
        e[0] = root + 1;
        e[1] = v[0];
        e[2] = v[1];
    }
    *leader = e[1];
    *lrank = e[2];
    return MPI_SUCCESS;
}

/* ---- eligibility and the calls' path ---- */

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

static int run(int c, int alg, const ml_coll_args *a, ml_coll_comm *ci)
{
    st[c].served[alg]++;
    if (alg == 0)
        return colls[c]->mpi(a);
    ml_mark_served();
    return colls[c]->run(alg, a, ci);
}

/* A new key: forced, mpi at once (one node, one rank per node), or a race. */
static int new_key(int c, const ml_coll_comm *ci, ml_sel_key *k)
{
    const ml_coll_def *d = colls[c];
    if (st[c].mode != d->client.ncand) {
        ml_sel_fix(k, d->forced(st[c].mode, ci), ML_SEL_FORCED);
        return MPI_SUCCESS;
    }
    if (ci->one_node || ci->one_per_node) {
        ml_sel_fix(k, 0, ci->one_node ? ML_SEL_ONE_NODE : ML_SEL_ONE_PER_NODE);
        return MPI_SUCCESS;
    }
    int cand[ML_SEL_MAXCAND], cls = (int)(k - ci->keys) % ML_SEL_CLASSES;
    return ml_sel_race(k, cand, d->candidates(ci, cls, cand), set.learn);
}

/* Memory for the engine's state ran out on this rank: the other ranks are in
 * the same collective (or its node communicators' creation) and cannot be told,
 * so the job ends, as an MPI does when it runs out of memory inside a
 * collective; an error returned here alone would leave them waiting. */
static int no_mem_stops(int rc, MPI_Comm comm)
{
    if (rc != MPI_ERR_NO_MEM)
        return rc;
    fprintf(stderr, "mpilens: out of memory for the node-aware collectives; aborting\n");
    return PMPI_Abort(comm, 1);
}

/* Collective c's call a: an MPI return code, or -1 when not served (not
 * eligible: the caller calls the MPI). */
static int serve(int c, const ml_coll_args *a)
{
    int inter = 1, rc, tsize = 0;
    ml_coll_comm *ci;
    ml_sel_key *k;
    const ml_coll_def *d = colls[c];
    unsigned gen = __atomic_load_n(&comm_gen, __ATOMIC_RELAXED);
    const fast_t *f = fast[c];
    while (f < fast[c] + FAST && !(f->ci && f->comm == a->comm && f->dt == a->dt
                                   && f->op == a->op && f->count == a->count && f->gen == gen))
        f++;
    if (f < fast[c] + FAST) {
        ci = f->ci;
        k = f->k;
    } else {
        if (a->count <= 0 || a->comm == MPI_COMM_NULL || (d->has_op && !predefined_op(a->op))
            || !predefined_type(a->dt) || PMPI_Comm_test_inter(a->comm, &inter) != MPI_SUCCESS
            || inter || PMPI_Type_size(a->dt, &tsize) != MPI_SUCCESS) {
            st[c].declined++;
            return -1;
        }
        if (!(ci = info_of(a->comm, &rc)))
            return no_mem_stops(rc, a->comm);
        k = &ci->keys[c * ML_SEL_CLASSES
                      + ml_sel_class((unsigned long long)a->count * (unsigned)tsize)];
        fast[c][fast_next[c]++ % FAST] = (fast_t){a->comm, a->dt, a->op, a->count, gen, ci, k};
    }
    if ((d->has_root && (a->root < 0 || a->root >= ci->size))
        || (d->eligible && !d->eligible(a, ci))) {
        st[c].declined++; /* the MPI's own call reports a bad root */
        return -1;
    }
    if (k->phase == ML_SEL_NEW && (rc = new_key(c, ci, k)) != MPI_SUCCESS)
        return no_mem_stops(rc, a->comm);
    k->calls++;
    int alg = ml_sel_pick(k);
    if (k->phase == ML_SEL_CHOSEN)
        return no_mem_stops(run(c, alg, a, ci), a->comm);
    double t0 = PMPI_Wtime();
    rc = run(c, alg, a, ci);
    int rc2 = ml_sel_took(k, PMPI_Wtime() - t0, a->comm);
    return no_mem_stops(rc != MPI_SUCCESS ? rc : rc2, a->comm);
}

int ml_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm)
{
    ml_coll_args a = {sendbuf, recvbuf, count, 0, datatype, op, comm};
    return serve(C_ALLREDUCE, &a);
}

int ml_coll_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    ml_coll_args a = {NULL, buffer, count, root, datatype, MPI_OP_NULL, comm};
    return serve(C_BCAST, &a);
}

int ml_coll_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    /* one predefined datatype and count on both sides (serve checks the type) */
    if (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcount)) {
        st[C_ALLGATHER].declined++;
        return -1;
    }
    ml_coll_args a = {sendbuf, recvbuf, recvcount, 0, recvtype, MPI_OP_NULL, comm};
    return serve(C_ALLGATHER, &a);
}

int ml_coll_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    ml_coll_args a = {sendbuf, recvbuf, recvcount, 0, datatype, op, comm};
    return serve(C_REDUCE_SCATTER_BLOCK, &a);
}

/* Public query (exported): the algorithm of collective coll ("allreduce",
 * "bcast", "allgather", "reduce_scatter_block") chosen on comm for calls of bytes bytes (count x type
 * size), or NULL when none is chosen yet (still racing, no call yet, or the engine
 * off); *learning_calls gets the race calls made there so far. */
__attribute__((visibility("default")))
const char *mpilens_coll_choice(const char *coll, MPI_Comm comm, long long bytes,
                                long long *learning_calls)
{
    ml_coll_comm *ci = NULL;
    int found = 0, c = 0;
    if (learning_calls)
        *learning_calls = 0;
    while (c < C_N && (!coll || strcmp(coll, colls[c]->client.name) != 0))
        c++;
    if (c == C_N || keyval == MPI_KEYVAL_INVALID || bytes <= 0
        || PMPI_Comm_get_attr(comm, keyval, &ci, &found) != MPI_SUCCESS || !found || !ci->keys)
        return NULL;
    const ml_sel_key *k = &ci->keys[c * ML_SEL_CLASSES + ml_sel_class((unsigned long long)bytes)];
    if (learning_calls && (k->phase == ML_SEL_RACE || k->source == ML_SEL_LEARNED))
        *learning_calls = k->step;
    return k->phase == ML_SEL_CHOSEN ? colls[c]->client.names[(int)k->choice] : NULL;
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

/* MPILENS_COLL_<NAME>: one of the collective's candidates or adaptive; unset:
 * as MPILENS_COLL.  out: its coll_state, whose index names the collective. */
static int parse_mode(const char *v, void *out, ml_buf_t *why)
{
    (void)why;
    coll_state *s = out;
    const char *const *names = colls[s - st]->client.names;
    s->setting = -1;
    if (!v)
        return 0;
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0)
            return s->setting = i, 0;
    return -1;
}

static const ml_setting settings[] = {
    {.key = "coll", .type = ML_SET_CHOICE, .def = "mpi", .choices = all_modes, .out = &set.all,
     .help = "every collective the engine serves (MPI_Allreduce, MPI_Bcast, MPI_Allgather, "
             "MPI_Reduce_scatter_block): the MPI's own (mpi), or chosen at run time among it "
             "and the node-aware algorithms (adaptive); MPILENS_COLL_<NAME> overrides it per "
             "collective (docs/collectives.md)"},
    {.key = "coll_allreduce", .type = ML_SET_CUSTOM, .parse = parse_mode,
     .out = &st[C_ALLREDUCE], .unset = "as MPILENS_COLL",
     .accepted = "one of mpi, twolevel, multileader, adaptive",
     .help = "MPI_Allreduce: the MPI's own (mpi), a node-aware algorithm forced on eligible "
             "calls, or chosen at run time (adaptive) (docs/collectives.md)"},
    {.key = "coll_bcast", .type = ML_SET_CUSTOM, .parse = parse_mode,
     .out = &st[C_BCAST], .unset = "as MPILENS_COLL",
     .accepted = "one of mpi, twolevel, scatterallgather, adaptive",
     .help = "MPI_Bcast: the MPI's own (mpi), a node-aware algorithm forced on eligible "
             "calls, or chosen at run time (adaptive) (docs/collectives.md)"},
    {.key = "coll_allgather", .type = ML_SET_CUSTOM, .parse = parse_mode,
     .out = &st[C_ALLGATHER], .unset = "as MPILENS_COLL",
     .accepted = "one of mpi, twolevel, multileader, adaptive",
     .help = "MPI_Allgather: the MPI's own (mpi), a node-aware algorithm forced on eligible "
             "calls, or chosen at run time (adaptive) (docs/collectives.md)"},
    {.key = "coll_reduce_scatter_block", .type = ML_SET_CUSTOM, .parse = parse_mode,
     .out = &st[C_REDUCE_SCATTER_BLOCK], .unset = "as MPILENS_COLL",
     .accepted = "one of mpi, twolevel, multileader, adaptive",
     .help = "MPI_Reduce_scatter_block: the MPI's own (mpi), a node-aware algorithm forced "
             "on eligible calls, or chosen at run time (adaptive) (docs/collectives.md)"},
    {.key = "coll_learn", .type = ML_SET_INT, .def = "5", .lo = ML_SEL_MIN_ROUNDS,
     .accepted = "an integer from 3 to 64",
     .hi = ML_SEL_MAX_ROUNDS, .out = &set.learn,
     .help = "adaptive: rounds of the race per communicator and size class, every candidate "
             "once per round (docs/collectives.md)"},
    {.key = "coll_nodes", .type = ML_SET_CUSTOM, .parse = parse_nodes,
     .unset = "the node layout found at MPI_Init (ranks with the same host name)",
     .accepted = "positive integers separated by commas (ranks of consecutive nodes)",
     .help = "testing: the node layout the node-aware algorithms assume, ranks per node in "
             "world rank order (docs/collectives.md)"},
    {0}};

/* Intel MPI with its shared-memory collectives (I_MPI_COLL_INTRANODE other than
 * pt2pt): 2021.18 returned zeros past 32 KiB of an MPI_Bcast when large broadcasts
 * on a communicator alternated with ones on its sub-communicators, as a race does
 * (without mpilens too: docs/notes/coll-select-rounds.md). */
static int intel_shm_colls(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    const char *intra = getenv("I_MPI_COLL_INTRANODE");
    if (PMPI_Get_library_version(lib, &len) != MPI_SUCCESS)
        return 0;
    lib[len < (int)sizeof lib ? len : (int)sizeof lib - 1] = 0;
    return strstr(lib, "Intel") != NULL && !(intra && strcmp(intra, "pt2pt") == 0);
}

static int init(void)
{
    int wrank, wsize, any = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    for (int c = 0; c < C_N; c++) {
        coll_state *s = &st[c];
        memset(s->served, 0, sizeof s->served);
        s->declined = 0;
        s->mode = s->setting >= 0 ? s->setting : set.all ? colls[c]->client.ncand : 0;
        if (c == C_BCAST && s->mode == colls[c]->client.ncand && intel_shm_colls()) {
            s->mode = 0; /* adaptive MPI_Bcast: the MPI's own (every rank decides alike) */
            if (wrank == 0)
                fprintf(stderr, "mpilens: MPI_Bcast stays Intel MPI's own "
                                "(docs/collectives.md, Intel MPI)\n");
        }
        any |= s->mode != 0;
    }
    if (!any)
        return 0;
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
    ml_coll_allreduce_on = st[C_ALLREDUCE].mode != 0;
    ml_coll_bcast_on = st[C_BCAST].mode != 0;
    ml_coll_allgather_on = st[C_ALLGATHER].mode != 0;
    ml_coll_reduce_scatter_block_on = st[C_REDUCE_SCATTER_BLOCK].mode != 0;
    return 0;
}

static void finalize(void)
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (keyval == MPI_KEYVAL_INVALID || finalized)
        return;
    enum { N = ML_SEL_MAXCAND + 1 };
    long long mine[C_N * N], sum[C_N * N];
    for (int c = 0; c < C_N; c++) {
        memcpy(mine + c * N, st[c].served, sizeof st[c].served);
        mine[c * N + ML_SEL_MAXCAND] = st[c].declined;
    }
    PMPI_Reduce(mine, sum, C_N * N, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int c = 0; c < C_N; c++) {
        memcpy(st[c].tot_served, sum + c * N, sizeof st[c].tot_served);
        st[c].tot_declined = sum[c * N + ML_SEL_MAXCAND];
    }
    pthread_mutex_lock(&live_lock); /* the keys of the communicators not freed */
    for (ml_coll_comm *ci = live; ci; ci = ci->next)
        keep_keys(ci);
    pthread_mutex_unlock(&live_lock);
    __atomic_add_fetch(&comm_gen, 1, __ATOMIC_RELAXED); /* the keys are gone */
    for (int c = 0; c < C_N; c++)
        if (st[c].mode != 0)
            ml_sel_gather(&st[c].table);
    MPI_Comm pre[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
    for (int i = 0; i < 2; i++) {
        void *v;
        int found = 0;
        if (PMPI_Comm_get_attr(pre[i], keyval, &v, &found) == MPI_SUCCESS && found)
            PMPI_Comm_delete_attr(pre[i], keyval);
    }
    PMPI_Comm_free_keyval(&keyval);
    keyval = MPI_KEYVAL_INVALID;
    ml_coll_allreduce_on = ml_coll_bcast_on = ml_coll_allgather_on = 0;
    ml_coll_reduce_scatter_block_on = 0;
}

/* {"allreduce":{"mode":"adaptive","forced":...,"rounds":5,"calls":{"mpi":N,
 *  "twolevel":N,"multileader":N},"declined":N,"choices":[...]},"bcast":{...}}:
 * the collectives not left to the MPI; calls summed over ranks; choices per
 * communicator size and size class (record.c). */
static int section(ml_buf_t *b)
{
    int n = 0;
    for (int c = 0; c < C_N; c++) {
        const coll_state *s = &st[c];
        const ml_sel_client *cl = &colls[c]->client;
        if (s->mode == 0)
            continue;
        ml_buf_printf(b, "%s\"%s\":{\"mode\":\"%s\"", n++ ? "," : "{", cl->name,
                      cl->names[s->mode]);
        if (s->mode == cl->ncand)
            ml_buf_printf(b, ",\"rounds\":%d", set.learn);
        else
            ml_buf_printf(b, ",\"forced\":\"%s\"", cl->names[s->mode]);
        ml_buf_printf(b, ",\"calls\":{");
        for (int a = 0; a < cl->ncand; a++)
            ml_buf_printf(b, "%s\"%s\":%lld", a ? "," : "", cl->names[a], s->tot_served[a]);
        ml_buf_printf(b, "},\"declined\":%lld,\"choices_dropped\":%.0f,\"choices\":",
                      s->tot_declined, s->table.dropped);
        ml_sel_json(b, cl, &s->table);
        ml_buf_printf(b, "}");
    }
    if (n)
        ml_buf_printf(b, "}");
    return n > 0;
}

const ml_engine_t ml_engine_coll = {
    .name = "coll",
    .version = ML_SECTION_VERSION_COLL,
    .settings = settings,
    .init = init,
    .finalize = finalize,
    .section = section,
};
