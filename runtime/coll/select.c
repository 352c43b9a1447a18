/* Run-time Alltoall selection: MPILENS_ALLTOALL=native|adaptive|<algorithm>.
 *
 * Adaptive mode, per (communicator, block size m), three phases (REFERENCE §2):
 *   Grouping  first call with m: measure P-LogP parameters (plogp.c), predict
 *             every algorithm, keep those predicted at or below the mean of the
 *             fastest and slowest prediction (MPILENS_ALLTOALL_MODEL=off keeps
 *             all: the paper's "nomodel").  The MPI's own PMPI_Alltoall ("mpi")
 *             is an eighth candidate, never pruned (it has no model).  A
 *             matching tuning-file entry skips Grouping and Learning.
 *   Learning  N calls per candidate (MPILENS_ALLTOALL_LEARN, default 50),
 *             interleaved round-robin so that a drifting machine biases no
 *             candidate; time of a candidate = mean over all ranks (median
 *             over its turns); clear losers leave after one turn, at N/5
 *             and at N/2 calls (MPILENS_ALLTOALL_RACE).
 *   Running   the winner.  Every MPILENS_ALLTOALL_CHECK calls (default 1000)
 *             the mean time of the window (over all ranks) is compared with
 *             the learned time; beyond MPILENS_ALLTOALL_DRIFT (default 0.5 =
 *             +-50 %) Learning restarts without the candidates that were
 *             >= 20 % slower than the best.
 * Every decision is taken from values reduced over the communicator with
 * integer (exact) sums or max, so all ranks always run the same algorithm at
 * the same call, whatever order the MPI's Allreduce adds in.
 *
 * State: one struct per communicator (attached as an MPI attribute, released
 * by its delete callback), holding a private duplicate communicator for the
 * algorithms' traffic and a table of up to ML_SIZES message sizes (least
 * recently used entry recycled).  Entries are allocated on a size's first
 * call and the learning slots only while a size learns: a communicator that
 * runs one size costs about 0.5 KB besides its duplicate, not a full table
 * (programs with thousands of communicators).  Finished decisions of communicators whose
 * local rank is 0 go to a fixed process table; MPI_Finalize gathers them on
 * rank 0 of MPI_COMM_WORLD for the profile and the tuning file.
 *
 * Threads (MPI_THREAD_MULTIPLE): calls on different communicators may run at
 * the same time.  A communicator's state is only touched by calls on it (MPI
 * orders those), the remembered previous call is per thread; the per-process
 * tables (live states, finished records, kept zero-byte P-LogP parts) are
 * guarded by tab_lock, which is never held across an MPI call (a collective
 * under it would deadlock against a peer holding it for another
 * communicator, and the MPI's own locks must not nest inside it).
 */
#include "coll.h"
#include "../overrides.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ML_SIZES 32
#define ML_RECS 256
#define PRUNE_RELEARN 1.2

enum { MODE_NATIVE = ML_A2A_MODE_NATIVE, MODE_ADAPTIVE = ML_A2A_MODE_ADAPTIVE };
enum { PH_NEW, PH_LEARN, PH_RUN };
enum { SRC_LEARNED, SRC_TUNED, SRC_FORCED, SRC_SINGLE, SRC_REUSED };
static const char *const src_names[] = {"learned", "tuning-file", "forced", "single-candidate",
                                        "reused"};

typedef struct {
    int mode, learn_n, model, check_every, reuse, share;
    double drift, race[ML_A2A_RACE_POINTS];
} config_t;

static config_t cfg = {MODE_NATIVE, 50, 1, 1000, 1, 1, 0.5, {0}}; /* race: ML_A2A_RACE_DEFAULT, set by ml_coll_init */

/* Running: one call in RUN_SAMPLE is timed for the drift check (two clock
 * reads cost ~0.1 us here, a measurable share of a small Alltoall). */
#define RUN_SAMPLE 8

/* Learning keeps each candidate's time per block of calls in NSLOT slots
 * (block j of a candidate adds to slot j % NSLOT); a candidate's learned time
 * per call is the median over the slots of the rank-averaged slot means, so
 * one preempted block (an oversubscribed or shared node) cannot decide. */
#define NSLOT 16

typedef struct {
    long long bytes;
    unsigned long long used;       /* LRU tick; 0 = free slot */
    int phase, source;
    int ncand, cand[ML_A2A_NALG];
    int first_mask;                /* candidates of the first Grouping */
    int li;                        /* learning calls done in this round */
    int rp;                        /* this round's next race point (0..ML_A2A_RACE_POINTS) */
    double (*ts)[NSLOT];           /* local learning time per candidate and slot of blocks
                                      (ML_A2A_NALG rows, allocated while learning) */
    double tmin[ML_A2A_NALG];      /* local fastest call per candidate in its first turn */
    double mean[ML_A2A_NALG];      /* agreed mean per call per algorithm (last learning), <0 unknown */
    double group_local, learn_local;
    int alg;
    double ref;                    /* agreed mean per call of alg; <0: set at next check */
    double run_sum;                /* time of the sampled calls of this window */
    int run_cnt, run_n;            /* calls of this window, sampled calls */
    long long calls, learn_calls;
    double learn_s, group_s;       /* agreed (mean over ranks) */
    int relearns;
    int no_tune;                   /* drifted away from a tuning-file or reused choice */
} size_state;

/* Block sizes in power-of-two ranges, as in the tuning file: range 0 holds
 * 0 bytes, range k + 1 the sizes [2^k, 2^(k+1)); blocks stay below 2^30. */
#define ML_RANGES 32
static int range_of(long long bytes)
{
    int k = 0;
    while (k + 1 < ML_RANGES && bytes >= 1LL << k)
        k++;
    return k;
}

/* A private communicator for the algorithms' traffic, shared by every user
 * communicator over the same processes in the same order (below
 * MPI_THREAD_MULTIPLE).  Sharing is safe there: each engine call completes
 * all of its messages before it returns, and MPI requires all ranks to call
 * blocking collectives on overlapping communicators in one order, so calls on
 * two such communicators are as calls in sequence on one.  Under
 * MPI_THREAD_MULTIPLE two threads may run them at once: no sharing.  Equal
 * uids on all ranks mean the same duplicate (see get_state).  Under tab_lock. */
typedef struct shared_dup {
    MPI_Comm comm;
    int P, *wr, uid, refs;         /* uid: of the communicator that made it */
    struct shared_dup *next;
} shared_dup;
static shared_dup *shared;
static int next_uid; /* this process's next communicator uid (agreed in get_state) */
static int priv_live; /* private communicators held (shared or not) */

typedef struct comm_state {
    MPI_Comm dup;
    shared_dup *sd;                /* dup's sharing entry, NULL if dup is its own */
    int P, rank, rpn;
    int uid;                       /* agreed, unique per process (see get_state) */
    signed char reuse[ML_RANGES];  /* per size range: algorithm to reuse (agreed), -1 none */
    int *wr;                       /* world ranks in comm order, NULL if unknown */
    int have_p0;                   /* p0 holds the group's zero-byte P-LogP part */
    ml_plogp0 p0;
    unsigned long long tick;
    size_state *last;              /* entry of the previous call */
    size_state *s[ML_SIZES];       /* allocated on first use of a size */
    struct comm_state *next, *prev;
} comm_state;

