/* Non-blocking and persistent requests.
 *
 * Rules (docs/runtime.md):
 * - Isend & co.: bytes, size class and peer are recorded by the call that starts
 *   the operation; the request is not tracked.
 * - Irecv, Imrecv, Isendrecv(_replace): the size and source are known only at
 *   completion, so the request is tracked; the Wait/Test call that completes it
 *   attributes the received bytes, size class and peer to the starting function.
 * - Persistent requests (Send_init, Recv_init & co.): each MPI_Start/Startall
 *   records a send's bytes and peer under MPI_Start/MPI_Startall; a persistent
 *   receive is attributed at each completion to the function that started it.
 * - The time of the completion call itself belongs to MPI_Wait* / MPI_Test*.
 *
 * Each thread keeps its own table (fixed capacity MPILENS_MAX_REQUESTS, open
 * addressing with backward-shift deletion): no lock, no atomic.  Threads
 * beyond MPILENS_MAX_THREADS share one slot and its table, under the shared
 * slot's lock, each thread's entries keyed apart (ml_rkey).  A request
 * completed by another thread than the one that started it is not attributed;
 * requests beyond the capacity are counted as "untracked_requests".
 *
 * The flight recorder (flight.h) reads the same table: non-blocking sends and
 * collectives are tracked too (ML_RQ_SEND, ML_RQ_COLL: nothing to attribute at
 * completion), and every entry keeps the tag, the peer asked for and the time
 * it started, taken from the thread's in-flight state of the starting call.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flight.h"

/* ml_rq_t, ml_rkey0, ml_rhash and the inline fast paths: ml.h */

/* The key of a request in the table: its handle, and in a shared slot the
 * calling thread's number (ml_thr.rq_thread, core.c) in the top 16 bits.  An MPI
 * library hands a request that one thread's Wait has just freed to the next
 * thread's Irecv at once, before the first thread has attributed its
 * completion: in a table shared by threads, handles alone would mix the two
 * (a receive lost, another counted twice).  Handles are pointers (Open MPI)
 * or 32-bit integers (MPICH, Intel MPI): the top 16 bits are free. */
static inline uint64_t ml_rkey(MPI_Request r)
{
    return ml_rkey0(r) ^ ((uint64_t)ml_thr.rq_thread << 48);
}


static ml_rq_t *ml_rfind(ml_slot_t *s, uint64_t key)
{
    if (!s->rq) return NULL;
    size_t i = ml_rhash(key, s->rq_cap);
    for (int n = 0; n < s->rq_cap; n++, i = (i + 1) & (size_t)(s->rq_cap - 1)) {
        if (s->rq[i].key == key) return &s->rq[i];
        if (s->rq[i].key == 0) return NULL;
    }
    return NULL;
}

static void ml_rdelete(ml_slot_t *s, ml_rq_t *e)
{
    size_t mask = (size_t)(s->rq_cap - 1);
    size_t i = (size_t)(e - s->rq), j = i;
    s->rq[i].key = 0;
    s->rq_live--;
    for (;;) { /* backward-shift: keep every probe chain unbroken */
        j = (j + 1) & mask;
        if (s->rq[j].key == 0) return;
        size_t h = ml_rhash(s->rq[j].key, s->rq_cap);
        if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
            s->rq[i] = s->rq[j];
            s->rq[j].key = 0;
            i = j;
        }
    }
}

void ml_req_track(ml_slot_t *s, MPI_Request req, int fid, int flags, MPI_Comm comm, int64_t bytes, int wpeer)
{
    if (req == MPI_REQUEST_NULL) return;
    if (!s->rq) {
        s->rq_cap = ml_cfg.max_requests;
        s->rq_room = (unsigned)(s->rq_cap - s->rq_cap / 4);
        s->rq_mask = (unsigned)(s->rq_cap - 1);
        s->rq = calloc((size_t)s->rq_cap, sizeof(ml_rq_t));
        if (!s->rq) { s->untracked++; return; }
    }
    uint64_t key = ml_rkey(req);
    ml_rq_t *e = ml_rfind(s, key);
    if (!e) {
        if (s->rq_live >= s->rq_cap - s->rq_cap / 4) { /* keep probe chains short */
            s->untracked++;
            return;
        }
        size_t i = ml_rhash(key, s->rq_cap);
        while (s->rq[i].key) i = (i + 1) & (size_t)(s->rq_cap - 1);
        e = &s->rq[i];
        s->rq_live++;
    }
    ml_req_fill(e, s, key, fid, flags, comm, bytes, wpeer);
}

