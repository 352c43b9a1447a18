/* What a call means: bytes, message-size classes, peers.  Called by the
 * generated wrappers after the MPI call, only for the outermost call of a
 * thread while profiling is active.
 *
 * Byte rule: count x type size of the data described by the call's buffer
 * arguments, send side and receive side apart (docs/runtime.md).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "ml.h"
#include "groups.h"

/* ---------------- datatype sizes (one-entry cache per thread) ---------------- */

volatile unsigned ml_type_epoch = 1;
void ml_type_forget(void) { __atomic_add_fetch(&ml_type_epoch, 1, __ATOMIC_RELAXED); }


int64_t ml_type_size_slow(MPI_Datatype dt)
{
    MPI_Count sz = 0;
    if (dt == MPI_DATATYPE_NULL) return 0;
    if (PMPI_Type_size_x(dt, &sz) != MPI_SUCCESS || sz == MPI_UNDEFINED) sz = 0;
    ml_thr.tcache.dt = dt;
    ml_thr.tcache.size = (int64_t)sz;
    ml_thr.tcache.epoch = ml_type_epoch;
    return (int64_t)sz;
}

/* ---------------- communicator and window tables ---------------- */

typedef struct {
    uint64_t key;       /* handle bits; 0 empty, 1 tombstone */
    int size, rsize;    /* local size, remote size (== size for intra) */
    int rank, inter;
    int *world;         /* peer rank -> world rank (remote group for inter) */
    int nodes, rpn;     /* nodes that group spans, most of its ranks on one node (ml_node_span) */
    int indeg, outdeg;  /* neighbourhood sizes, -1 unknown */
} ml_hent_t;

#define ML_HCAP 2048
/* This file's state: the tables of communicators and windows met (written
 * under mu; the per-call path reads them without it, ml_hfind), MPI_COMM_WORLD's
 * entry, and the epoch of the per-thread translation cache (ml_pw_cache below). */
static struct {
    ml_hent_t comms[ML_HCAP], wins[ML_HCAP];
    ml_hent_t world;            /* MPI_COMM_WORLD's facts (ml_comm_info) */
    pthread_mutex_t mu;
    volatile unsigned pw_epoch; /* changes when a communicator is forgotten (the caches hold it + 1) */
} H = {.mu = PTHREAD_MUTEX_INITIALIZER}; /* all zero: in .bss, not 196 KB of .data */

static inline uint64_t ml_hkey(const void *h, size_t n)
{
    uint64_t k = 0;
    memcpy(&k, h, n < sizeof k ? n : sizeof k);
    return k + 2; /* 0 and 1 are reserved */
}

static ml_hent_t *ml_hfind(ml_hent_t *tab, uint64_t key)
{
    uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 53;
    for (int i = 0; i < ML_HCAP; i++) {
        ml_hent_t *e = &tab[(h + i) & (ML_HCAP - 1)];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (k == key) return e;
        if (k == 0) return NULL;
    }
    return NULL;
}

static ml_hent_t *ml_hinsert(ml_hent_t *tab, uint64_t key, const ml_hent_t *val)
{
    uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 53;
    for (int i = 0; i < ML_HCAP; i++) {
        ml_hent_t *e = &tab[(h + i) & (ML_HCAP - 1)];
        if (e->key == 0 || e->key == 1) {
            *e = *val;
            e->key = 0;
            __atomic_store_n(&e->key, key, __ATOMIC_RELEASE);
            return e;
        }
    }
    return NULL; /* full: callers fall back to per-call queries without peers */
}

