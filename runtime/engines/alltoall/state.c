/* Per-communicator state: one comm_state per user communicator that calls
 * MPI_Alltoall in an engine mode, attached as an MPI attribute and released
 * by its delete callback.  It holds a private duplicate communicator for the
 * algorithms' traffic and a table of up to ML_SIZES block sizes (least
 * recently used entry recycled).  Entries are allocated on a size's first
 * call and their learning slots only while a size learns: a communicator that
 * runs one size costs about 0.5 KB besides its duplicate, not a full table
 * (programs with thousands of communicators).
 *
 * The private duplicate is shared by every user communicator over the same
 * processes in the same order (below MPI_THREAD_MULTIPLE).  Sharing is safe
 * there: each engine call completes all of its messages before it returns,
 * and MPI requires all ranks to call blocking collectives on overlapping
 * communicators in one order, so calls on two such communicators are as
 * calls in sequence on one.  Under MPI_THREAD_MULTIPLE two threads may run
 * them at once: no sharing.  Equal uids on all ranks mean the same duplicate
 * (see agree()).
 *
 * The state is made without communication on a communicator's first call;
 * the set-up (the agreement reduction and the duplicate) waits until a
 * candidate other than the MPI's own must run or learning starts
 * (ml_a2a_setup), so that a run whose choice is the MPI's own, final, pays no
 * collective of its own: "mpi" runs PMPI_Alltoall on the user's
 * communicator, as native does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alltoall.h"
#include "groups.h"

/* Block sizes in power-of-two ranges, as in the tuning file: range 0 holds
 * 0 bytes, range k + 1 the sizes [2^k, 2^(k+1)); blocks stay below 2^30. */
int ml_a2a_range_of(long long bytes)
{
    int k = 0;
    while (k + 1 < ML_RANGES && bytes >= 1LL << k)
        k++;
    return k;
}

/* ---------------- release ---------------- */

/* Under the lock: the sharing entry of group wr, or NULL. */
static shared_dup *shared_find(const int *wr, int P)
{
    for (shared_dup *d = ml_a2a.shared; d; d = d->next)
        if (ml_a2a_same_group(d->wr, d->P, wr, P))
            return d;
    return NULL;
}

static void entry_free(const comm_state *cs, size_state *e)
{
    if (!e)
        return;
    ml_a2a_record(cs, e);
    free(e->lr);
    free(e);
}

static void state_release(comm_state *cs)
{
    __atomic_add_fetch(&ml_a2a.cs_gen, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < ML_SIZES; i++)
        entry_free(cs, cs->s[i]);
    pthread_mutex_lock(&ml_a2a.lock);
    if (cs->prev)
        cs->prev->next = cs->next;
    else
        ml_a2a.live = cs->next;
    if (cs->next)
        cs->next->prev = cs->prev;
    /* the duplicate goes with its last user (none before the set-up) */
    int own = cs->setup && (!cs->sd || --cs->sd->refs == 0);
    if (own && cs->sd) {
        shared_dup **p = &ml_a2a.shared;
        while (*p != cs->sd)
            p = &(*p)->next;
        *p = cs->sd->next;
    }
    if (own)
        ml_a2a.priv_live--;
    pthread_mutex_unlock(&ml_a2a.lock);
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
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &ml_a2a.keyval, NULL);
}

static int ensure_keyval(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, create_keyval);
    return ml_a2a.keyval != MPI_KEYVAL_INVALID ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* MPI_Finalize: the sizes still learning, or running a provisional choice,
 * agree their times and samples so far (learn.c; the communicator's rank 0
 * keeps them for the cache).  Collective over each communicator: every rank
 * takes its communicators in increasing uid (agreed, the same order on
 * every rank of every communicator: no two ranks can wait on each other). */
static void agree_partials(void)
{
    int last = -1;
    for (;;) {
        comm_state *next = NULL;
        for (comm_state *cs = ml_a2a.live; cs; cs = cs->next)
            if (cs->uid > last && (!next || cs->uid < next->uid))
                next = cs;
        if (!next)
            return;
        last = next->uid;
        for (int i = 0; i < ML_SIZES && next->s[i]; i++) {
            size_state *e = next->s[i];
            double S[ML_A2A_NALG * (NSLOT + 1)];
            if (e->used && e->calls && e->lr && ml_a2a_agree_partial(next, e, S) == MPI_SUCCESS &&
                next->rank == 0)
                ml_a2a_cache_capture(next, e, S);
        }
    }
}

/* MPI_Finalize: every live state records its sizes and leaves the list; the
 * attribute still points at it (released when MPI frees the communicator). */
