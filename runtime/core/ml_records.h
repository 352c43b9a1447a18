/* mpilens runtime: the per-thread records (a function's timing and data records,
 * peers, a slot) and the timing counters' arithmetic (ml.h describes the whole) */
#ifndef MLENS_ML_RECORDS_H
#define MLENS_ML_RECORDS_H

#include <mpi.h>
#include <stdint.h>

#include "mltypes.h"   /* ML_NMODULES (the module interface) */
#include "ml_funcs.h"  /* generated: ML_NFUNC, ML_NDATA */
#include "ml_schema.h" /* generated from schema/profile.json: ML_NBINS */
#include "inflight.h"  /* ml_fl_t: the call a thread is inside (flight.h) */

#pragma GCC visibility push(hidden) /* direct accesses, no GOT (mltypes.h) */

/* The timing counters of a record, the same in every record kind (the function
 * record here; call sites, the time line, communicators and regions: hooks.h):
 * ml_time_add counts a timed call into it, ml_est_ticks / ml_est_s estimate the
 * record's total time from it, ml_timing_sum adds one into another. */
typedef struct {
    uint64_t calls;   /* every call */
    uint64_t timed;   /* calls whose duration was measured (all, or a sample) */
    uint64_t ticks;   /* total duration of the timed calls */
    uint64_t stimed;  /* of those, calls timed as the 1 in ML_SAMPLE_PERIOD sample (ML_TM_SAMPLE) */
    uint64_t sticks;  /* ... and their total duration */
} ml_timing_t;

typedef struct {
    ml_timing_t t;
    uint64_t tmin;
    uint64_t tmax;
    int64_t skip;     /* 1 + the calls left before the policy's next sample (set at each timed call),
                       * 0 or less: not counting down; ml_want_time's fast test */
} __attribute__((aligned(64))) ml_frec_t; /* one cache line per function */
_Static_assert(sizeof(ml_frec_t) == 64, "a function record is one cache line");

typedef struct {
    /* first line: what a message updates besides its size class (a send to a peer on
     * this node: this line and one histogram line) */
    uint64_t bytes_s, bytes_r;
    uint64_t hist_bytes_s; /* sum of the sizes hist_s counts: a collective's per-peer block (mpiP's figure) */
    uint64_t served;  /* calls an engine served with its own algorithm (ml_mark_served) */
    uint64_t xnode[2][4];  /* messages with a known peer: [0] same node, [1] other node (msgs_s, bytes_s, msgs_r, bytes_r) */
    uint64_t span_calls[2]; /* collectives: calls on a communicator within one node, across nodes */
    uint64_t span_max[2];  /* collectives: most nodes a communicator spanned, most of its ranks on one node */
    uint64_t hist_s[ML_NBINS];
    uint64_t hist_r[ML_NBINS];
} __attribute__((aligned(64))) ml_drec_t; /* the counters a message updates first (one line), histograms after */

typedef struct {
    uint64_t msgs_s, bytes_s, msgs_r, bytes_r;
} ml_peer_t;

/* Call sites at depth 1: per function, its last call site's return address and
 * record (callend.h: one compare instead of a hash probe); emptied with the table. */
typedef struct {
    uintptr_t pc;
    void *rec;             /* ml_cs_rec_t (hooks.h), NULL: none */
} ml_cs1_t;

typedef struct ml_slot {
    ml_frec_t f[ML_NFUNC];
    ml_drec_t d[ML_NDATA];
    ml_peer_t *peers;      /* world size entries */
    struct ml_rq *rq;      /* this thread's tracked requests (open addressing) */
    int rq_cap, rq_live;
    unsigned rq_room;      /* rq_cap - rq_cap / 4: the most entries tracked (probe chains stay short) */
    unsigned rq_mask;      /* rq_cap - 1 (a power of 2) */
    uint64_t untracked;    /* requests the full table could not hold */
    struct ml_slot *next;
    struct ml_cstab *cs;   /* call sites (callsite.c, hooks.h); NULL when off */
    struct ml_rgtab *rg;   /* per-region records (region.c, hooks.h) */
    struct ml_tltab *tl;   /* time line (timeline.c, hooks.h) */
    struct ml_cm_rec *cm;  /* per-communicator records (comms.c, hooks.h) */
    void *kx[ML_NMODULES]; /* a module's own per-thread tables (module.h; the built-in kinds use the typed pointers above) */
    int shared;            /* slot shared by threads beyond MPILENS_MAX_THREADS: updates under lock */
    ml_fl_t fl;            /* the call this thread is inside (flight.h) */
    uint64_t wcoll[8];     /* its last collectives on MPI_COMM_WORLD: entry k % 8 for its k-th,
                            * function id | root (world rank, or ML_FL_*) << 32 (flight.h) */
    ml_cs1_t cs1[ML_NFUNC]; /* call sites, depth 1: one entry per function (callend.h) */
} ml_slot_t;

/* why a call is timed (tm); ML_TM_OFF: not recorded at all (ml_fon 0: the wrapper's
 * one test after the call sends it with the timed calls to ml_call_end) */
enum { ML_TM_NO = 0, ML_TM_POLICY = 1, ML_TM_SAMPLE = 2, ML_TM_OFF = 4 };
#define ML_TIMED(tm) ((tm) & 3) /* the call's duration is measured */

/* A call into a record's timing counters (not its count: the caller's): timed
 * calls and their ticks, and of those the sampled ones (ML_TM_SAMPLE), for ml_est_ticks. */
ML_INLINE void ml_time_add(ml_timing_t *t, int tm, uint64_t dt)
{
    if (!tm) return;
    t->timed++;
    t->ticks += dt;
    if (tm == ML_TM_SAMPLE) {
        t->stimed++;
        t->sticks += dt;
    }
}

/* Estimated total ticks of a record's calls: the calls timed by the policy as
 * measured; the rest (calls - policy-timed) at the mean of the sampled ones
 * (none sampled yet: at the mean of all timed calls). */
static inline double ml_est_ticks(const ml_timing_t *t)
{
    if (t->stimed)
        return (double)(t->ticks - t->sticks) +
               (double)t->sticks * ((double)(t->calls - (t->timed - t->stimed)) / (double)t->stimed);
    return t->timed ? (double)t->ticks * ((double)t->calls / (double)t->timed) : 0.0;
}

/* Merging records: a += x. */
static inline void ml_timing_sum(ml_timing_t *a, const ml_timing_t *x)
{
    a->calls += x->calls;
    a->timed += x->timed;
    a->ticks += x->ticks;
    a->stimed += x->stimed;
    a->sticks += x->sticks;
}

#pragma GCC visibility pop
#endif