static void ml_hremove(ml_hent_t *tab, uint64_t key)
{
    pthread_mutex_lock(&H.mu);
    ml_hent_t *e = ml_hfind(tab, key);
    if (e) {
        free(e->world);
        e->world = NULL;
        __atomic_store_n(&e->key, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&H.mu);
}

static int *ml_translate(MPI_Group g, int n)
{
    int *out = ml_group_world_ranks(g, n);
    for (int i = 0; out && i < n; i++)
        if (out[i] == MPI_UNDEFINED) out[i] = ML_NOPEER;
    return out;
}

/* Communicator facts, computed once per communicator (at its first use). */
static const ml_hent_t *ml_comm_info(MPI_Comm comm, ml_hent_t *tmp)
{
    ml_hent_t *world = &H.world;
    if (comm == MPI_COMM_WORLD) {
        world->size = world->rsize = ml_world_size;
        world->rank = ml_world_rank;
        world->indeg = world->outdeg = -1;
        if (!world->nodes) ml_node_span(NULL, ml_world_size, &world->nodes, &world->rpn);
        return world;
    }
    uint64_t key = ml_hkey(&comm, sizeof comm);
    ml_hent_t *e = ml_hfind(H.comms, key);
    if (e) return e;
    memset(tmp, 0, sizeof *tmp);
    tmp->indeg = tmp->outdeg = -1;
    if (comm == MPI_COMM_NULL) return tmp;
    if (PMPI_Comm_size(comm, &tmp->size) != MPI_SUCCESS) return tmp; /* not a communicator (errors return) */
    PMPI_Comm_rank(comm, &tmp->rank);
    PMPI_Comm_test_inter(comm, &tmp->inter);
    MPI_Group g;
    if (tmp->inter) {
        PMPI_Comm_remote_size(comm, &tmp->rsize);
        PMPI_Comm_remote_group(comm, &g);
    } else {
        tmp->rsize = tmp->size;
        PMPI_Comm_group(comm, &g);
    }
    tmp->world = ml_translate(g, tmp->rsize);
    PMPI_Group_free(&g);
    ml_node_span(tmp->world, tmp->world ? tmp->rsize : 0, &tmp->nodes, &tmp->rpn);
    int topo = MPI_UNDEFINED;
    if (!tmp->inter) PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        tmp->indeg = tmp->outdeg = 2 * nd;
    } else if (topo == MPI_GRAPH) {
        int nn = 0;
        PMPI_Graph_neighbors_count(comm, tmp->rank, &nn);
        tmp->indeg = tmp->outdeg = nn;
    } else if (topo == MPI_DIST_GRAPH) {
        int w = 0;
        PMPI_Dist_graph_neighbors_count(comm, &tmp->indeg, &tmp->outdeg, &w);
    }
    pthread_mutex_lock(&H.mu);
    ml_hent_t *ins = ml_hfind(H.comms, key);
    if (!ins) ins = ml_hinsert(H.comms, key, tmp);
    else free(tmp->world);
    pthread_mutex_unlock(&H.mu);
    return ins ? ins : tmp; /* table full: tmp (its translation leaks only in that case) */
}

/* The last communicator translated on this thread and its world ranks (the
 * table entry's array): a run of calls on one communicator other than
 * MPI_COMM_WORLD costs one compare.  H.pw_epoch changes when a communicator
 * is forgotten (freed): every thread's entry is then stale. */
static ML_TLS struct {
    MPI_Comm comm;
    const int *world;
    int rsize;
    unsigned epoch;
} ml_pw_cache;

int ml_peer_world_slow(MPI_Comm comm, int rank)
{
    if (ml_pw_cache.comm == comm && ml_pw_cache.epoch == H.pw_epoch + 1u) /* epoch 0: empty */
        return rank < ml_pw_cache.rsize ? ml_pw_cache.world[rank] : ML_NOPEER;
    unsigned epoch = H.pw_epoch + 1u;
    ml_hent_t tmp;
    const ml_hent_t *e = ml_comm_info(comm, &tmp);
    if (!e->world) return ML_NOPEER;
    if (e != &tmp) { /* in the table (not a full table's temporary) */
        ml_pw_cache.comm = comm;
        ml_pw_cache.world = e->world;
        ml_pw_cache.rsize = e->rsize;
        ml_pw_cache.epoch = epoch;
    }
    return rank < e->rsize ? e->world[rank] : ML_NOPEER;
}

/* The flight recorder's view (flight.h): no MPI call, only what is known. */
int ml_comm_members(MPI_Comm comm, int *size, const int **world)
{
    const ml_hent_t *e = comm == MPI_COMM_WORLD || comm == MPI_COMM_NULL ? NULL
                         : ml_hfind(H.comms, ml_hkey(&comm, sizeof comm));
    if (!e || !e->world) return 0;
    *size = e->rsize;
    *world = e->world;
    return 1;
}

void ml_comm_forget(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD || comm == MPI_COMM_NULL) return;
    __atomic_add_fetch(&H.pw_epoch, 1, __ATOMIC_SEQ_CST); /* every thread's ml_pw_cache */
    ml_hremove(H.comms, ml_hkey(&comm, sizeof comm));
}

int ml_win_peer_world(MPI_Win win, int rank)
{
    if (rank < 0 || win == MPI_WIN_NULL) return ML_NOPEER;
    uint64_t key = ml_hkey(&win, sizeof win);
    ml_hent_t *e = ml_hfind(H.wins, key);
    if (!e) {
        ml_hent_t tmp;
        memset(&tmp, 0, sizeof tmp);
        MPI_Group g;
        PMPI_Win_get_group(win, &g);
        PMPI_Group_size(g, &tmp.size);
        tmp.rsize = tmp.size;
        tmp.world = ml_translate(g, tmp.size);
        PMPI_Group_free(&g);
        pthread_mutex_lock(&H.mu);
        e = ml_hfind(H.wins, key);
        if (!e) e = ml_hinsert(H.wins, key, &tmp);
        else free(tmp.world);
        pthread_mutex_unlock(&H.mu);
        if (!e) {
            int w = (tmp.world && rank < tmp.size) ? tmp.world[rank] : ML_NOPEER;
            free(tmp.world);
            return w;
        }
    }
    return (e->world && rank < e->rsize) ? e->world[rank] : ML_NOPEER;
}

