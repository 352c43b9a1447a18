/* mpilens runtime: request tracking (req.c): what a request's completion records */
#ifndef MLENS_ML_REQ_H
#define MLENS_ML_REQ_H

#include "ml_sem.h"

#pragma GCC visibility push(hidden) /* direct accesses, no GOT (mltypes.h) */

/* ---- request tracking (req.c) ---- */
#define ML_RQ_RECV 1       /* receive: bytes/peer known at completion */
#define ML_RQ_PSEND 2      /* persistent send: bytes/peer recorded at each MPI_Start */
#define ML_RQ_PERSIST 4    /* persistent: stays until MPI_Request_free */
#define ML_RQ_SEND 8       /* non-blocking send: tracked for the flight recorder only */
#define ML_RQ_COLL 16      /* non-blocking collective: likewise */
#define ml_req_live (ml_thr.slot ? ml_thr.slot->rq_live : 0)
void ml_req_track(ml_slot_t *s, MPI_Request req, int fid, int flags, MPI_Comm comm, int64_t bytes, int wpeer);

/* One tracked request (req.c's table, open addressing with linear probing and
 * backward-shift deletion: an entry lies in one unbroken run from its home). */
typedef struct ml_rq {
    uint64_t key; /* 0 = empty */
    MPI_Comm comm;
    int64_t bytes;
    int fid, startfid, flags, wpeer; /* wpeer: a send's destination; a receive's source asked for */
    int tag;
    uint64_t t0;
    uint64_t spare; /* 64 bytes: an entry's address is a shift of its index */
} ml_rq_t;

/* A request's key in a slot of its own (req.c's ml_rkey adds a shared slot's thread number). */
ML_INLINE uint64_t ml_rkey0(MPI_Request r)
{
    uint64_t k = 0;
    __builtin_memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k + 1;
}
ML_INLINE size_t ml_rhash(uint64_t k, int cap) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (size_t)(cap - 1); }
/* the same with the slot's mask (rq_cap - 1) */
ML_INLINE size_t ml_rhash_m(uint64_t k, unsigned mask) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & mask; }

/* Fills a tracked request's entry (the inline path below and req.c's ml_req_track):
 * what it is, and from the thread's in-flight state of the starting call its tag, the
 * time it started and, for a receive, the source asked for (only the flight recorder
 * reads a receive's wpeer). */
ML_INLINE void ml_req_fill(ml_rq_t *e, const ml_slot_t *s, uint64_t key, int fid, int flags, MPI_Comm comm,
                           int64_t bytes, int wpeer)
{
    e->key = key;
    e->comm = comm;
    e->bytes = bytes;
    e->fid = e->startfid = fid;
    e->flags = flags;
    e->wpeer = (flags & ML_RQ_RECV) ? (s->fl.kind == ML_FL_SENDRECV ? s->fl.peer2 : s->fl.peer) : wpeer;
    e->tag = s->fl.tag;
    e->t0 = s->fl.t0;
}

/* The wrappers' ml_req_track: in a slot of its own (sh 0) whose table has room, a
 * request whose home entry is free is added there inline (a free home entry: the
 * key is nowhere else in the table); anything else goes to ml_req_track. */
ML_INLINE void ml_req_track_in(ml_slot_t *s, int sh, MPI_Request req, int fid, int flags, MPI_Comm comm,
                               int64_t bytes, int wpeer)
{
    ml_rq_t *t = s->rq;
    if (__builtin_expect(!sh && t != NULL && req != MPI_REQUEST_NULL &&
                         (unsigned)s->rq_live < s->rq_room, 1)) { /* room: ml_req_track's test */
        uint64_t key = ml_rkey0(req);
        ml_rq_t *e = &t[ml_rhash_m(key, s->rq_mask)];
        if (__builtin_expect(e->key == 0, 1)) {
            s->rq_live++;
            ml_req_fill(e, s, key, fid, flags, comm, bytes, wpeer);
            return;
        }
    }
    ml_req_track(s, req, fid, flags, comm, bytes, wpeer);
}
void ml_req_free(MPI_Request req);
void ml_type_forget(void);
void ml_req_start(ml_slot_t *s, int fid, MPI_Request req);
void ml_req_done(ml_slot_t *s, MPI_Request req, const MPI_Status *st);

/* Completion calls: save handles before, attribute after. */
typedef struct {
    int n;
    MPI_Request *saved;   /* copy of the request handles before the call */
    MPI_Status *st;       /* statuses to pass to PMPI (user's or scratch) */
    int track;            /* tracked requests exist: saving was done */
    MPI_Request one;      /* n == 1 (MPI_Wait, MPI_Test): the saved handle, */
    MPI_Status st1;       /* and the status when the application ignores it */
    ml_rq_t *e1;          /* n == 1: the entry ml_cpl_end1 empties inline (ml_cpl_begin), or NULL */
} ml_cpl_t;
MPI_Status *ml_cpl_begin_n(ml_cpl_t *c, int n, const MPI_Request *reqs, MPI_Status *user_st, int ignore);
ML_INLINE MPI_Status *ml_cpl_begin(ml_cpl_t *c, int n, const MPI_Request *reqs, MPI_Status *user_st, int ignore)
{
    c->n = n;
    c->track = 0;
    ml_slot_t *s = ml_thr.slot;
    if (!s || !s->rq_live || n <= 0 || !reqs) return user_st;
    if (n > 1) return ml_cpl_begin_n(c, n, reqs, user_st, ignore);
    c->track = 1;
    c->one = reqs[0];
    c->saved = &c->one;
    c->st = &c->st1;
    c->e1 = NULL;
    /* The request's entry, looked up once, here: in a slot of its own, a tracked send or
     * collective found at its home entry needs no status (the MPI is spared filling one:
     * ml_cpl_end reads it only for a receive), and if it is not persistent and the next
     * entry is free, ml_cpl_end1 empties it inline after the call (nothing to attribute,
     * no entry to shift back).  Only this thread's recorded calls change the table, and
     * none runs inside the PMPI call (nested calls are not recorded). */
    ml_rq_t *t = s->rq;
    if (!s->shared && t) {
        uint64_t key = ml_rkey0(c->one);
        size_t i = ml_rhash_m(key, s->rq_mask);
        ml_rq_t *e = &t[i];
        if (e->key == key) {
            int f = e->flags;
            if (!(f & ML_RQ_RECV)) {
                if (!(f & ML_RQ_PERSIST) && t[(i + 1) & s->rq_mask].key == 0) c->e1 = e;
                return user_st;
            }
        }
    }
    return ignore ? c->st : user_st;
}
void ml_cpl_end(ml_slot_t *s, ml_cpl_t *c, int ndone, const int *idx, const MPI_Status *sts);

/* ml_cpl_end of MPI_Wait/MPI_Test (one request, completed), for the wrappers: the
 * entry ml_cpl_begin chose (a send's or collective's, at its home, the next entry
 * free; slot not shared) is emptied inline (what ml_req_done does for it);
 * receives and persistent requests go to ml_cpl_end. */
ML_INLINE void ml_cpl_end1(ml_slot_t *s, int sh, ml_cpl_t *c, const MPI_Status *st)
{
    if (!c->track) return;
    if (__builtin_expect(c->e1 != NULL && !sh, 1)) {
        c->e1->key = 0;
        s->rq_live--;
        return;
    }
    ml_cpl_end(s, c, c->n, NULL, st);
}

#pragma GCC visibility pop
#endif