void ml_a2a_drain_states(void)
{
    agree_partials();
    while (ml_a2a.live) { /* communicators still alive (COMM_WORLD, leaked ones) */
        comm_state *cs = ml_a2a.live;
        for (int i = 0; i < ML_SIZES && cs->s[i]; i++) {
            ml_a2a_record(cs, cs->s[i]);
            cs->s[i]->used = 0;
        }
        ml_a2a.live = cs->next;
        if (ml_a2a.live)
            ml_a2a.live->prev = NULL;
        cs->next = cs->prev = NULL;
    }
}

/* ---------------- nodes ---------------- */

/* Node of every rank of MPI_COMM_WORLD (the world rank of its node's first
 * rank), computed once at MPI_Init so that a communicator's ranks per node
 * need no MPI_Comm_split_type (tens to hundreds of microseconds on every new
 * communicator, a share of a short run of small Alltoalls). */
void ml_a2a_nodes_init(void)
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
    free(ml_a2a.world_node);
    ml_a2a.world_node = malloc(sizeof *ml_a2a.world_node * (size_t)world_size);
    int ok = ml_a2a.world_node != NULL, all;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all)
        PMPI_Allgather(&leader, 1, MPI_INT, ml_a2a.world_node, 1, MPI_INT, MPI_COMM_WORLD);
    else {
        free(ml_a2a.world_node);
        ml_a2a.world_node = NULL;
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* World ranks of comm's ranks in comm order (malloc'd), or NULL (a rank
 * outside MPI_COMM_WORLD: then on every rank of comm, since each sees the
 * others' world as undefined; or no memory: *oom set).  Local. */
static int *world_ranks(MPI_Comm comm, int P, int *oom)
{
    MPI_Group g;
    int wsize;
    PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
    PMPI_Comm_group(comm, &g);
    int *out = ml_group_world_ranks(g, P);
    PMPI_Group_free(&g);
    *oom = out == NULL;
    for (int i = 0; out && i < P; i++)
        if (out[i] == MPI_UNDEFINED || out[i] < 0 || out[i] >= wsize) {
            free(out);
            return NULL;
        }
    return out;
}

/* Largest number of the P ranks wr (world ranks) on one node, from the world
 * table; -1 without table or ranks (the same on every rank: the table is
 * agreed at MPI_Init), -2 no memory.  Local. */
static int rpn_from_table(const int *wr, int P)
{
    if (!ml_a2a.world_node || !wr)
        return -1;
    int *node = malloc(sizeof(int) * (size_t)P), best = 0;
    if (!node)
        return -2;
    for (int i = 0; i < P; i++)
        node[i] = ml_a2a.world_node[wr[i]];
    qsort(node, (size_t)P, sizeof *node, cmp_int);
    for (int i = 0, run = 0; i < P; i++) {
        run = i > 0 && node[i] == node[i - 1] ? run + 1 : 1;
        if (run > best)
            best = run;
    }
    free(node);
    return best;
}

/* ---------------- a new communicator's state (collective) ---------------- */

/* One reduction on comm itself (every rank is in this call on comm, so it is
 * ordered like any collective on comm), before the private duplicate exists,
 * agrees on (max, and max of the negated = min):
 * - the communicator's uid: the largest of the ranks' next uids, so a uid
 *   names the same communicator set-up on all its ranks and, below
 *   MPI_THREAD_MULTIPLE, no other (threads: see the P-LogP part below);
 * - ranks per node: from the world table; a rank that cannot use it (-1:
 *   ranks from another MPI_COMM_WORLD) makes everybody split by node;
 * - the group's kept zero-byte P-LogP part: used only if every rank holds
 *   the one measured on the same communicator (same uid) and its bits are
 *   the same on every rank (max and max of the complement of each word).
 *   Threads on other communicators over the group may have replaced it in a
 *   different order on each rank, and under MPI_THREAD_MULTIPLE the uid
 *   alone does not tell: communicators set up at the same time by several
 *   threads can agree on the same uid (each rank proposed its next uid
 *   before either was adopted), each measuring a part of its own;
 * - the kept choices all ranks hold alike, per size range;
 * - the shared duplicate: used only if every rank holds the same one. */
enum { H_UID, H_RPN, H_NRPN, H_P0, H_NP0, H_DUP, H_NDUP, N_HEAD, N_ROWS = N_HEAD + 2 * ML_RANGES,
       N_ZW = (int)(sizeof(ml_plogp0) / sizeof(int)), N_RED = N_ROWS + 2 * N_ZW };
_Static_assert(sizeof(ml_plogp0) % sizeof(int) == 0, "the zero-byte part is agreed word by word");

/* This rank's proposal; holds *sd (a reference) while the others are asked. */
static void propose(const comm_state *cs, int share, int v[N_RED], ml_plogp0 *z0, shared_dup **sd)
{
    int *row = v + N_HEAD;
    v[H_RPN] = cs->rpn; /* from the world table (get_state) */
    memset(z0, 0, sizeof *z0);
    v[H_P0] = ml_a2a_p0_get(cs->wr, cs->P, z0);
    memcpy(v + N_ROWS, z0, sizeof *z0); /* its bits, and their complements (min) */
    for (int j = 0; j < N_ZW; j++)
        v[N_ROWS + N_ZW + j] = ~v[N_ROWS + j];
    v[H_DUP] = -1;
    pthread_mutex_lock(&ml_a2a.lock);
    v[H_UID] = ml_a2a.next_uid;
    if (share && (*sd = shared_find(cs->wr, cs->P))) {
        (*sd)->refs++;
        v[H_DUP] = (*sd)->uid;
    }
    pthread_mutex_unlock(&ml_a2a.lock);
    ml_a2a_kept_row(cs->P, v[H_RPN], row);
    if (!ml_a2a.cfg.reuse || v[H_RPN] < 0)
        memset(row, -1, sizeof(int) * ML_RANGES);
    for (int j = 0; j < ML_RANGES; j++)
        row[ML_RANGES + j] = -row[j];
    for (int j = H_RPN; j < N_HEAD; j += 2)
        v[j + 1] = -v[j];
}

/* Takes the agreed values into cs; returns whether the ranks per node are
 * agreed (else they are counted by a split of the duplicate). */
static int adopt(comm_state *cs, const int a[N_RED], const ml_plogp0 *z0, shared_dup *sd)
{
    cs->uid = a[H_UID];
    cs->rpn = a[H_RPN];
    int rpn_ok = a[H_RPN] > 0 && a[H_RPN] == -a[H_NRPN];
    for (int j = 0; j < ML_RANGES; j++) {
        int hi = a[N_HEAD + j], lo = -a[N_HEAD + ML_RANGES + j];
        cs->reuse[j] = (signed char)(rpn_ok && hi == lo ? hi : -1);
    }
    int same_z = 1;
    for (int j = 0; j < N_ZW; j++)
        same_z &= a[N_ROWS + j] == ~a[N_ROWS + N_ZW + j];
    if (a[H_P0] >= 0 && a[H_P0] == -a[H_NP0] && same_z) {
        cs->have_p0 = 1;
        cs->p0 = *z0;
    }
    pthread_mutex_lock(&ml_a2a.lock);
    if (cs->uid >= ml_a2a.next_uid)
        ml_a2a.next_uid = cs->uid + 1;
    if (a[H_DUP] >= 0 && a[H_DUP] == -a[H_NDUP]) { /* everybody holds sd */
        cs->sd = sd;
        cs->dup = sd->comm;
    } else {
        if (sd)
            sd->refs--; /* back to its other users' count */
        ml_a2a.priv_live++;
    }
    pthread_mutex_unlock(&ml_a2a.lock);
    return rpn_ok;
}

/* A private duplicate of comm of cs's own, offered for sharing if share. */
static void make_dup(comm_state *cs, MPI_Comm comm, int share)
{
    PMPI_Comm_dup(comm, &cs->dup);
    /* errors come back to mlo_MPI_Alltoall, which raises them on the user's
     * communicator (whose handler the duplicate may not have: shared) */
    PMPI_Comm_set_errhandler(cs->dup, MPI_ERRORS_RETURN);
    int *w = share ? ml_a2a_copy_group(cs->wr, cs->P) : NULL;
    shared_dup *n = w ? malloc(sizeof *n) : NULL;
    if (n) {
        *n = (shared_dup){cs->dup, cs->P, w, cs->uid, 1, NULL};
        pthread_mutex_lock(&ml_a2a.lock);
        n->next = ml_a2a.shared;
        ml_a2a.shared = cs->sd = n;
        pthread_mutex_unlock(&ml_a2a.lock);
    } else
        free(w); /* no memory: this duplicate is not shared */
}

/* Ranks per node counted on the duplicate (some rank could not use the table). */
static void split_rpn(comm_state *cs)
{
    MPI_Comm node;
    int n = 1;
    if (PMPI_Comm_split_type(cs->dup, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        PMPI_Comm_size(node, &n);
        PMPI_Comm_free(&node);
    }
    PMPI_Allreduce(&n, &cs->rpn, 1, MPI_INT, MPI_MAX, cs->dup);
}

/* comm's state, made on first use without communication: the size, the rank,
 * the world ranks and the ranks per node from the world table (-1: unknown),
 * all computed alike on every rank.  The collective set-up (ml_a2a_setup)
 * comes later, if ever: a communicator whose sizes all run the MPI's own
 * algorithm as a final choice (tuning file, learning cache) or forced never
 * pays it.  NULL: no memory on this rank (the caller aborts: the others may
 * be about to take a path this rank cannot follow). */
comm_state *ml_a2a_get_state(MPI_Comm comm)
{
    void *val;
    int flag = 0, oom = 0;
    if (ensure_keyval() != MPI_SUCCESS)
        return NULL;
    PMPI_Comm_get_attr(comm, ml_a2a.keyval, &val, &flag);
    if (flag)
        return (comm_state *)val;
    comm_state *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    cs->comm = comm;
    cs->dup = MPI_COMM_NULL;
    cs->uid = -1; /* agree_partials takes the set-up ones only (uid >= 0) */
    PMPI_Comm_size(comm, &cs->P);
    PMPI_Comm_rank(comm, &cs->rank);
    cs->wr = world_ranks(comm, cs->P, &oom);
    cs->rpn = oom ? -2 : rpn_from_table(cs->wr, cs->P);
    if (cs->rpn == -2) {
        free(cs->wr);
        free(cs);
        return NULL;
    }
    pthread_mutex_lock(&ml_a2a.lock);
    cs->next = ml_a2a.live;
    if (ml_a2a.live)
        ml_a2a.live->prev = cs;
    ml_a2a.live = cs;
    pthread_mutex_unlock(&ml_a2a.lock);
    PMPI_Comm_set_attr(comm, ml_a2a.keyval, cs);
    return cs;
}

/* The collective set-up of cs, once: one reduction on the user's
 * communicator (see propose) and the private duplicate (shared, or made
 * here).  Called inside an Alltoall call on cs->comm at a point every rank
 * reaches at the same call (the decisions leading to it are computed alike
 * on every rank), so it is ordered like any collective on comm. */
int ml_a2a_setup(comm_state *cs)
{
    if (cs->setup)
        return MPI_SUCCESS;
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    int share = ml_a2a.cfg.share && cs->wr && level < MPI_THREAD_MULTIPLE;
    int mine[N_RED], agreed[N_RED];
    ml_plogp0 z0;
    shared_dup *sd = NULL;
    propose(cs, share, mine, &z0, &sd);
    int rc = PMPI_Allreduce(mine, agreed, N_RED, MPI_INT, MPI_MAX, cs->comm);
    if (rc != MPI_SUCCESS) {
        if (sd) {
            pthread_mutex_lock(&ml_a2a.lock);
            sd->refs--;
            pthread_mutex_unlock(&ml_a2a.lock);
        }
        return rc;
    }
    int rpn_ok = adopt(cs, agreed, &z0, sd);
    cs->setup = 1;
    if (!cs->sd)
        make_dup(cs, cs->comm, share);
    if (!rpn_ok)
        split_rpn(cs);
    return MPI_SUCCESS;
}

/* ---------------- block sizes ---------------- */

/* The entry of block size bytes: found, or new in the first free slot (slots
 * fill in order and are only emptied all together), or recycled from the
 * least recently used one.  NULL: no memory. */
size_state *ml_a2a_lookup(comm_state *cs, long long bytes)
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

/* The state of (comm, block size), or NULL (no engine state, unknown size). */
const size_state *ml_a2a_find_size(MPI_Comm comm, long long block_bytes)
{
    void *val;
    int flag = 0;
    if (ml_a2a.keyval == MPI_KEYVAL_INVALID)
        return NULL;
    PMPI_Comm_get_attr(comm, ml_a2a.keyval, &val, &flag);
    if (!flag)
        return NULL;
    comm_state *cs = val;
    for (int i = 0; i < ML_SIZES && cs->s[i]; i++)
        if (cs->s[i]->used && cs->s[i]->bytes == block_bytes)
            return cs->s[i];
    return NULL;
}

/* Memory for the engine's state ran out on this rank: the other ranks are
 * inside the same collective and cannot be told, so the job ends (as an MPI
 * does when it runs out of memory inside a collective). */
int ml_a2a_out_of_memory(MPI_Comm comm)
{
    fprintf(stderr, "mpilens: out of memory for the adaptive Alltoall state; aborting\n");
    return PMPI_Abort(comm, 1);
}