void ml_win_forget(MPI_Win win)
{
    if (win == MPI_WIN_NULL) return;
    ml_hremove(H.wins, ml_hkey(&win, sizeof win));
}

/* ---------------- recording ---------------- */

void ml_served_count(ml_slot_t *s, int fid)
{
    int di = ml_func_didx[fid];
    if (di >= 0 && ml_fon[fid]) s->d[di].served++;
}

void ml_rma(ml_slot_t *s, int fid, int side, int64_t count, MPI_Datatype dt, int target, MPI_Win win)
{
    if (target == MPI_PROC_NULL) return;
    uint64_t n = count > 0 ? (uint64_t)count * (uint64_t)ml_type_size(dt) : 0;
    ml_bytes(s, fid, side, n, n, 1);
    int wpeer = ml_win_peer_world(win, target);
    ml_peer_add(s, side, wpeer, n);
    ml_node_add(s, fid, side, wpeer, n);
}

void ml_io(ml_slot_t *s, int fid, int side, int64_t count, MPI_Datatype dt)
{
    uint64_t n = count > 0 ? (uint64_t)count * (uint64_t)ml_type_size(dt) : 0;
    ml_bytes(s, fid, side, n, n, 1);
}

/* ---------------- collectives ---------------- */

static int64_t ml_cnt(const void *arr, int c64, int i)
{
    return c64 ? (int64_t)((const MPI_Count *)arr)[i] : (int64_t)((const int *)arr)[i];
}

static int64_t ml_tsize_at(const void *types, int ftypes, int i)
{
    if (ftypes) return ml_type_size(PMPI_Type_f2c(((const MPI_Fint *)types)[i]));
    return ml_type_size(((const MPI_Datatype *)types)[i]);
}

/* Bytes described by a counts array (with one type or per-entry types). */
static uint64_t ml_sum(const void *counts, int c64, int n, MPI_Datatype t, const void *types, int ftypes)
{
    uint64_t tot = 0;
    if (types) {
        for (int i = 0; i < n; i++) {
            int64_t c = ml_cnt(counts, c64, i);
            if (c > 0) tot += (uint64_t)c * (uint64_t)ml_tsize_at(types, ftypes, i);
        }
        return tot;
    }
    int64_t c = 0;
    for (int i = 0; i < n; i++) c += ml_cnt(counts, c64, i) > 0 ? ml_cnt(counts, c64, i) : 0;
    return c > 0 ? (uint64_t)c * (uint64_t)ml_type_size(t) : 0;
}

static inline uint64_t ml_nb(int64_t count, MPI_Datatype t)
{
    return count > 0 ? (uint64_t)count * (uint64_t)ml_type_size(t) : 0;
}

static void ml_side(ml_slot_t *s, int fid, int side, uint64_t total, int npeers)
{
    ml_bytes(s, fid, side, total, npeers > 0 ? total / (uint64_t)npeers : total, 1);
}

/* The node span of a collective's communicator (its remote group for an intercommunicator). */
static void ml_coll_span(ml_slot_t *s, int fid, int nodes, int rpn)
{
    int di = ml_func_didx[fid];
    if (di < 0 || !ml_fon[fid] || nodes <= 0) return;
    ml_drec_t *d = &s->d[di];
    d->span_calls[nodes > 1]++;
    if ((uint64_t)nodes > d->span_max[0]) d->span_max[0] = (uint64_t)nodes;
    if ((uint64_t)rpn > d->span_max[1]) d->span_max[1] = (uint64_t)rpn;
}

