/* The per-call path of every generated wrapper (runtime/gen/genwrap.py,
 * timed_body; ml.h shows the whole wrapper).  After the MPI call and the
 * semantic helpers, one inline step records the call:
 *
 *   ml_call_done  an untimed call (15 in 16 once warmed up) while no kind's
 *                 out-of-line hook is on (ml_hot.kinds_rare: regions, while one is open):
 *                 the function's call count, its time-line cell, its
 *                 communicator's record and, at call-site depth 1, its call
 *                 site through a one-entry cache per function (S->cs1[fid]:
 *                 the return address and record of its last site): a few
 *                 increments and no call;
 *   ml_call_end   (callend.c) everything else, out of line: a timed call, a
 *                 kind's out-of-line hook on, call sites deeper than 1, a cache miss.
 *
 * The wrapper holds the shared slot's lock if S is shared; fid, di (the
 * function's data record, -1 none) and cls (its time-line class) are
 * constants of the wrapper, so every test of them is made at compile time. */
#ifndef MLENS_CALLEND_H
#define MLENS_CALLEND_H

#include "hooks.h"
#pragma GCC visibility push(hidden) /* this file's declarations: direct accesses, no GOT (mltypes.h) */

/* Out of line (callend.c): the full update of a timed call, or of any call while a
 * region is open; the function's record and every record kind.  fk packs the
 * function, its time-line class and the timing decision (ML_CALL_KEY): six
 * arguments, all in registers; the data record is ml_func_didx[fid]. */
#define ML_CALL_KEY(fid, cls, tm) ((uint32_t)(fid) | (uint32_t)(cls) << 16 | (uint32_t)(tm) << 24)
void ml_call_end(ml_slot_t *S, uint32_t fk, uint64_t t0, uint64_t dt, MPI_Comm comm, void *ra);
/* Call sites (depth >= 1) of an untimed call whose one-entry cache missed. */
void ml_cs_miss(ml_slot_t *S, int fid, void *ra, uint64_t bs, uint64_t br);

/* The record of comm among the communicators' (MPI_COMM_WORLD is record 0). */
ML_INLINE ml_cm_rec_t *ml_cm_rec(ml_cm_rec_t *cm, MPI_Comm comm)
{
    return &cm[comm == MPI_COMM_WORLD ? 0 : ml_cm_id(comm)];
}

/* The wrapper's start, when recording: the timing decision (ml_want_time) and,
 * if the call's bytes are counted in the thread's ml_thr.cb (tcb 1: a function with
 * a data record whose wrapper keeps no local copy, see ml_call_done), those zeroed. */
ML_INLINE int ml_call_start(ml_slot_t *S, int fid, int tcb)
{
    if (tcb) ml_thr.cb.s = ml_thr.cb.r = 0;
    return __builtin_expect(ml_fon[fid] != 0, 1) ? ml_want_time(&S->f[fid]) : ML_TM_OFF;
}

/* bs, br: the call's bytes, sent and received: ml_thr.cb's, or for the point-to-point
 * wrappers (a send, a receive: genwrap.py's local_cb) the wrapper's local copy, which
 * the compiler keeps in registers (no thread-local zeroing, adds and loads); the
 * out-of-line ml_call_end reads them from ml_thr.cb, stored there first.  bin: the size
 * class of those bytes when the wrapper's helper computed it (its one message), else -1.
 * hc: 0 when the function has no communicator argument (a wait, a test: comm is then
 * MPI_COMM_NULL, which in some MPIs is an address the compiler cannot test at compile time). */
ML_INLINE void ml_call_done(ml_slot_t *S, int fid, int di, int cls, int tm, uint64_t t0, uint64_t dt,
                            int hc, MPI_Comm comm, uint64_t bs, uint64_t br, int bin, void *ra)
{
    /* a completion call (no byte counters of its own) gives none: what its receives
     * got belongs to the functions that started them (docs/runtime.md) */
    if (di < 0) bs = br = 0;
    if (__builtin_expect(tm != ML_TM_NO || ml_hot.kinds_rare != 0, 0)) { /* timed, not recorded, or a kind's hook on (a region open) */
        if (di >= 0) {
            ml_thr.cb.s = bs;
            ml_thr.cb.r = br;
        }
        ml_call_end(S, ML_CALL_KEY(fid, cls, tm), t0, dt, hc ? comm : MPI_COMM_NULL, ra);
        return;
    }
    S->f[fid].t.calls++;
    ml_tltab_t *t = S->tl;
    if (t) { /* untimed: the bin of the thread's last clock reading (ml_tl_add) */
        ml_tl_cell_t *c = &t->row[cls];
        c->t.calls++;
        if (di >= 0) c->bytes += bs + br;
    }
    ml_cm_rec_t *cm = S->cm;
    if (hc && cm) { /* MPI_COMM_WORLD (record 0) tested first */
        ml_cm_rec_t *r = comm == MPI_COMM_WORLD ? cm : comm != MPI_COMM_NULL ? &cm[ml_cm_id(comm)] : NULL;
        if (r) {
            r->t.calls++;
            if (di >= 0) {
                r->bytes_s += bs;
                r->bytes_r += br;
            }
        }
    }
    /* Call sites.  The one-entry cache first, without testing the depth: pc set means rec
     * set and depth 1 (ml_cs_probe1 fills the cache only at depth 1, mpilens_set_callsites
     * empties it when the depth changes, and at depth 0 it stays empty).  The depth is
     * tested only when the cache misses: depth 1 (the default) pays two tests less,
     * depth 0 (off) a few more. */
    const ml_cs1_t *c1 = &S->cs1[fid];
    if (__builtin_expect(c1->pc == (uintptr_t)ra, 1)) {
        ml_cs_rec_t *r = (ml_cs_rec_t *)c1->rec;
        r->t.calls++;
        if (di >= 0 && (bs | br)) {
            r->bytes_s += bs;
            r->bytes_r += br;
            r->hist[bin >= 0 ? bin : ml_bin(bs ? bs : br)]++;
        }
    } else if (ml_hot.cs_depth != 0) {
        ml_cs_miss(S, fid, ra, bs, br);
    }
}

#pragma GCC visibility pop
#endif