/* a finished decision (fixed-size, gathered at MPI_Finalize as doubles) */
enum { R_P, R_RPN, R_BYTES, R_ALG, R_SRC, R_CALLS, R_LCALLS, R_LS, R_GS, R_RELEARN, R_MASK,
       R_REF, R_COMMS, R_MEAN0, R_NFIELD = R_MEAN0 + ML_A2A_NALG };
static double recs[ML_RECS][R_NFIELD];
static int nrecs, recs_dropped;
static double *all_recs; /* rank 0 after finalize */
static int n_all_recs;

static int keyval = MPI_KEYVAL_INVALID;
static comm_state *live;
static char machine[128];
static ml_tune_entry *tune_tab;
static int tune_n, tune_loaded;
static const char *tune_path;
static ml_netmodel nm_store, *netmodel; /* MPILENS_NETWORK_MODEL, read at MPI_Init; NULL: measure */

/* The previous call's communicator, arguments and decision: a repeated call
 * (the common case) skips the attribute lookup and the datatype queries.
 * Invalidated when any communicator state is released or any datatype freed
 * (the core's epoch; absent in stand-alone builds such as the benchmark). */
extern volatile unsigned ml_type_epoch __attribute__((weak));
static unsigned cs_gen = 1; /* atomic */
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct {
    MPI_Comm comm;
    MPI_Datatype st, rt;
    int sc, rc, inplace;
    unsigned cgen, tepoch;
    size_t bytes;
    struct comm_state *cs;
} fast_t;
static __thread fast_t fast;
static unsigned type_epoch(void) { return &ml_type_epoch ? ml_type_epoch : 0; }

/* ---------------- records ---------------- */
/* Adds record r to table tab of *n rows (at most max): merged into the row
 * with the same key (communicator size, ranks per node, block size, algorithm,
 * source) by adding its counts and times, else appended.  0, or -1 if full. */
static int merge_rec(double (*tab)[R_NFIELD], int *n, int max, const double *r)
{
    static const int sum[] = {R_CALLS, R_LCALLS, R_LS, R_GS, R_RELEARN, R_COMMS};
    for (int i = 0; i < *n; i++) {
        double *t = tab[i];
        if (t[R_P] == r[R_P] && t[R_RPN] == r[R_RPN] && t[R_BYTES] == r[R_BYTES] &&
            t[R_ALG] == r[R_ALG] && t[R_SRC] == r[R_SRC]) {
            for (size_t k = 0; k < sizeof sum / sizeof *sum; k++)
                t[sum[k]] += r[sum[k]];
            return 0;
        }
    }
    if (*n >= max)
        return -1;
    memmove(tab[(*n)++], r, sizeof(double) * R_NFIELD);
    return 0;
}

static void record_locked(const comm_state *cs, const size_state *e)
{
    double r[R_NFIELD];
    r[R_P] = cs->P;
    r[R_RPN] = cs->rpn;
    r[R_BYTES] = (double)e->bytes;
    r[R_ALG] = e->phase == PH_RUN ? e->alg : -1; /* -1: finished while learning */
    r[R_SRC] = e->source;
    r[R_CALLS] = (double)e->calls;
    r[R_LCALLS] = (double)e->learn_calls;
    r[R_LS] = e->learn_s;
    r[R_GS] = e->group_s;
    r[R_RELEARN] = e->relearns;
    r[R_MASK] = e->first_mask;
    r[R_REF] = e->ref;
    r[R_COMMS] = 1;
    for (int a = 0; a < ML_A2A_NALG; a++)
        r[R_MEAN0 + a] = e->mean[a];
    if (merge_rec(recs, &nrecs, ML_RECS, r))
        recs_dropped++;
}

static void record(const comm_state *cs, const size_state *e)
{
    if (cs->rank != 0 || e->used == 0 || e->calls == 0)
        return;
    pthread_mutex_lock(&tab_lock);
    record_locked(cs, e);
    pthread_mutex_unlock(&tab_lock);
}

/* ---------------- communicator state ---------------- */
/* Groups of processes as world ranks in communicator order (the key of the
 * kept P-LogP parts and of the shared duplicates). */
static int same_group(const int *a, int P, const int *b, int Q)
{
    return P == Q && memcmp(a, b, sizeof(int) * (size_t)P) == 0;
}

static int *copy_group(const int *wr, int P)
{
    int *c = malloc(sizeof(int) * (size_t)P);
    return c ? memcpy(c, wr, sizeof(int) * (size_t)P) : NULL;
}

/* Under tab_lock: the sharing entry of group wr, or NULL. */
static shared_dup *shared_find(const int *wr, int P)
{
    for (shared_dup *d = shared; d; d = d->next)
        if (same_group(d->wr, d->P, wr, P))
            return d;
    return NULL;
}

static void entry_free(const comm_state *cs, size_state *e)
{
    if (!e)
        return;
    record(cs, e);
    free(e->ts);
    free(e);
}

static void state_release(comm_state *cs)
{
    __atomic_add_fetch(&cs_gen, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < ML_SIZES; i++)
        entry_free(cs, cs->s[i]);
    pthread_mutex_lock(&tab_lock);
    if (cs->prev)
        cs->prev->next = cs->next;
    else
        live = cs->next;
    if (cs->next)
        cs->next->prev = cs->prev;
    /* the duplicate goes with its last user */
    int own = !cs->sd || --cs->sd->refs == 0;
    if (own && cs->sd) {
        shared_dup **p = &shared;
        while (*p != cs->sd)
            p = &(*p)->next;
        *p = cs->sd->next;
    }
    if (own)
        priv_live--;
    pthread_mutex_unlock(&tab_lock);
    int fin = 0;
    PMPI_Finalized(&fin);
    if (!fin && own && cs->dup != MPI_COMM_NULL)
        PMPI_Comm_free(&cs->dup);
    if (own && cs->sd) {
        free(cs->sd->wr);
        free(cs->sd);
    }
    free(cs->wr);
    free(cs);
}

static int delete_fn(MPI_Comm comm, int kv, void *val, void *extra)
{
    (void)comm; (void)kv; (void)extra;
    state_release((comm_state *)val);
    return MPI_SUCCESS;
}

static void create_keyval(void)
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &keyval, NULL);
}

static int ensure_keyval(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, create_keyval);
    return keyval != MPI_KEYVAL_INVALID ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* Node of every rank of MPI_COMM_WORLD (the world rank of its node's first
 * rank), computed once at MPI_Init so that a communicator's ranks per node
 * need no MPI_Comm_split_type (tens to hundreds of microseconds on every new
 * communicator, a share of a short run of small Alltoalls). */
static int *world_node;

static void nodes_init(void)
{
    MPI_Comm node;
    int wr, leader, world_size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wr);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    leader = wr;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        PMPI_Bcast(&leader, 1, MPI_INT, 0, node);
        PMPI_Comm_free(&node);
    }
    free(world_node);
    world_node = malloc(sizeof *world_node * (size_t)world_size);
    int ok = world_node != NULL, all;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all)
        PMPI_Allgather(&leader, 1, MPI_INT, world_node, 1, MPI_INT, MPI_COMM_WORLD);
    else {
        free(world_node);
        world_node = NULL;
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* World ranks of comm's ranks in comm order (malloc'd), or NULL (a rank
 * outside MPI_COMM_WORLD, no memory).  Local. */