void ml_coll(ml_slot_t *s, int fid, const ml_coll_t *c)
{
    ml_hent_t tmp;
    const ml_hent_t *e = ml_comm_info(c->comm, &tmp);
    int P = e->rsize, me = e->rank;
    int inter = e->inter;
    ml_coll_span(s, fid, e->nodes, e->rpn);
    int isroot = 0, isnull = 0;
    if (c->shape == ML_BCAST || c->shape == ML_REDUCE || c->shape == ML_GATHER || c->shape == ML_SCATTER) {
        isroot = inter ? c->root == MPI_ROOT : c->root == me;
        isnull = inter && c->root == MPI_PROC_NULL;
        if (isnull) return;
    }
    int in_place_s = c->sendbuf == MPI_IN_PLACE, in_place_r = c->recvbuf == MPI_IN_PLACE;
    switch (c->shape) {
    case ML_BCAST: {
        uint64_t n = ml_nb(c->scount, c->stype);
        ml_side(s, fid, isroot ? ML_SEND : ML_RECV, n, 1);
        break;
    }
    case ML_REDUCE: {
        uint64_t n = ml_nb(c->scount, c->stype);
        if (!(inter && isroot)) ml_side(s, fid, ML_SEND, n, 1);
        if (isroot) ml_side(s, fid, ML_RECV, n, 1);
        break;
    }
    case ML_ALLREDUCE:
    case ML_SCAN: {
        uint64_t n = ml_nb(c->scount, c->stype);
        ml_side(s, fid, ML_SEND, n, 1);
        ml_side(s, fid, ML_RECV, n, 1);
        break;
    }
    case ML_RSB: {
        uint64_t n = ml_nb(c->rcount, c->stype);
        ml_side(s, fid, ML_SEND, n * (uint64_t)e->size, e->size);
        ml_side(s, fid, ML_RECV, n, 1);
        break;
    }
    case ML_RS: {
        uint64_t tot = ml_sum(c->rcounts, c->counts64, e->size, c->stype, NULL, 0);
        ml_side(s, fid, ML_SEND, tot, e->size);
        ml_side(s, fid, ML_RECV, inter ? 0 : ml_nb(ml_cnt(c->rcounts, c->counts64, me), c->stype), 1);
        break;
    }
    case ML_GATHER:
        if (!(isroot && (inter || in_place_s))) ml_side(s, fid, ML_SEND, ml_nb(c->scount, c->stype), 1);
        if (isroot) {
            uint64_t tot = c->rcounts ? ml_sum(c->rcounts, c->counts64, P, c->rtype, NULL, 0)
                                      : ml_nb(c->rcount, c->rtype) * (uint64_t)P;
            ml_side(s, fid, ML_RECV, tot, P);
        }
        break;
    case ML_SCATTER:
        if (isroot) {
            uint64_t tot = c->scounts ? ml_sum(c->scounts, c->counts64, P, c->stype, NULL, 0)
                                      : ml_nb(c->scount, c->stype) * (uint64_t)P;
            ml_side(s, fid, ML_SEND, tot, P);
        }
        if (!(isroot && (inter || in_place_r))) ml_side(s, fid, ML_RECV, ml_nb(c->rcount, c->rtype), 1);
        break;
    case ML_ALLGATHER: {
        uint64_t rtot = c->rcounts ? ml_sum(c->rcounts, c->counts64, P, c->rtype, NULL, 0)
                                   : ml_nb(c->rcount, c->rtype) * (uint64_t)P;
        uint64_t stot;
        if (in_place_s)
            stot = c->rcounts ? ml_nb(ml_cnt(c->rcounts, c->counts64, me), c->rtype) : ml_nb(c->rcount, c->rtype);
        else
            stot = ml_nb(c->scount, c->stype);
        ml_side(s, fid, ML_SEND, stot, 1);
        ml_side(s, fid, ML_RECV, rtot, P);
        break;
    }
    case ML_ALLTOALL:
    case ML_NALLTOALL: {
        int ps = P, pr = P;
        if (c->shape == ML_NALLTOALL) {
            ps = e->outdeg > 0 ? e->outdeg : 0;
            pr = e->indeg > 0 ? e->indeg : 0;
        }
        uint64_t rtot = c->rcounts ? ml_sum(c->rcounts, c->counts64, pr, c->rtype, c->rtypes, c->ftypes)
                                   : ml_nb(c->rcount, c->rtype) * (uint64_t)pr;
        uint64_t stot = in_place_s ? rtot
                        : c->scounts ? ml_sum(c->scounts, c->counts64, ps, c->stype, c->stypes, c->ftypes)
                                     : ml_nb(c->scount, c->stype) * (uint64_t)ps;
        ml_side(s, fid, ML_SEND, stot, in_place_s ? pr : ps);
        ml_side(s, fid, ML_RECV, rtot, pr);
        break;
    }
    case ML_NALLGATHER: {
        int pr = e->indeg > 0 ? e->indeg : 0;
        uint64_t rtot = c->rcounts ? ml_sum(c->rcounts, c->counts64, pr, c->rtype, NULL, 0)
                                   : ml_nb(c->rcount, c->rtype) * (uint64_t)pr;
        ml_side(s, fid, ML_SEND, ml_nb(c->scount, c->stype), 1);
        ml_side(s, fid, ML_RECV, rtot, pr);
        break;
    }
    }
    if (e == &tmp) free(tmp.world);
}