void ml_req_free(MPI_Request req)
{
    ml_slot_t *s = ml_thr.slot;
    if (!s) return;
    if (__builtin_expect(s->shared, 0)) ml_shared_lock(); /* before the call: not under the wrapper's lock */
    ml_rq_t *e = ml_rfind(s, ml_rkey(req));
    if (e) ml_rdelete(s, e);
    if (__builtin_expect(s->shared, 0)) ml_shared_unlock();
}

void ml_req_start(ml_slot_t *s, int fid, MPI_Request req)
{
    ml_rq_t *e = ml_rfind(s, ml_rkey(req));
    if (!e) return;
    e->startfid = fid;
    e->t0 = s->fl.t0;
    if (e->flags & ML_RQ_PSEND) {
        ml_bytes(s, fid, ML_SEND, (uint64_t)e->bytes, (uint64_t)e->bytes, 1);
        ml_peer_add(s, ML_SEND, e->wpeer, (uint64_t)e->bytes);
        ml_node_add(s, fid, ML_SEND, e->wpeer, (uint64_t)e->bytes);
    }
}

void ml_req_done(ml_slot_t *s, MPI_Request req, const MPI_Status *st)
{
    ml_rq_t *e = ml_rfind(s, ml_rkey(req));
    if (!e) return;
    if (e->flags & ML_RQ_RECV) ml_p2p_recv(s, (e->flags & ML_RQ_PERSIST) ? e->startfid : e->fid, e->comm, st);
    if (!(e->flags & ML_RQ_PERSIST)) ml_rdelete(s, e);
}

/* ml_cpl_begin (ml.h) for more than one request: copies into scratch */
MPI_Status *ml_cpl_begin_n(ml_cpl_t *c, int n, const MPI_Request *reqs, MPI_Status *user_st, int ignore)
{
    c->track = 1;
    c->saved = ml_scratch(sizeof(MPI_Request) * (size_t)n, 0);
    memcpy(c->saved, reqs, sizeof(MPI_Request) * (size_t)n);
    c->st = ml_scratch(sizeof(MPI_Status) * (size_t)n, 4);
    return ignore ? c->st : user_st;
}

void ml_cpl_end(ml_slot_t *s, ml_cpl_t *c, int ndone, const int *idx, const MPI_Status *sts)
{
    if (!c->track) return;
    for (int i = 0; i < ndone; i++) {
        int k = idx ? idx[i] : i;
        if (k < 0 || k >= c->n) continue;
        ml_req_done(s, c->saved[k], &sts[i]);
    }
}

/* ---- the flight recorder's view (flight.h); reads only ---- */

static void ml_req_view(const ml_rq_t *e, ml_req_view_t *v)
{
    v->fid = e->startfid;
    v->flags = e->flags;
    v->peer = e->wpeer;
    v->tag = e->tag;
    v->bytes = e->bytes;
    v->t0 = e->t0;
    v->comm = e->comm;
}

int ml_req_at(const ml_slot_t *s, int i, ml_req_view_t *v)
{
    if (!s->rq || i < 0 || i >= s->rq_cap || !s->rq[i].key) return 0;
    ml_req_view(&s->rq[i], v);
    return 1;
}

int ml_req_lookup(const ml_slot_t *s, MPI_Request r, ml_req_view_t *v)
{
    const ml_rq_t *e = ml_rfind((ml_slot_t *)s, ml_rkey(r));
    if (!e) return 0;
    ml_req_view(e, v);
    return 1;
}