static int *world_ranks(MPI_Comm comm, int P)
{
    MPI_Group g, wg;
    int wsize;
    PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int *in = malloc(sizeof(int) * (size_t)P), *out = malloc(sizeof(int) * (size_t)P);
    if (!in || !out) {
        free(in);
        free(out);
        return NULL;
    }
    for (int i = 0; i < P; i++)
        in[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int rc = PMPI_Group_translate_ranks(g, P, in, wg, out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    free(in);
    for (int i = 0; rc == MPI_SUCCESS && i < P; i++)
        if (out[i] == MPI_UNDEFINED || out[i] < 0 || out[i] >= wsize)
            rc = MPI_ERR_RANK;
    if (rc != MPI_SUCCESS) {
        free(out);
        return NULL;
    }
    return out;
}

/* Largest number of the P ranks wr (world ranks) on one node, from the world
 * table; -1 without table or ranks.  Local. */
static int rpn_from_table(const int *wr, int P)
{
    int *node = world_node && wr ? malloc(sizeof(int) * (size_t)P) : NULL, best = 0;
    if (!node)
        return -1;
    for (int i = 0; i < P; i++)
        node[i] = world_node[wr[i]];
    qsort(node, (size_t)P, sizeof *node, cmp_int);
    for (int i = 0, run = 0; i < P; i++) {
        run = i > 0 && node[i] == node[i - 1] ? run + 1 : 1;
        if (run > best)
            best = run;
    }
    free(node);
    return best;
}

/* The zero-byte part of the P-LogP parameters per group of processes (world
 * ranks in communicator order): measured on the group's first Grouping,
 * reused by its later message sizes and by every communicator over the same
 * processes (a duplicate, a re-created one).  A communicator uses it only if
 * all its ranks still hold the same measurement (agreed in get_state), so
 * all measure or none, and all predict from the same values. */
#define P0_CACHE 8
typedef struct {
    int P, *wr;
    int uid;                       /* of the communicator that measured it */
    ml_plogp0 z;
    unsigned long long used;
} p0_entry;
static p0_entry p0_cache[P0_CACHE];
static unsigned long long p0_tick;

/* both under tab_lock */
static p0_entry *p0_find(const int *wr, int P)
{
    for (int i = 0; wr && i < P0_CACHE; i++) {
        p0_entry *c = &p0_cache[i];
        if (c->used && same_group(c->wr, c->P, wr, P))
            return c;
    }
    return NULL;
}

static void p0_store(const int *wr, int P, int uid, const ml_plogp0 *z)
{
    p0_entry *c = p0_find(wr, P);
    if (!c) {
        c = &p0_cache[0];
        for (int i = 1; i < P0_CACHE; i++)
            if (p0_cache[i].used < c->used)
                c = &p0_cache[i];
        int *copy = copy_group(wr, P);
        if (!copy)
            return;
        free(c->wr);
        c->wr = copy;
        c->P = P;
    }
    c->z = *z;
    c->uid = uid;
    c->used = ++p0_tick;
}

/* The kept zero-byte part of group wr into z: the uid of the communicator
 * that measured it, or -1 if none is held. */
static int p0_get(const int *wr, int P, ml_plogp0 *z)
{
    pthread_mutex_lock(&tab_lock);
    p0_entry *c = p0_find(wr, P);
    int uid = c ? c->uid : -1;
    if (c) {
        *z = c->z;
        c->used = ++p0_tick;
    }
    pthread_mutex_unlock(&tab_lock);
    return uid;
}

/* Choices learned in this run, per communicator size and ranks per node (the
 * tuning file's key, without a file): a later communicator with the same key
 * starts in Running.  Ranks hold different choices when they took part in
 * different communicators, so a communicator reuses a size range only if all
 * its ranks hold the same choice for it (agreed in get_state's reduction: the
 * whole row, exact).  Under tab_lock; KEPT_KEYS keys, later ones not kept. */
#define KEPT_KEYS 32
static struct {
    int P, rpn;
    signed char alg[ML_RANGES];
} kept[KEPT_KEYS];
static int nkept;

static void keep_choice(int P, int rpn, long long bytes, int alg)
{
    pthread_mutex_lock(&tab_lock);
    int i = 0;
    while (i < nkept && (kept[i].P != P || kept[i].rpn != rpn))
        i++;
    if (i == nkept && nkept < KEPT_KEYS) {
        kept[nkept].P = P;
        kept[nkept].rpn = rpn;
        memset(kept[nkept].alg, -1, sizeof kept[nkept].alg);
        nkept++;
    }
    if (i < nkept)
        kept[i].alg[range_of(bytes)] = (signed char)alg;
    pthread_mutex_unlock(&tab_lock);
}

/* This rank's kept row for (P, rpn) into alg (-1: none). */
static void kept_row(int P, int rpn, int alg[ML_RANGES])
{
    for (int j = 0; j < ML_RANGES; j++)
        alg[j] = -1;
    pthread_mutex_lock(&tab_lock);
    for (int i = 0; i < nkept; i++)
        if (kept[i].P == P && kept[i].rpn == rpn)
            for (int j = 0; j < ML_RANGES; j++)
                alg[j] = kept[i].alg[j];
    pthread_mutex_unlock(&tab_lock);
}

/* Collective over comm on first use (every rank is in the same Alltoall call). */
static comm_state *get_state(MPI_Comm comm)
{
    void *val;
    int flag = 0;
    if (ensure_keyval() != MPI_SUCCESS)
        return NULL;
    PMPI_Comm_get_attr(comm, keyval, &val, &flag);
    if (flag)
        return (comm_state *)val;
    comm_state *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL; /* only this rank; collectives below would hang others: abort */
    PMPI_Comm_size(comm, &cs->P);
    PMPI_Comm_rank(comm, &cs->rank);
    /* One reduction on comm itself (every rank is in this call on comm, so
     * it is ordered like any collective on comm), before the private
     * duplicate exists, agrees on (max, and max of the negated = min):
     * - the communicator's uid: the largest of the ranks' next uids, so a uid
     *   names the same communicator set-up on all its ranks and no other;
     * - ranks per node: from the world table; a rank that cannot use it (-1:
     *   ranks from another MPI_COMM_WORLD) makes everybody split by node;
     * - the group's kept zero-byte P-LogP part: used only if every rank holds
     *   the one measured on the same communicator (same uid).  Threads on
     *   other communicators over the group may have replaced it in a
     *   different order on each rank;
     * - the kept choices all ranks hold alike, per size range;
     * - the shared duplicate: used only if every rank holds the same one. */
    cs->wr = world_ranks(comm, cs->P);
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    int share = cfg.share && cs->wr && level < MPI_THREAD_MULTIPLE;
    ml_plogp0 z0;
    enum { H_UID, H_RPN, H_NRPN, H_P0, H_NP0, H_DUP, H_NDUP, N_HEAD,
           N_RED = N_HEAD + 2 * ML_RANGES };
    int nsz[N_RED], agreed[N_RED], *row = nsz + N_HEAD;
    shared_dup *sd = NULL;
    nsz[H_RPN] = rpn_from_table(cs->wr, cs->P);
    nsz[H_P0] = p0_get(cs->wr, cs->P, &z0);
    nsz[H_DUP] = -1;
    pthread_mutex_lock(&tab_lock);
    nsz[H_UID] = next_uid;
    if (share && (sd = shared_find(cs->wr, cs->P))) {
        sd->refs++; /* held while the others are asked */
        nsz[H_DUP] = sd->uid;
    }
    pthread_mutex_unlock(&tab_lock);
    kept_row(cs->P, nsz[H_RPN], row);
    if (!cfg.reuse || nsz[H_RPN] < 0)
        memset(row, -1, sizeof(int) * ML_RANGES);
    for (int j = 0; j < ML_RANGES; j++)
        row[ML_RANGES + j] = -row[j];
    for (int j = H_RPN; j < N_HEAD; j += 2)
        nsz[j + 1] = -nsz[j];
    PMPI_Allreduce(nsz, agreed, N_RED, MPI_INT, MPI_MAX, comm);
    cs->uid = agreed[H_UID];
    cs->rpn = agreed[H_RPN];
    int rpn_ok = agreed[H_RPN] > 0 && agreed[H_RPN] == -agreed[H_NRPN];
    for (int j = 0; j < ML_RANGES; j++) {
        int hi = agreed[N_HEAD + j], lo = -agreed[N_HEAD + ML_RANGES + j];
        cs->reuse[j] = (signed char)(rpn_ok && hi == lo ? hi : -1);
    }
    if (agreed[H_P0] >= 0 && agreed[H_P0] == -agreed[H_NP0]) {
        cs->have_p0 = 1;
        cs->p0 = z0;
    }
    pthread_mutex_lock(&tab_lock);
    if (cs->uid >= next_uid)
        next_uid = cs->uid + 1;
    if (agreed[H_DUP] >= 0 && agreed[H_DUP] == -agreed[H_NDUP]) { /* everybody holds sd */
        cs->sd = sd;
        cs->dup = sd->comm;
    } else {
        if (sd)
            sd->refs--; /* back to its other users' count */
        priv_live++;
    }
    pthread_mutex_unlock(&tab_lock);
    if (!cs->sd) {
        PMPI_Comm_dup(comm, &cs->dup);
        /* errors come back to mlo_MPI_Alltoall, which raises them on the user's
         * communicator (whose handler the duplicate may not have: shared) */
        PMPI_Comm_set_errhandler(cs->dup, MPI_ERRORS_RETURN);
        int *w = share ? copy_group(cs->wr, cs->P) : NULL;
        shared_dup *n = w ? malloc(sizeof *n) : NULL;
        if (n) {
            *n = (shared_dup){cs->dup, cs->P, w, cs->uid, 1, NULL};
            pthread_mutex_lock(&tab_lock);
            n->next = shared;
            shared = cs->sd = n;
            pthread_mutex_unlock(&tab_lock);
        } else
            free(w); /* no memory: this duplicate is not shared */
    }
    if (!rpn_ok) { /* someone had -1 */
        MPI_Comm node;
        int n = 1;
        if (PMPI_Comm_split_type(cs->dup, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
            MPI_SUCCESS) {
            PMPI_Comm_size(node, &n);
            PMPI_Comm_free(&node);
        }
        PMPI_Allreduce(&n, &cs->rpn, 1, MPI_INT, MPI_MAX, cs->dup);
    }
    pthread_mutex_lock(&tab_lock);
    cs->next = live;
    if (live)
        live->prev = cs;
    live = cs;
    pthread_mutex_unlock(&tab_lock);
    PMPI_Comm_set_attr(comm, keyval, cs);
    return cs;
}

/* The entry of block size bytes: found, or new in the first free slot (slots
 * fill in order and are only emptied all together), or recycled from the
 * least recently used one.  NULL: no memory. */
static size_state *lookup(comm_state *cs, long long bytes)
{
    cs->tick++;
    if (cs->last && cs->last->bytes == bytes && cs->last->used) {
        cs->last->used = cs->tick;
        return cs->last;
    }
    int v = 0;
    for (int i = 0; i < ML_SIZES; i++) {
        size_state *e = cs->s[i];
        if (!e) {
            v = i;
            break;
        }
        if (e->used && e->bytes == bytes) {
            e->used = cs->tick;
            return cs->last = e;
        }
        if (e->used < cs->s[v]->used)
            v = i;
    }
    /* deterministic on every rank: same call sequence, same table */
    entry_free(cs, cs->s[v]);
    size_state *victim = cs->s[v] = calloc(1, sizeof *victim);
    if (!victim)
        return cs->last = NULL;
    victim->bytes = bytes;
    victim->used = cs->tick;
    victim->phase = PH_NEW;
    victim->ref = -1;
    for (int a = 0; a < ML_A2A_NALG; a++)
        victim->mean[a] = -1;
    return cs->last = victim;
}

/* ---------------- phases ---------------- */
static int tuned_choice(const comm_state *cs, long long bytes)
{
    for (int i = 0; i < tune_n; i++) {
        const ml_tune_entry *t = &tune_tab[i];
        if (t->comm_size == cs->P && t->ranks_per_node == cs->rpn && bytes >= t->lo &&
            bytes <= t->hi && strcmp(t->machine, machine) == 0)
            return t->alg;
    }
    return -1;
}

/* Memory for the engine's state ran out on this rank: the other ranks are
 * inside the same collective and cannot be told, so the job ends (as an MPI
 * does when it runs out of memory inside a collective). */
static int out_of_memory(MPI_Comm comm)
{
    fprintf(stderr, "mpilens: out of memory for the adaptive Alltoall state; aborting\n");
    return PMPI_Abort(comm, 1);
}

static int start_learning(comm_state *cs, size_state *e)
{
    if (!e->ts && !(e->ts = malloc(sizeof(double[ML_A2A_NALG][NSLOT]))))
        return out_of_memory(cs->dup);
    e->phase = PH_LEARN;
    e->li = 0;
    e->rp = 0;
    e->learn_local = 0;
    memset(e->ts, 0, sizeof(double[ML_A2A_NALG][NSLOT]));
    for (int a = 0; a < ML_A2A_NALG; a++)
        e->tmin[a] = 1e300;
    return MPI_SUCCESS;
}

static int grouping(comm_state *cs, size_state *e)
{
    /* this run's choice (learned on this or an earlier communicator), then the file's */
    int reused = e->no_tune ? -1 : cs->reuse[range_of(e->bytes)];
    int t = e->no_tune || reused >= 0 ? -1 : tuned_choice(cs, e->bytes);
    if (reused >= 0 || t >= 0) {
        e->phase = PH_RUN;
        e->source = reused >= 0 ? SRC_REUSED : SRC_TUNED;
        e->alg = reused >= 0 ? reused : t;
        e->ref = -1;
        return MPI_SUCCESS;
    }
    e->ncand = 0;
    if (cfg.model && cs->P > 1) {
        ml_plogp p;
        if (netmodel) { /* measured once per machine by `mpilens bench logp --model` */
            ml_netmodel_params(netmodel, (size_t)e->bytes, &p);
        } else {
            double t0 = PMPI_Wtime();
            ml_plogp0 z;
            int rc = ml_plogp_measure(cs->dup, (size_t)e->bytes, &p, cs->have_p0 ? &cs->p0 : NULL, &z);
            if (rc != MPI_SUCCESS)
                return rc;
            e->group_local += PMPI_Wtime() - t0;
            if (!cs->have_p0) {
                cs->have_p0 = 1;
                cs->p0 = z;
                if (cs->wr) {
                    pthread_mutex_lock(&tab_lock);
                    p0_store(cs->wr, cs->P, cs->uid, &z);
                    pthread_mutex_unlock(&tab_lock);
                }
            }
        }
        double pred[ML_A2A_NALG], lo = 0, hi = 0;
        for (int a = 0; a < ML_A2A_MPI; a++) {
            pred[a] = ml_plogp_predict(a, cs->P, &p);
            if (a == 0 || pred[a] < lo)
                lo = pred[a];
            if (a == 0 || pred[a] > hi)
                hi = pred[a];
        }
        double thr = (lo + hi) / 2;
        for (int a = 0; a < ML_A2A_NALG; a++)
            if (a == ML_A2A_MPI || pred[a] <= thr) /* the MPI's own: no model, always kept */
                e->cand[e->ncand++] = a;
    } else {
        for (int a = 0; a < ML_A2A_NALG; a++)
            e->cand[e->ncand++] = a;
    }
    if (cs->P == 1)
        e->ncand = 1; /* nothing to choose between */
    for (int i = 0; i < e->ncand; i++)
        e->first_mask |= 1 << e->cand[i];
    e->source = SRC_LEARNED;
    if (e->ncand == 1) {
        e->phase = PH_RUN;
        e->source = SRC_SINGLE;
        e->alg = e->cand[0];
        e->ref = -1;
        return MPI_SUCCESS;
    }
    return start_learning(cs, e);
}

/* Learning runs the candidates in turn, learn_block() consecutive calls each:
 * short enough that a drifting machine biases none, long enough that each is
 * timed in the steady state it will run in (a call right after a different
 * algorithm inherits its skew between ranks). */
static int learn_block(void)
{
    return cfg.learn_n >= 25 && cfg.learn_n % 5 == 0 ? 5 : 1;
}

/* Race point j: calls per candidate after which candidates at or above
 * race[j] x the best leave (0: no such point).  Points sit after one turn,
 * at N/5 and at N/2 calls, in whole turns, at least one, strictly increasing
 * and before N; a point that coincides with an earlier one is dropped (the
 * earlier, looser factor stands). */
static int race_calls(int j)
{
    static const int frac[ML_A2A_RACE_POINTS] = {0, 5, 2}; /* 0: one turn */
    int N = cfg.learn_n, b = learn_block(), prev = 0;
    for (int i = 0; i <= j; i++) {
        int k = frac[i] ? N / frac[i] / b * b : b;
        if (k < b)
            k = b;
        if (i == j)
            return cfg.race[j] > 0 && k > prev && k < N ? k : 0;
        if (cfg.race[i] > 0 && k > prev && k < N)
            prev = k;
    }
    return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Agreed learned time per call of each candidate after k calls each (into t),
 * plus nx <= ML_A2A_NALG further values summed over the ranks (x, in place). */
static int agreed_times(comm_state *cs, size_state *e, int k, double *t, double *x, int nx)
{
    double v[ML_A2A_NALG * (NSLOT + 1)], S[ML_A2A_NALG * (NSLOT + 1)]; /* + nx <= ML_A2A_NALG */
    int n = e->ncand * NSLOT, b = learn_block(), nb = k / b;
    memcpy(v, e->ts, sizeof(double) * (size_t)n); /* rows of the first ncand candidates */
    for (int j = 0; j < nx; j++)
        v[n + j] = x[j];
    int rc = ml_sum_exact(v, S, n + nx, cs->dup);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < nx; j++)
        x[j] = S[n + j];
    int used = nb < NSLOT ? nb : NSLOT;
    for (int i = 0; i < e->ncand; i++) {
        double m[NSLOT];
        for (int j = 0; j < used; j++)
            m[j] = S[i * NSLOT + j] / cs->P / (((nb - 1 - j) / NSLOT + 1) * b);
        qsort(m, (size_t)used, sizeof *m, cmp_dbl);
        t[i] = used % 2 ? m[used / 2] : (m[used / 2 - 1] + m[used / 2]) / 2;
    }
    return MPI_SUCCESS;
}

/* Early elimination (beyond REFERENCE §2): at each race point the agreed
 * times are compared and the clear losers stop learning; the others go on to
 * N calls each.  After the first turn (point 0) a candidate's time is each
 * rank's fastest call of that turn, averaged over the ranks: one turn's mean
 * is at the mercy of a single preempted or cold call (first contact with a
 * peer), its fastest call is not: to look slow, every call of the turn must
 * be slow.  Dropped candidates keep their partial time (turn means; profile,
 * re-learning pruning). */
static int race(comm_state *cs, size_state *e, int k, double factor, int by_fastest)
{
    double t[ML_A2A_NALG], x[ML_A2A_NALG];
    memcpy(x, e->tmin, sizeof x);
    int rc = agreed_times(cs, e, k, t, x, by_fastest ? e->ncand : 0);
    if (rc != MPI_SUCCESS)
        return rc;
    const double *cmp = by_fastest ? x : t; /* x: summed over ranks, same scale for all */
    double best = cmp[0];
    for (int i = 1; i < e->ncand; i++)
        if (cmp[i] < best)
            best = cmp[i];
    int n = 0;
    for (int i = 0; i < e->ncand; i++) {
        if (cmp[i] >= factor * best) {
            e->mean[e->cand[i]] = t[i];
            continue;
        }
        e->cand[n] = e->cand[i];
        e->tmin[n] = e->tmin[i];
        memmove(e->ts[n++], e->ts[i], sizeof e->ts[i]);
    }
    e->ncand = n;
    e->li = k * n;
    return MPI_SUCCESS;
}

/* End of Learning: agree on the learned times and pick the fastest. */
static int finish_learning(comm_state *cs, size_state *e, int each)
{
    double t[ML_A2A_NALG], x[2] = {e->learn_local, e->group_local};
    int rc = agreed_times(cs, e, each, t, x, 2);
    if (rc != MPI_SUCCESS)
        return rc;
    int best = 0;
    for (int i = 0; i < e->ncand; i++) {
        e->mean[e->cand[i]] = t[i];
        if (t[i] < t[best])
            best = i;
    }
    e->alg = e->cand[best];
    e->ref = e->mean[e->alg];
    free(e->ts); /* the learned means stay, the slots go */
    e->ts = NULL;
    if (cfg.reuse) { /* agreed by construction: every rank finishes at this call */
        cs->reuse[range_of(e->bytes)] = (signed char)e->alg;
        keep_choice(cs->P, cs->rpn, e->bytes, e->alg);
    }
    e->learn_s += x[0] / cs->P;
    e->group_s += x[1] / cs->P;
    e->group_local = 0;
    e->phase = PH_RUN;
    e->run_sum = 0;
    e->run_cnt = e->run_n = 0;
    return MPI_SUCCESS;
}

/* Periodic check in Running: agreed mean of the window vs the learned time. */
static int check_drift(comm_state *cs, size_state *e)
{
    double s;
    int rc = ml_sum_exact(&e->run_sum, &s, 1, cs->dup);
    if (rc != MPI_SUCCESS)
        return rc;
    double mean = s / cs->P / (e->run_n > 0 ? e->run_n : 1);
    e->run_sum = 0;
    e->run_cnt = e->run_n = 0;
    if (e->ref < 0) {
        e->ref = mean; /* tuned or single: this window is the reference */
        return MPI_SUCCESS;
    }
    if (mean <= e->ref * (1 + cfg.drift) && mean >= e->ref * (1 - cfg.drift))
        return MPI_SUCCESS;
    e->relearns++;
    if (e->source != SRC_LEARNED) { /* no learned times to prune with: full Grouping */
        e->source = SRC_LEARNED;
        e->phase = PH_NEW;
        e->no_tune = 1;
        e->ref = -1;
        return MPI_SUCCESS;
    }
    double best = e->mean[e->alg];
    int n = 0;
    for (int i = 0; i < e->ncand; i++) {
        int a = e->cand[i];
        if (e->mean[a] >= 0 && e->mean[a] < best * PRUNE_RELEARN)
            e->cand[n++] = a;
    }
    e->ncand = n;
    if (n <= 1) { /* the winner stands alone: the drifted time is the new reference */
        e->ref = mean;
        e->mean[e->alg] = mean;
        return MPI_SUCCESS;
    }
    return start_learning(cs, e);
}

static __thread int last_learning;
int ml_a2a_last_call_learning(void) { return last_learning; }

static int adaptive(comm_state *cs, size_state *e, const void *sendbuf, int sendcount,
                    MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype)
{
    int rc;
    e->calls++;
    if (e->phase == PH_NEW && (rc = grouping(cs, e)) != MPI_SUCCESS)
        return rc;
    last_learning = e->phase != PH_RUN; /* after Grouping: a tuned or single candidate runs at once */
    if (e->phase == PH_LEARN) {
        int i = (e->li / learn_block()) % e->ncand;
        double t0 = PMPI_Wtime();
        rc = ml_a2a_algos[e->cand[i]](sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                      recvtype, cs->dup);
        double dt = PMPI_Wtime() - t0;
        int turn = e->li / learn_block() / e->ncand;
        e->ts[i][turn % NSLOT] += dt;
        if (turn == 0 && dt < e->tmin[i])
            e->tmin[i] = dt;
        e->learn_local += dt;
        e->learn_calls++;
        int rc2 = MPI_SUCCESS, raced = 0;
        ++e->li;
        while (e->rp < ML_A2A_RACE_POINTS) {
            int k = race_calls(e->rp);
            if (k > 0 && e->li < e->ncand * k)
                break; /* this point is still ahead */
            if (k > 0 && e->li == e->ncand * k) {
                rc2 = race(cs, e, k, cfg.race[e->rp], e->rp == 0);
                raced = 1;
            }
            e->rp++;
            if (raced)
                break;
        }
        if (rc2 == MPI_SUCCESS && raced && e->ncand == 1)
            rc2 = finish_learning(cs, e, e->li); /* the race left one: it has won */
        else if (rc2 == MPI_SUCCESS && e->li == e->ncand * cfg.learn_n)
            rc2 = finish_learning(cs, e, cfg.learn_n);
        return rc == MPI_SUCCESS ? rc2 : rc;
    }
    if (cfg.check_every <= 0)
        return ml_a2a_algos[e->alg](sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    cs->dup);
    int timed = e->run_cnt % RUN_SAMPLE == 0;
    double t0 = timed ? PMPI_Wtime() : 0;
    rc = ml_a2a_algos[e->alg](sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, cs->dup);
    if (timed) {
        e->run_sum += PMPI_Wtime() - t0;
        e->run_n++;
    }
    if (++e->run_cnt >= cfg.check_every) {
        int rc2 = check_drift(cs, e);
        if (rc == MPI_SUCCESS)
            rc = rc2;
    }
    return rc;
}

int mlo_MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    size_t bytes;
    if (cfg.mode == MODE_NATIVE)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    last_learning = 0;
    int inplace = sendbuf == MPI_IN_PLACE;
    comm_state *cs;
    unsigned gen = __atomic_load_n(&cs_gen, __ATOMIC_RELAXED);
    if (fast.cs && fast.comm == comm && fast.cgen == gen && fast.tepoch == type_epoch() &&
        fast.rc == recvcount && fast.rt == recvtype && fast.inplace == inplace &&
        (inplace || (fast.sc == sendcount && fast.st == sendtype))) {
        cs = fast.cs;
        bytes = fast.bytes;
    } else {
        if (!ml_a2a_supported(sendbuf, sendcount, sendtype, recvcount, recvtype, comm, &bytes))
            return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        if (!(cs = get_state(comm)))
            return PMPI_Abort(comm, 1);
        fast = (fast_t){comm, sendtype, recvtype, sendcount, recvcount, inplace, gen,
                        type_epoch(), bytes, cs};
    }
    size_state *e = lookup(cs, (long long)bytes);
    if (!e)
        return out_of_memory(cs->dup);
    int rc;
    if (cfg.mode >= 0) {
        e->calls++;
        e->phase = PH_RUN;
        e->alg = cfg.mode;
        e->source = SRC_FORCED;
        rc = ml_a2a_algos[cfg.mode](sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    cs->dup);
    } else
        rc = adaptive(cs, e, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    if (rc != MPI_SUCCESS) /* as the MPI would for its own MPI_Alltoall on comm */
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* The state of (comm, block size), or NULL (no engine state, unknown size). */
static const size_state *find_size(MPI_Comm comm, long long block_bytes)
{
    void *val;
    int flag = 0;
    if (keyval == MPI_KEYVAL_INVALID)
        return NULL;
    PMPI_Comm_get_attr(comm, keyval, &val, &flag);
    if (!flag)
        return NULL;
    comm_state *cs = val;
    for (int i = 0; i < ML_SIZES && cs->s[i]; i++)
        if (cs->s[i]->used && cs->s[i]->bytes == block_bytes)
            return cs->s[i];
    return NULL;
}

/* Public query (exported): the algorithm in use for comm and block size, or
 * NULL if none yet (native mode, unknown size, or still learning). */
__attribute__((visibility("default")))
const char *mpilens_alltoall_choice(MPI_Comm comm, long long block_bytes, long long *learning_calls)
{
    const size_state *e = find_size(comm, block_bytes);
    if (!e)
        return NULL;
    if (learning_calls)
        *learning_calls = e->learn_calls;
    return e->phase == PH_RUN ? ml_a2a_names[e->alg] : NULL;
}

/* Public query (exported): how many private communicators the engine holds
 * in this process (one per group of processes while sharing, else one per
 * communicator that called MPI_Alltoall in an engine mode). */
__attribute__((visibility("default")))
int mpilens_alltoall_private_comms(void)
{
    pthread_mutex_lock(&tab_lock);
    int n = priv_live;
    pthread_mutex_unlock(&tab_lock);
    return n;
}

int ml_a2a_state_info(MPI_Comm comm, long long block_bytes, ml_a2a_info *out)
{
    const size_state *e = find_size(comm, block_bytes);
    if (!e)
        return -1;
    out->grouping_s = e->group_s;
    out->learning_s = e->learn_s;
    out->cand_mask = e->first_mask;
    out->learning_calls = e->learn_calls;
    for (int a = 0; a < ML_A2A_NALG; a++)
        out->mean[a] = e->mean[a];
    return 0;
}

/* ---------------- configuration ---------------- */
/* The core's lookup (environment, then the config file); absent when these
 * sources are built into a stand-alone program such as the benchmark. */
const char *ml_config_get(const char *key) __attribute__((weak));

static const char *setting(const char *key, const char *env)
{
    const char *v = ml_config_get ? ml_config_get(key) : getenv(env);
    return v && *v ? v : NULL;
}

static void list_modes(char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "native, adaptive");
    for (int a = 0; a < ML_A2A_NALG && n < len; a++)
        n += (size_t)snprintf(buf + n, len - n, ", %s", ml_a2a_names[a]);
}

static int parse_int(const char *name, const char *v, int lo, int *out, const char *what)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > 100000000) {
        fprintf(stderr, "mpilens: %s='%s' is invalid: expected %s\n", name, v, what);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int on_off(const char *key, const char *name, int *out)
{
    const char *v = setting(key, name);
    if (!v)
        return 0;
    if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0) {
        *out = v[1] == 'n';
        return 0;
    }
    fprintf(stderr, "mpilens: %s='%s' is invalid: expected on or off\n", name, v);
    return -1;
}

/* Reads the environment on this rank; returns 0 or -1 after printing one line. */
static int read_env(config_t *c)
{
    const char *v;
    if ((v = setting("alltoall", "MPILENS_ALLTOALL"))) {
        if (strcmp(v, "native") == 0)
            c->mode = MODE_NATIVE;
        else if (strcmp(v, "adaptive") == 0)
            c->mode = MODE_ADAPTIVE;
        else if ((c->mode = ml_a2a_find(v)) < 0) {
            char acc[256];
            list_modes(acc, sizeof acc);
            fprintf(stderr, "mpilens: MPILENS_ALLTOALL='%s' is invalid: expected one of %s\n", v, acc);
            return -1;
        }
    }
    if ((v = setting("alltoall_learn", "MPILENS_ALLTOALL_LEARN")) &&
        parse_int("MPILENS_ALLTOALL_LEARN", v, 1, &c->learn_n, "an integer >= 1 (calls per candidate)"))
        return -1;
    if ((v = setting("alltoall_check", "MPILENS_ALLTOALL_CHECK")) &&
        parse_int("MPILENS_ALLTOALL_CHECK", v, 0, &c->check_every,
                  "an integer >= 0 (calls between drift checks, 0 = never)"))
        return -1;
    if (on_off("alltoall_model", "MPILENS_ALLTOALL_MODEL", &c->model) ||
        on_off("alltoall_reuse", "MPILENS_ALLTOALL_REUSE", &c->reuse) ||
        on_off("alltoall_share", "MPILENS_ALLTOALL_SHARE", &c->share))
        return -1;
    if ((v = setting("alltoall_race", "MPILENS_ALLTOALL_RACE")) && ml_a2a_parse_race(v, c->race)) {
        fprintf(stderr, "mpilens: MPILENS_ALLTOALL_RACE='%s' is invalid: expected off, a factor F, "
                "F1,F2 or F0,F1,F2, each in (1, 1000] (learning drops candidates this many "
                "times slower than the best after one turn, N/5 and N/2 calls)\n", v);
        return -1;
    }
    if ((v = setting("alltoall_drift", "MPILENS_ALLTOALL_DRIFT"))) {
        char *end;
        double d = strtod(v, &end);
        if (end == v || *end || !(d > 0 && d <= 100)) {
            fprintf(stderr, "mpilens: MPILENS_ALLTOALL_DRIFT='%s' is invalid: expected a number "
                    "in (0, 100] (relative change that triggers re-learning)\n", v);
            return -1;
        }
        c->drift = d;
    }
    return 0;
}

int ml_a2a_parse_race(const char *v, double race[ML_A2A_RACE_POINTS])
{
    double r[ML_A2A_RACE_POINTS];
    int n = 0;
    if (strcmp(v, "off") == 0) {
        for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
            race[j] = 0;
        return 0;
    }
    for (const char *p = v;; p++) {
        char *end;
        if (n == ML_A2A_RACE_POINTS)
            return -1;
        r[n] = strtod(p, &end);
        if (end == p || !(r[n] > 1 && r[n] <= 1000))
            return -1;
        n++;
        p = end;
        if (*p == 0)
            break;
        if (*p != ',')
            return -1;
    }
    if (n == 1) /* F: every point */
        for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
            race[j] = r[0];
    else if (n == 2) { /* F1,F2: N/5 and N/2 only */
        race[0] = 0;
        race[1] = r[0];
        race[2] = r[1];
    } else
        for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
            race[j] = r[j];
    return 0;
}

void ml_a2a_set_config(int mode, int learn_n, int model, int check_every, double drift,
                       const double race[ML_A2A_RACE_POINTS])
{
    for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
        cfg.race[j] = race[j];
    cfg.mode = mode;
    cfg.learn_n = learn_n > 0 ? learn_n : 1;
    cfg.model = model;
    cfg.check_every = check_every;
    cfg.drift = drift;
}

int ml_coll_init(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* rank 0 validates and decides; everybody follows rank 0's configuration */
    int st[3] = {0, 0, 0}; /* [0] config error, [1] tuning or network model error, [2] model read */
    config_t c = cfg;
    ml_a2a_parse_race(ML_A2A_RACE_DEFAULT, c.race);
    char err[512] = "";
    tune_path = setting("tuning_file", "MPILENS_TUNING_FILE");
    if (rank == 0) {
        st[0] = read_env(&c) != 0;
        if (!st[0] && tune_path && c.mode == MODE_ADAPTIVE) {
            tune_tab = calloc(ML_TUNE_MAX, sizeof *tune_tab);
            int prc = tune_tab ? ml_tune_parse(tune_path, tune_tab, ML_TUNE_MAX, &tune_n, err, sizeof err) : -2;
            if (prc == -2) {
                fprintf(stderr, "mpilens: MPILENS_TUNING_FILE='%s' is corrupt: %s "
                        "(regenerate it with `mpilens tune` or remove it)\n", tune_path, err);
                st[1] = 1;
            }
        }
        ml_machine_signature(machine, sizeof machine);
    }
    const char *nm_path = setting("network_model", "MPILENS_NETWORK_MODEL");
    if (rank == 0 && !st[0] && !st[1] && nm_path && c.mode == MODE_ADAPTIVE && c.model) {
        if (ml_netmodel_load(nm_path, &nm_store, err, sizeof err) != 0) {
            fprintf(stderr, "mpilens: MPILENS_NETWORK_MODEL='%s' %s\n", nm_path, err);
            st[1] = 1;
        } else {
            char lib[MPI_MAX_LIBRARY_VERSION_STRING];
            int len = 0;
            PMPI_Get_library_version(lib, &len);
            lib[strcspn(lib, "\n")] = 0;
            if (strcmp(lib, nm_store.mpi_library) != 0) {
                fprintf(stderr, "mpilens: MPILENS_NETWORK_MODEL='%s' was measured with '%.80s', "
                        "this job runs '%.80s' (measure it again with `mpilens bench logp "
                        "--model FILE` under this MPI)\n", nm_path, nm_store.mpi_library, lib);
                st[1] = 1;
            }
            st[2] = 1;
        }
    }
    PMPI_Bcast(st, 3, MPI_INT, 0, MPI_COMM_WORLD);
    if (st[0] || st[1])
        return 1;
    PMPI_Bcast(&c, (int)sizeof c, MPI_BYTE, 0, MPI_COMM_WORLD);
    cfg = c;
    if (cfg.mode != MODE_NATIVE)
        nodes_init();
    PMPI_Bcast(machine, (int)sizeof machine, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (st[2]) {
        PMPI_Bcast(&nm_store, (int)sizeof nm_store, MPI_BYTE, 0, MPI_COMM_WORLD);
        netmodel = &nm_store;
    }
    if (cfg.mode == MODE_ADAPTIVE && tune_path) {
        PMPI_Bcast(&tune_n, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!tune_tab)
            tune_tab = calloc(ML_TUNE_MAX, sizeof *tune_tab);
        if (tune_n > 0)
            PMPI_Bcast(tune_tab, (int)(tune_n * sizeof *tune_tab), MPI_BYTE, 0, MPI_COMM_WORLD);
        tune_loaded = 1;
    }
    return 0;
}

/* Rank 0: merges learned decisions into the tuning table and writes it. */
static void write_tuning(void)
{
    int added = 0;
    for (int i = 0; i < n_all_recs; i++) {
        const double *r = all_recs + (size_t)i * R_NFIELD;
        if (r[R_SRC] != SRC_LEARNED || r[R_REF] < 0 || r[R_ALG] < 0)
            continue;
        ml_tune_entry ne;
        memset(&ne, 0, sizeof ne);
        snprintf(ne.machine, sizeof ne.machine, "%s", machine);
        ne.comm_size = (int)r[R_P];
        ne.ranks_per_node = (int)r[R_RPN];
        ml_tune_range((size_t)r[R_BYTES], &ne.lo, &ne.hi);
        ne.alg = (int)r[R_ALG];
        ne.time_s = r[R_REF];
        int j;
        for (j = 0; j < tune_n; j++) {
            ml_tune_entry *t = &tune_tab[j];
            if (t->comm_size == ne.comm_size && t->ranks_per_node == ne.ranks_per_node &&
                t->lo == ne.lo && t->hi == ne.hi && strcmp(t->machine, ne.machine) == 0)
                break;
        }
        if (j == tune_n) {
            if (tune_n >= ML_TUNE_MAX)
                continue;
            tune_n++;
        }
        tune_tab[j] = ne;
        added++;
    }
    if (added && ml_tune_write(tune_path, tune_tab, tune_n) != 0)
        fprintf(stderr, "mpilens: could not write the tuning file '%s'\n", tune_path);
}

void ml_coll_finalize(void)
{
    while (live) { /* communicators still alive (COMM_WORLD, leaked ones) */
        comm_state *cs = live;
        for (int i = 0; i < ML_SIZES && cs->s[i]; i++) {
            record(cs, cs->s[i]);
            cs->s[i]->used = 0;
        }
        live = cs->next;
        if (live)
            live->prev = NULL;
        cs->next = cs->prev = NULL;
        /* the attribute still points at cs: keep it, mark it drained */
    }
    int rank, P;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &P);
    int *counts = NULL, *displs = NULL, total = 0;
    int mine = nrecs * R_NFIELD;
    if (rank == 0) {
        counts = calloc((size_t)P, sizeof *counts);
        displs = calloc((size_t)P, sizeof *displs);
    }
    PMPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < P; i++) {
            displs[i] = total;
            total += counts[i];
        }
        all_recs = malloc(sizeof(double) * (size_t)(total ? total : 1));
    }
    PMPI_Gatherv(recs, mine, MPI_DOUBLE, all_recs, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        /* one record per key over the whole job (each rank merged its own) */
        double(*tab)[R_NFIELD] = (double(*)[R_NFIELD])all_recs;
        for (int i = 0, n = total / R_NFIELD; i < n; i++)
            merge_rec(tab, &n_all_recs, i + 1, tab[i]); /* into the merged prefix: never full */
        if (tune_loaded && tune_path)
            write_tuning();
        free(counts);
        free(displs);
    }
    ml_a2a_free_scratch();
}

