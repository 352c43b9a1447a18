/* mpilens runtime: the per-call fast path: entering a call, this thread's slot,
 * the timing policy, counting a call into its function's record, size classes */
#ifndef MLENS_ML_FASTPATH_H
#define MLENS_ML_FASTPATH_H

#include "ml_clock.h"

#pragma GCC visibility push(hidden) /* direct accesses, no GOT (mltypes.h) */

/* ---- fast path ---- */
static inline int ml_enter(void)
{
    return __builtin_expect(ml_thr.depth++ == 0 && ml_hot.active, 1); /* the wrappers' layout: recording is the straight path */
}
static inline void ml_leave(void) { ml_thr.depth--; }

static inline ml_slot_t *ml_slot(void)
{
    ml_slot_t *s = ml_thr.slot;
    return __builtin_expect(s != NULL, 1) ? s : ml_slot_attach();
}

/* Timing policy (MPILENS_TIMING): with "all" every call is timed.  With
 * "sampled" (default) every call is counted, but its duration is measured
 * for the first ML_WARMUP_CALLS calls of a function on a thread, for every call
 * of a function whose timed calls average more than ml_hot.slow_ticks
 * (MPILENS_TIME_ABOVE_NS, default ML_ALWAYS_TIME_ABOVE_NS), the longest left out (there a timer read costs
 * < 5 %), and for 1 call in ml_hot.sample_mask + 1 (ML_SAMPLE_PERIOD) otherwise;
 * totals are then estimated in two strata (ml_est_ticks): the calls timed by
 * the policy (warm-up, slow) count as measured, the others (untimed, or timed
 * as the sample) as the sample's mean -- not the mean of every timed call,
 * which the slow first calls of a job (waiting for the others to start)
 * would inflate.  On machines whose timer read is slow (a virtualised TSC:
 * 30-50 ns) this keeps the cost of a cheap call near the cost of counting it. */

/* The policy's full test: still warming up, slow, or the sample. */
ML_INLINE int ml_want_time_full(const ml_frec_t *r)
{
    if (r->t.calls < ML_WARMUP_CALLS) return ML_TM_POLICY;
    /* mean of the timed calls without the longest one (one preempted call must not flip the policy) */
    if (r->t.ticks - r->tmax > (r->t.timed - 1) * ml_hot.slow_ticks) return ML_TM_POLICY;
    if (r->t.calls & ml_hot.sample_mask) return ML_TM_NO;
    return ml_hot.sample_mask ? ML_TM_SAMPLE : ML_TM_POLICY; /* MPILENS_TIMING=all: every call */
}

/* One test for the 15 calls in 16 that are not timed: r->skip - 1 counts the calls
 * for which the full test would answer "no", and skip 1 is the sample after them
 * (its inputs change only at timed calls, where ml_count_upd sets it): past the
 * warm-up and not slow, every call up to the next 1 in ML_SAMPLE_PERIOD; 0: ask
 * the full test.  Relaxed atomics: threads sharing a slot
 * call this before taking its lock (a lost or doubled decrement only moves the
 * next sample by one call). */
ML_INLINE int ml_want_time(ml_frec_t *r)
{
    int64_t k = __atomic_load_n(&r->skip, __ATOMIC_RELAXED) - 1; /* stored first: the subtraction's flags decide */
    __atomic_store_n(&r->skip, k, __ATOMIC_RELAXED);
    if (__builtin_expect(k > 0, 1)) return ML_TM_NO;
    if (k == 0) return ML_TM_SAMPLE; /* the sample the quiet calls counted down to: the full test's answer */
    return ml_want_time_full(r);     /* skip below 0: not counting down (the next timed call sets it) */
}

ML_INLINE void ml_count_upd(ml_frec_t *r, int tm, uint64_t dt)
{
    r->t.calls++;
    if (__builtin_expect(tm, 0)) {
        if (dt < r->tmin || r->tmin == 0) r->tmin = dt ? dt : 1;
        if (dt > r->tmax) r->tmax = dt;
        ml_time_add(&r->t, tm, dt);
        /* quiet (past the warm-up, not slow): the calls before the next sample are not timed,
         * and that sample is (skip 1: ml_want_time answers without the full test).  The full
         * test's inputs change only at timed calls, so its answer would be the same. */
        int quiet = ml_hot.sample_mask && r->t.calls >= ML_WARMUP_CALLS &&
                    !(r->t.ticks - r->tmax > (r->t.timed - 1) * ml_hot.slow_ticks);
        __atomic_store_n(&r->skip, quiet ? (int64_t)(ml_hot.sample_mask - ((r->t.calls - 1) & ml_hot.sample_mask)) + 1 : 0,
                         __ATOMIC_RELAXED);
    }
}

/* A call into function fid's record.  The caller holds the shared slot's lock
 * if s is shared (the wrappers take it once around all their updates). */
ML_INLINE void ml_count(ml_slot_t *s, int fid, int tm, uint64_t dt)
{
    if (!ml_fon[fid]) return;
    ml_count_upd(&s->f[fid], tm, dt);
}

/* A timed call outside a wrapper's body (MPI_Init, MPI_Pcontrol, MPI_Finalize's wait): takes the lock itself. */
static inline void ml_time(ml_slot_t *s, int fid, uint64_t dt)
{
    if (__builtin_expect(s->shared, 0)) ml_shared_lock();
    ml_count(s, fid, 1, dt);
    if (__builtin_expect(s->shared, 0)) ml_shared_unlock();
}

ML_INLINE int ml_bin(uint64_t n)
{
    if (n == 0) return 0;
    int b = 64 - __builtin_clzll(n); /* 1 -> 1, 2..3 -> 2, 4..7 -> 3 */
    return b > ML_NBINS - 1 ? ML_NBINS - 1 : b;
}

#pragma GCC visibility pop
#endif
