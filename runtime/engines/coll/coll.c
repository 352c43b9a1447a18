/* Node-aware MPI_Allreduce algorithms (docs/collectives.md), forced by
 * MPILENS_COLL_ALLREDUCE, or chosen at run time among them and the MPI's own
 * call (adaptive: MPILENS_COLL_ALLREDUCE=adaptive or MPILENS_COLL=adaptive,
 * the selection in runtime/engines/select); off (the MPI's own call) by
 * default.
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
 * Adaptive: per (communicator, size class of count x type size) a key of the
 * selection (select.h) with the candidates mpi, twolevel and, with the same
 * number of ranks on every node, multileader.  On a communicator within one
 * node, or with one rank per node, the node-aware ones are the MPI's own
 * call with extra steps: mpi at once, no race.
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

#include "engine.h"
#include "ml_schema.h" /* generated from schema/profile.json: the section's version */
#include "../select/select.h"

enum { A_MPI, A_TWOLEVEL, A_MULTILEADER, A_N, A_ADAPTIVE = A_N };
static const char *const modes[] = {"mpi", "twolevel", "multileader", "adaptive", NULL};
static const char *const all_modes[] = {"mpi", "adaptive", NULL};

/* The selection's client (select.h): MPI_Allreduce's candidates. */
static const ml_sel_client allreduce_client = {"allreduce", A_N, modes};

static struct {
    int all;            /* MPILENS_COLL: 0 mpi, 1 adaptive */
    int allreduce;      /* MPILENS_COLL_ALLREDUCE: A_* or A_ADAPTIVE, -1 unset (as MPILENS_COLL) */
    int learn;          /* MPILENS_COLL_LEARN: rounds of a race */
    char *nodes;        /* MPILENS_COLL_NODES (testing): ranks per node, NULL: the real layout */
} set = {.allreduce = -1};
static int mode = A_MPI; /* the MPI_Allreduce mode in force: A_* or A_ADAPTIVE */
static ml_sel_table table = {.lock = PTHREAD_MUTEX_INITIALIZER}; /* finished keys */

static int my_node = -1;                 /* this rank's node (layout in force) */
static int keyval = MPI_KEYVAL_INVALID;
int ml_coll_allreduce_on; /* forced and the keyval made: the dispatch's test (coll.h) */
static long long served[A_N], declined;  /* calls, this rank (mpi: only by choice) */
static long long tot_served[A_N], tot_declined; /* sums over ranks, rank 0 */

/* ---- per-communicator node communicators ---- */

typedef struct comm_info {
    MPI_Comm node;   /* the ranks of this communicator on my node */
    MPI_Comm cross;  /* the ranks with my node-local index, one per node */
    int lsize, lrank;
    int uniform;     /* every node has lsize ranks */
    int one_node;    /* all ranks on one node */
    int one_per_node;/* one rank on every node */
    int size, rank;  /* in the communicator */
    int *counts;     /* [lsize] slice lengths (multileader), then [lsize] displacements */
    ml_sel_key *keys;/* [ML_SEL_CLASSES]: the selection's keys (recorded modes) */
    struct comm_info *prev, *next; /* the live ones (MPI_Finalize records their keys) */
} comm_info;

static comm_info *live;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

/* The last FAST eligible calls' communicator, datatype, operation and count
 * and their keys: a repeated call (the common case, also when a loop
 * alternates a few kinds of calls) skips the eligibility queries and the
 * attribute lookup.  Datatype and operation are predefined (never freed); a
 * communicator freed bumps comm_gen (its handle may come back for another). */
#define FAST 4
static unsigned comm_gen;
typedef struct {
    MPI_Comm comm;
    MPI_Datatype dt;
    MPI_Op op;
    int count;
    unsigned gen;
    comm_info *ci;
    ml_sel_key *k;
} fast_t;
static __thread __attribute__((tls_model("initial-exec"))) fast_t fast[FAST];
static __thread __attribute__((tls_model("initial-exec"))) unsigned fast_next;