/* ---------------- profile ---------------- */
static size_t appendf(char **buf, size_t *cap, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static size_t appendf(char **buf, size_t *cap, size_t n, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(*buf ? *buf + n : NULL, *buf ? *cap - n : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            return n;
        if (*buf && n + (size_t)k < *cap)
            return n + (size_t)k;
        size_t nc = (*cap ? *cap : 1024);
        while (nc <= n + (size_t)k)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return n;
        *buf = nb;
        *cap = nc;
    }
}

char *ml_coll_profile_json(void)
{
    if (cfg.mode == MODE_NATIVE)
        return NULL;
    char *b = NULL;
    size_t cap = 0, n = 0;
    n = appendf(&b, &cap, n, "[");
    const double *src = all_recs ? all_recs : &recs[0][0];
    int cnt = all_recs ? n_all_recs : nrecs;
    for (int i = 0; i < cnt; i++) {
        const double *r = src + (size_t)i * R_NFIELD;
        n = appendf(&b, &cap, n,
                    "%s{\"comm_size\":%d,\"ranks_per_node\":%d,\"bytes\":%.0f,\"algorithm\":%s%s%s,"
                    "\"source\":\"%s\",\"communicators\":%.0f,\"calls\":%.0f,\"learning_calls\":%.0f,"
                    "\"learning_s\":%.9g,\"grouping_s\":%.9g,\"relearns\":%.0f,\"time_per_call_s\":%.9g,"
                    "\"candidates\":[",
                    i ? "," : "", (int)r[R_P], (int)r[R_RPN], r[R_BYTES], r[R_ALG] < 0 ? "" : "\"",
                    r[R_ALG] < 0 ? "null" : ml_a2a_names[(int)r[R_ALG]], r[R_ALG] < 0 ? "" : "\"",
                    src_names[(int)r[R_SRC]], r[R_COMMS], r[R_CALLS], r[R_LCALLS], r[R_LS], r[R_GS],
                    r[R_RELEARN], r[R_REF] >= 0 ? r[R_REF] : 0.0);
        int first = 1;
        for (int a = 0; a < ML_A2A_NALG; a++)
            if ((int)r[R_MASK] & (1 << a)) {
                n = appendf(&b, &cap, n, "%s\"%s\"", first ? "" : ",", ml_a2a_names[a]);
                first = 0;
            }
        n = appendf(&b, &cap, n, "],\"learned_mean_s\":{");
        first = 1;
        for (int a = 0; a < ML_A2A_NALG; a++)
            if (r[R_MEAN0 + a] >= 0) {
                n = appendf(&b, &cap, n, "%s\"%s\":%.9g", first ? "" : ",", ml_a2a_names[a],
                            r[R_MEAN0 + a]);
                first = 0;
            }
        n = appendf(&b, &cap, n, "}}");
    }
    n = appendf(&b, &cap, n, "]");
    return b;
}