/* The communicator's keys into the table (its rank 0 only), once. */
static void keep_keys(comm_info *ci)
{
    for (int c = 0; ci->keys && c < ML_SEL_CLASSES; c++) {
        if (ci->rank == 0)
            ml_sel_keep(&table, ci->size, c, &ci->keys[c]);
        free(ci->keys[c].t);
    }
    free(ci->keys);
    ci->keys = NULL;
}

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
    ci->rank = rank;
    PMPI_Comm_size(comm, &ci->size);
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
    ci->one_node = -mm[1] == ci->size; /* the smallest node holds every rank */
    ci->one_per_node = mm[0] == 1;
    ci->counts = malloc(2 * sizeof(int) * (size_t)ci->lsize);
    ci->keys = calloc(ML_SEL_CLASSES, sizeof *ci->keys);
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

static int run(int alg, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
               MPI_Op op, MPI_Comm comm, const comm_info *ci)
{
    served[alg]++;
    if (alg == A_MPI)
        return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    ml_mark_served();
    return alg == A_MULTILEADER ? multileader(sendbuf, recvbuf, count, dt, op, ci)
                                : twolevel(sendbuf, recvbuf, count, dt, op, ci);
}

/* A new key: forced, mpi at once (one node, one rank per node), or a race. */
static int new_key(const comm_info *ci, ml_sel_key *k)
{
    if (mode != A_ADAPTIVE) {
        ml_sel_fix(k, mode == A_MULTILEADER && ci->uniform ? A_MULTILEADER : A_TWOLEVEL,
                   ML_SEL_FORCED);
        return MPI_SUCCESS;
    }
    if (ci->one_node || ci->one_per_node) {
        ml_sel_fix(k, A_MPI, ci->one_node ? ML_SEL_ONE_NODE : ML_SEL_ONE_PER_NODE);
        return MPI_SUCCESS;
    }
    int cand[A_N] = {A_MPI, A_TWOLEVEL, A_MULTILEADER};
    return ml_sel_race(k, cand, ci->uniform ? 3 : 2, set.learn);
}

int ml_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm)
{
    int inter = 1, rc, tsize = 0;
    comm_info *ci;
    ml_sel_key *k;
    if (mode == A_MPI || keyval == MPI_KEYVAL_INVALID)
        return -1;
    unsigned gen = __atomic_load_n(&comm_gen, __ATOMIC_RELAXED);
    const fast_t *f = fast;
    while (f < fast + FAST && !(f->ci && f->comm == comm && f->dt == datatype && f->op == op
                                && f->count == count && f->gen == gen))
        f++;
    if (f < fast + FAST) {
        ci = f->ci;
        k = f->k;
    } else {
        if (count <= 0 || comm == MPI_COMM_NULL || !predefined_op(op)
            || !predefined_type(datatype) || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS
            || inter || PMPI_Type_size(datatype, &tsize) != MPI_SUCCESS) {
            declined++;
            return -1;
        }
        if (!(ci = info_of(comm, &rc)))
            return rc;
        k = &ci->keys[ml_sel_class((unsigned long long)count * (unsigned)tsize)];
        fast[fast_next++ % FAST] = (fast_t){comm, datatype, op, count, gen, ci, k};
    }
    if (k->phase == ML_SEL_NEW && (rc = new_key(ci, k)) != MPI_SUCCESS)
        return rc;
    k->calls++;
    int alg = ml_sel_pick(k);
    if (k->phase == ML_SEL_CHOSEN)
        return run(alg, sendbuf, recvbuf, count, datatype, op, comm, ci);
    double t0 = PMPI_Wtime();
    rc = run(alg, sendbuf, recvbuf, count, datatype, op, comm, ci);
    int rc2 = ml_sel_took(k, PMPI_Wtime() - t0, comm);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Public query (exported): the MPI_Allreduce algorithm chosen on comm for
 * calls of bytes bytes (count x type size), or NULL when none is chosen yet
 * (still racing, no call yet, or the engine off); *learning_calls gets the
 * race calls made there so far. */
__attribute__((visibility("default")))
const char *mpilens_coll_allreduce_choice(MPI_Comm comm, long long bytes, long long *learning_calls)
{
    comm_info *ci = NULL;
    int found = 0;
    if (learning_calls)
        *learning_calls = 0;
    if (keyval == MPI_KEYVAL_INVALID || bytes <= 0
        || PMPI_Comm_get_attr(comm, keyval, &ci, &found) != MPI_SUCCESS || !found || !ci->keys)
        return NULL;
    const ml_sel_key *k = &ci->keys[ml_sel_class((unsigned long long)bytes)];
    if (learning_calls && (k->phase == ML_SEL_RACE || k->source == ML_SEL_LEARNED))
        *learning_calls = k->step;
    return k->phase == ML_SEL_CHOSEN ? modes[k->choice] : NULL;
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

/* MPILENS_COLL_ALLREDUCE: one of modes; unset: as MPILENS_COLL. */
static int parse_allreduce(const char *v, void *out, ml_buf_t *why)
{
    (void)out; (void)why;
    set.allreduce = -1;
    if (!v)
        return 0;
    for (int i = 0; modes[i]; i++)
        if (strcmp(v, modes[i]) == 0)
            return set.allreduce = i, 0;
    return -1;
}

static const ml_setting settings[] = {
    {.key = "coll", .type = ML_SET_CHOICE, .def = "mpi", .choices = all_modes, .out = &set.all,
     .help = "every collective the engine serves (today MPI_Allreduce): the MPI's own (mpi), "
             "or chosen at run time among it and the node-aware algorithms (adaptive); "
             "MPILENS_COLL_<NAME> overrides it per collective (docs/collectives.md)"},
    {.key = "coll_allreduce", .type = ML_SET_CUSTOM, .parse = parse_allreduce,
     .unset = "as MPILENS_COLL",
     .accepted = "one of mpi, twolevel, multileader, adaptive",
     .help = "MPI_Allreduce: the MPI's own (mpi), a node-aware algorithm forced on eligible "
             "calls, or chosen at run time (adaptive) (docs/collectives.md)"},
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

static int init(void)
{
    int wrank, wsize;
    memset(served, 0, sizeof served);
    declined = 0;
    mode = set.allreduce >= 0 ? set.allreduce : set.all ? A_ADAPTIVE : A_MPI;
    if (mode == A_MPI)
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
    if (mode == A_MPI || finalized)
        return;
    long long mine[A_N + 1], sum[A_N + 1];
    memcpy(mine, served, sizeof served);
    mine[A_N] = declined;
    PMPI_Reduce(mine, sum, A_N + 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    memcpy(tot_served, sum, sizeof tot_served);
    tot_declined = sum[A_N];
    pthread_mutex_lock(&live_lock); /* the keys of the communicators not freed */
    for (comm_info *ci = live; ci; ci = ci->next)
        keep_keys(ci);
    pthread_mutex_unlock(&live_lock);
    __atomic_add_fetch(&comm_gen, 1, __ATOMIC_RELAXED); /* the keys are gone */
    ml_sel_gather(&table);
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

/* {"allreduce":{"mode":"adaptive","forced":...,"rounds":5,"calls":{"mpi":N,
 *  "twolevel":N,"multileader":N},"declined":N,"choices":[...]}}: calls summed
 * over ranks; choices per communicator size and size class (record.c). */
static int section(ml_buf_t *b)
{
    if (mode == A_MPI)
        return 0;
    ml_buf_printf(b, "{\"allreduce\":{\"mode\":\"%s\"", modes[mode]);
    if (mode == A_ADAPTIVE)
        ml_buf_printf(b, ",\"rounds\":%d", set.learn);
    else
        ml_buf_printf(b, ",\"forced\":\"%s\"", modes[mode]);
    ml_buf_printf(b, ",\"calls\":{\"mpi\":%lld,\"twolevel\":%lld,\"multileader\":%lld},"
                  "\"declined\":%lld,\"choices_dropped\":%.0f,\"choices\":",
                  tot_served[A_MPI], tot_served[A_TWOLEVEL], tot_served[A_MULTILEADER],
                  tot_declined, table.dropped);
    ml_sel_json(b, &allreduce_client, &table);
    ml_buf_printf(b, "}}");
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
