/* mpilens runtime: records, clock, per-call fast path.
 *
 * Every generated wrapper (C and Fortran; runtime/gen/genwrap.py, timed_body,
 * is the authority) has this shape; FID, DI (its data record, -1 none) and
 * TLC (its time-line class) are constants of the wrapper's enum, and the
 * bracketed parts depend on the function:
 *
 *     int on = ml_enter();                  // outermost MPI call on this thread, profiling active?
 *     [a send or a receive: ml_callbytes_t _cb = {0}: the call's bytes in a local, not ml_thr.cb]
 *     if (on) { S = ml_slot(); _sh = S->shared; tm = ml_call_start(S, FID, tcb);  // callend.h
 *               if (ML_TIMED(tm)) t0 = ml_now(); [a send: its size and world peer, once] }
 *     if (on && !_sh) ml_fl_set(S, FID, ...);   // the in-flight state (flight.h)
 *     ret = PMPI_Xxx(...) or mlo_MPI_Xxx(...);
 *     if (on && !_sh) ml_fl_done(S);
 *     dt = ML_TIMED(tm) ? ml_now() - t0 : 0;
 *     ml_leave();
 *     if (on) { [if (_sh) lock;]             // threads beyond MPILENS_MAX_THREADS: a copy under the lock
 *               if (ret == MPI_SUCCESS) { <semantic helpers: bytes, peers, requests; _hc = comm> }
 *               ml_call_done(S, FID, DI, TLC, tm, t0, dt, has comm, _hc, bytes sent, received,
 *                            their size class, return address);  // callend.h
 *               [if (_sh) unlock;] }
 *
 * A thread-local depth counter makes nested MPI calls (an MPI library whose
 * Fortran binding calls the C MPI_Xxx, ROMIO calling MPI_Allreduce, an engine
 * in runtime/engines) invisible: only the outermost call is recorded.
 *
 * Records live in per-thread slots (ml_slot_t), allocated once per thread at
 * the thread's first profiled call: no lock, no atomic, no allocation on the
 * per-call path.  Threads beyond MPILENS_MAX_THREADS share one slot, whose
 * updates the wrapper makes under one lock.  Slots are merged at MPI_Finalize.
 * Every record (a function's here; a call site's, a time-line cell's, a
 * communicator's, a region's in hooks.h) keeps its calls and their time in one
 * ml_timing_t: ml_time_add, ml_timing_sum and ml_est_s are the same for all.
 *
 * Headers: mltypes.h (macros; the module interface, module.h) <- this
 * file <- hooks.h (the record kinds' per-call hooks) <- flight.h (what the
 * wrappers include).  This file does not include hooks.h.
 */
#ifndef MLENS_ML_H
#define MLENS_ML_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mltypes.h"   /* ML_TLS, ML_INLINE, ml_slot_t, the module interface and registry */
#include "ml_funcs.h"  /* generated: ML_NFUNC, ML_NDATA, ml_func_name[], ml_func_didx[] */
#include "ml_schema.h" /* generated from schema/profile.json: ML_NBINS, ML_CAUTION_FACTOR, ... */
#include "engine.h"    /* runtime/common: the engine interface, settings, text buffers */
#include "inflight.h"  /* ml_fl_t: the call a thread is inside (flight recorder, flight.h) */
#pragma GCC visibility push(hidden) /* this file's declarations: direct accesses, no GOT (mltypes.h) */

#ifdef MPI_F_STATUS_SIZE
#define ML_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else /* Open MPI 4 does not define it in mpi.h: a Fortran status has the C status's size */
#define ML_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

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

/* ---- global state (state.c) ---- */
extern unsigned char ml_fon[ML_NFUNC]; /* per function: 1 = record (set after MPI_Init, cleared at Finalize) */
extern int ml_world_size, ml_world_rank;

/* This thread's hot state: everything per thread that the inline per-call code reads
 * or writes, in one thread-local struct (state.c), so that a wrapper finds all of it
 * from one thread-pointer offset (initial-exec TLS: one GOT load, not one per variable). */
typedef struct { MPI_Datatype dt; int64_t size; unsigned epoch; } ml_tcache_t; /* datatype size cache (sem.c) */
typedef struct { uint64_t s, r; int bin; } ml_callbytes_t;                     /* a call's bytes (ml_call_done) */
typedef struct { MPI_Comm comm; int id; unsigned epoch; } ml_cm_cache_t;      /* communicator record cache (comms.c) */
typedef struct {
    int depth;              /* MPI calls this thread is inside: only the outermost is recorded (ml_enter) */
    int served;             /* set by ml_mark_served during an overridden call */
    ml_slot_t *slot;        /* this thread's slot (ml_slot), NULL before its first profiled call */
    ml_callbytes_t cb;      /* the bytes the semantic helpers gave the current call (below) */
    ml_tcache_t tcache;     /* ml_type_size's one-entry cache, invalidated by MPI_Type_free */
    ml_cm_cache_t cm;       /* ml_cm_id's one-entry cache (hooks.h), invalidated by ml_hot.cm_epoch */
    uint32_t rq_thread;     /* 0; in a shared slot, this thread's number (req.c's keys) */
} ml_thr_t;
extern ML_TLS ml_thr_t ml_thr;

/* The process-wide state that the inline per-call code reads, gathered in one
 * cache-line-aligned struct (defined in state.c; each field is written only by the
 * file its comment names, at MPI_Init, from the settings, or when the event named
 * happens): one line for what a wrapper reads besides its records.  Not here:
 * what only out-of-line code reads (nodes.c's node count, region.c's open region),
 * ml_fon (one byte per function), ml_world_size/rank and ml_t_init (the profile
 * writers read them too), ml_type_epoch (an engine links it by name). */
typedef struct {
    int active;                  /* core.c: profiling active (between init and finalize; region.c: paused) */
    int clock_tsc;               /* clock.c: ml_now reads the TSC */
    uint64_t sample_mask;        /* core.c: the timing policy's ML_SAMPLE_PERIOD - 1 (0: every call timed) */
    uint64_t slow_ticks;         /* core.c: MPILENS_TIME_ABOVE_NS in ticks (ml_want_time_full) */
    volatile uint64_t fl_clock;  /* flight.c: ticks, advanced by the recorder's thread (flight.h) */
    int cs_depth;                /* callsite.c: MPILENS_CALLSITES, 0 off, 1..ML_CS_MAXDEPTH (hooks.h) */
    int hooks_on;                /* modules.c, region.c: ML_HOOKS_* bits (module.h): a kind is on, or a region was opened */
    volatile unsigned kinds_rare; /* modules.c: the modules whose out-of-line hook runs now (hooks.h) */
    int cm_max;                  /* comms.c: MPILENS_COMMS (0: off) */
    volatile unsigned cm_epoch;  /* comms.c: changes when a communicator is made or freed (ml_cm_id) */
    int my_node;                 /* nodes.c: this rank's node */
    int *node_of;                /* nodes.c: [world size] node index; nodes numbered in order of their first rank */
} __attribute__((aligned(64))) ml_hot_t;
_Static_assert(sizeof(ml_hot_t) == 64, "the per-call path's process-wide state: one cache line");
extern ml_hot_t ml_hot;

ml_slot_t *ml_slot_attach(void);
/* called on each new slot before it is published (state.c; core.c sets it: the modules' attach) */
extern void (*ml_slot_made)(ml_slot_t *s);
/* The slot iterator: every slot made so far, newest first.  A slot once listed
 * stays, and is listed complete (its tables attached): a walk may run while
 * other threads attach theirs (the flight recorder's dump), and then sees the
 * slots made before it started. */
ml_slot_t *ml_first_slot(void);
int ml_slot_count(void);
#define ML_FOR_EACH_SLOT(s) for (ml_slot_t *s = ml_first_slot(); s; s = s->next)
void ml_shared_lock(void);
void ml_shared_unlock(void);

/* ---- clock (clock.c) ---- */
uint64_t ml_now_slow(void);
static inline uint64_t ml_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(ml_hot.clock_tsc, 1)) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return ml_now_slow();
}
void ml_clock_init(void);
double ml_ticks_to_s(uint64_t ticks);
uint64_t ml_ns_to_ticks(uint64_t ns);
double ml_clock_ghz(void);
const char *ml_clock_source(void);

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
/* why a call is timed (tm); ML_TM_OFF: not recorded at all (ml_fon 0: the wrapper's
 * one test after the call sends it with the timed calls to ml_call_end) */
enum { ML_TM_NO = 0, ML_TM_POLICY = 1, ML_TM_SAMPLE = 2, ML_TM_OFF = 4 };
#define ML_TIMED(tm) ((tm) & 3) /* the call's duration is measured */

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

/* ... in seconds (the profile's time_s). */
static inline double ml_est_s(const ml_timing_t *t) { return ml_ticks_to_s(1) * ml_est_ticks(t); }

/* Merging records: a += x. */
static inline void ml_timing_sum(ml_timing_t *a, const ml_timing_t *x)
{
    a->calls += x->calls;
    a->timed += x->timed;
    a->ticks += x->ticks;
    a->stimed += x->stimed;
    a->sticks += x->sticks;
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

/* ---- semantic helpers (sem.c); fid = function the bytes belong to ---- */
#define ML_SEND 0
#define ML_RECV 1
#define ML_NOPEER (-1)

void ml_served_count(ml_slot_t *s, int fid); /* an engine served the call (ml_mark_served) */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran count arrays are passed to C engines as int arrays");
int ml_peer_world_slow(MPI_Comm comm, int rank);
int ml_win_peer_world(MPI_Win win, int rank);

/* The helpers of every point-to-point call are inline: no call, few cache lines. */

/* Datatype sizes: a one-entry cache per thread, invalidated by MPI_Type_free. */
extern volatile unsigned ml_type_epoch;
int64_t ml_type_size_slow(MPI_Datatype dt);
ML_INLINE int64_t ml_type_size(MPI_Datatype dt)
{
    if (ml_thr.tcache.dt == dt && ml_thr.tcache.epoch == ml_type_epoch) return ml_thr.tcache.size;
    return ml_type_size_slow(dt);
}

/* comm rank -> MPI_COMM_WORLD rank, ML_NOPEER if none (MPI_PROC_NULL, MPI_ANY_SOURCE, ...) */
ML_INLINE int ml_peer_world(MPI_Comm comm, int rank)
{
    if (rank < 0) return ML_NOPEER;
    if (comm == MPI_COMM_WORLD) return rank;
    return ml_peer_world_slow(comm, rank);
}

/* ml_thr.cb: the bytes the semantic helpers gave this thread's current call (sent, received):
 * zeroed by ml_call_start, read by ml_call_done/ml_call_end (callend.h) for the record kinds (call sites,
 * regions, time line, communicators).  Per thread, so exact when threads share
 * a slot (a difference of the slot's counters would take in the other threads'). */

/* Bytes of function fid (data record di = ml_func_didx[fid], a constant in the
 * generated wrappers), added to the call's bytes cb (&ml_thr.cb, or a point-to-point
 * wrapper's local copy: see ml_call_done). */
ML_INLINE void ml_bytes_d(ml_slot_t *s, ml_callbytes_t *cb, int fid, int di, int side, uint64_t total,
                          uint64_t block, int hist)
{
    if (di < 0 || !ml_fon[fid]) return;
    ml_drec_t *d = &s->d[di];
    if (side == ML_SEND) {
        cb->s += total;
        d->bytes_s += total;
        if (hist) {
            d->hist_s[ml_bin(block)]++;
            d->hist_bytes_s += block;
        }
    } else {
        cb->r += total;
        d->bytes_r += total;
        if (hist) d->hist_r[ml_bin(block)]++;
    }
}
ML_INLINE void ml_bytes(ml_slot_t *s, int fid, int side, uint64_t total, uint64_t block, int hist)
{
    ml_bytes_d(s, &ml_thr.cb, fid, ml_func_didx[fid], side, total, block, hist);
}

ML_INLINE void ml_peer_add(ml_slot_t *s, int side, int wpeer, uint64_t bytes)
{
    if (wpeer < 0 || wpeer >= ml_world_size) return;
    ml_peer_t *p = &s->peers[wpeer];
    if (side == ML_SEND) {
        p->msgs_s++;
        p->bytes_s += bytes;
    } else {
        p->msgs_r++;
        p->bytes_r += bytes;
    }
}

/* ---- nodes (nodes.c, module "hosts"): the node of every world rank, from the host names, once at MPI_Init ---- */
/* distinct nodes of n world ranks (ML_NOPEER skipped) and the most of them on one node */
void ml_node_span(const int *world, int n, int *nodes, int *rpn);

/* A message with a known peer, split by whether the peer is on this rank's node. */
ML_INLINE void ml_node_add_d(ml_slot_t *s, int fid, int di, int side, int wpeer, uint64_t bytes)
{
    if (di < 0 || !ml_fon[fid] || wpeer < 0 || wpeer >= ml_world_size || !ml_hot.node_of) return;
    uint64_t *x = s->d[di].xnode[ml_hot.node_of[wpeer] != ml_hot.my_node] + 2 * side;
    x[0]++;
    x[1] += bytes;
}
ML_INLINE void ml_node_add(ml_slot_t *s, int fid, int side, int wpeer, uint64_t bytes)
{
    ml_node_add_d(s, fid, ml_func_didx[fid], side, wpeer, bytes);
}

/* A send whose size (count x type size) and world peer the wrapper computed
 * once before the call (for the in-flight state too): wpeer < 0 is no peer.
 * tm: the wrapper's timing decision (ml_call_start), ML_TM_OFF when the
 * function is not recorded (its ml_fon test, made once per call). */
ML_INLINE void ml_p2p_sent(ml_slot_t *s, ml_callbytes_t *cb, int tm, int di, uint64_t n, int wpeer)
{
    /* ml_bytes_d, ml_peer_add and ml_node_add_d, with the function's test made once
     * and the peer's range once (the peer matrix counts every function, as ml_peer_add) */
    int on = di >= 0 && tm != ML_TM_OFF;
    ml_drec_t *d = &s->d[di >= 0 ? di : 0];
    if (on) {
        cb->s += n;
        d->bytes_s += n;
        d->hist_s[ml_bin(n)]++;
        d->hist_bytes_s += n;
    }
    if ((unsigned)wpeer < (unsigned)ml_world_size) {
        ml_peer_t *p = &s->peers[wpeer];
        p->msgs_s++;
        p->bytes_s += n;
        if (on && ml_hot.node_of) {
            uint64_t *x = d->xnode[ml_hot.node_of[wpeer] != ml_hot.my_node];
            x[0]++;
            x[1] += n;
        }
    }
}

ML_INLINE void ml_p2p_send(ml_slot_t *s, int fid, int64_t count, MPI_Datatype dt, int dest, MPI_Comm comm)
{
    if (dest == MPI_PROC_NULL) return;
    uint64_t n = count > 0 ? (uint64_t)count * (uint64_t)ml_type_size(dt) : 0;
    ml_bytes(s, fid, ML_SEND, n, n, 1);
    int wpeer = ml_peer_world(comm, dest);
    ml_peer_add(s, ML_SEND, wpeer, n);
    ml_node_add(s, fid, ML_SEND, wpeer, n);
}

/* Bytes a completed receive got, from its status: the byte count Open MPI and
 * MPICH keep in the status (what MPI_Get_elements_x(MPI_BYTE) returns, without
 * the call); other MPIs ask MPI_Get_elements_x. */
ML_INLINE uint64_t ml_status_bytes(const MPI_Status *st)
{
#if defined(OPEN_MPI) && OPEN_MPI
    return (uint64_t)st->_ucount;
#elif defined(MPICH_VERSION) && !defined(I_MPI_VERSION)
    return (uint64_t)(unsigned)st->count_lo | ((uint64_t)((unsigned)st->count_hi_and_cancelled >> 1) << 32);
#else
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0) n = 0;
    return (uint64_t)n;
#endif
}

/* A completed receive: the size actually received and the source, from the status.
 * on: the function is recorded (the wrappers pass their timing decision's test, tm !=
 * ML_TM_OFF; ml_p2p_recv its ml_fon): ml_bytes_d, ml_peer_add and ml_node_add_d with
 * that test made once and the peer's range once, as ml_p2p_sent. */
ML_INLINE void ml_p2p_recv_d(ml_slot_t *s, ml_callbytes_t *cb, int on, int di, MPI_Comm comm, const MPI_Status *st)
{
    if (st->MPI_SOURCE == MPI_PROC_NULL) return;
    uint64_t n = ml_status_bytes(st);
    on = on && di >= 0;
    ml_drec_t *d = &s->d[di >= 0 ? di : 0];
    if (on) {
        int b = ml_bin(n);
        cb->r += n;
        cb->bin = b;
        d->bytes_r += n;
        d->hist_r[b]++;
    }
    if (comm != MPI_COMM_NULL) {
        int wpeer = ml_peer_world(comm, st->MPI_SOURCE);
        if ((unsigned)wpeer < (unsigned)ml_world_size) {
            ml_peer_t *p = &s->peers[wpeer];
            p->msgs_r++;
            p->bytes_r += n;
            if (on && ml_hot.node_of) {
                uint64_t *x = d->xnode[ml_hot.node_of[wpeer] != ml_hot.my_node] + 2 * ML_RECV;
                x[0]++;
                x[1] += n;
            }
        }
    }
}
ML_INLINE void ml_p2p_recv(ml_slot_t *s, int fid, MPI_Comm comm, const MPI_Status *st)
{
    ml_p2p_recv_d(s, &ml_thr.cb, ml_fon[fid], ml_func_didx[fid], comm, st);
}

void ml_rma(ml_slot_t *s, int fid, int side, int64_t count, MPI_Datatype dt, int target, MPI_Win win);
void ml_io(ml_slot_t *s, int fid, int side, int64_t count, MPI_Datatype dt);
void ml_comm_forget(MPI_Comm comm);
void ml_win_forget(MPI_Win win);

/* Collectives: one descriptor for all shapes. */
enum {
    ML_BCAST, ML_REDUCE, ML_ALLREDUCE, ML_SCAN, ML_RSB, ML_RS,
    ML_GATHER, ML_SCATTER, ML_ALLGATHER, ML_ALLTOALL, ML_NALLGATHER, ML_NALLTOALL
};
typedef struct {
    int shape;
    const void *sendbuf, *recvbuf;
    int64_t scount, rcount;           /* scalar counts */
    const void *scounts, *rcounts;    /* count arrays (v/w variants) or NULL */
    int counts64;                     /* arrays hold MPI_Count (1) or int (0) */
    MPI_Datatype stype, rtype;
    const void *stypes, *rtypes;      /* per-peer type arrays (w variants) or NULL */
    int ftypes;                       /* type arrays hold Fortran handles */
    int root;                         /* only for rooted shapes */
    MPI_Comm comm;
} ml_coll_t;
void ml_coll(ml_slot_t *s, int fid, const ml_coll_t *c);

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

/* ---- lifecycle (core.c) ---- */
void ml_after_init(int *argc, char ***argv);
void ml_before_finalize(void);

/* ---- Fortran support (fortran.c) ---- */
extern void *ml_f_in_place, *ml_f_bottom, *ml_f_status_ignore, *ml_f_statuses_ignore;
void ml_fortran_init(void);
static inline const void *ml_fbuf(const void *p)
{
    if (p && p == ml_f_in_place) return MPI_IN_PLACE;
    if (p && p == ml_f_bottom) return MPI_BOTTOM;
    return p;
}
#define ML_NSCRATCH 6
void *ml_scratch(size_t bytes, int which); /* thread-local growable scratch buffers (which < ML_NSCRATCH) */

/* ---- engines (runtime/engines/list.h, registered in engines.c) ---- */
extern const ml_engine_t *const ml_engines[]; /* NULL-terminated, in start order */

/* ---- settings (config.c): the core's table, read with every record kind's, the flight recorder's and every engine's ---- */
enum { ML_TIMING_SAMPLED, ML_TIMING_ALL };
enum { ML_CLOCK_AUTO, ML_CLOCK_TSC, ML_CLOCK_MONOTONIC };
enum { ML_COMPRESS_AUTO, ML_COMPRESS_GZIP, ML_COMPRESS_OFF };
enum { ML_WRITE_AUTO, ML_WRITE_POSIX, ML_WRITE_MPIIO };
typedef struct {
    const char *output, *include, *exclude, *config; /* include/exclude NULL: unset */
    int detail, profile, timing, clock, max_threads, max_requests, quiet, compress, writer;
    int compress_group; /* MPILENS_COMPRESS_GROUP: consecutive ranks whose lines share one gzip member */
    int time_above_ns; /* MPILENS_TIME_ABOVE_NS: sampled timing times every call of a function slower than this */
} ml_core_cfg_t;
extern ml_core_cfg_t ml_cfg;
/* Reads every setting (core and engines) and, on the leader (rank 0), runs the
 * engines' checks; sets the function mask.  0 ok; -1 with one line in err. */
int ml_config_load(ml_buf_t *err, int leader);

/* ---- the profile (profile_*.c) ---- */
int ml_write_profile(void);
extern double ml_overhead_ns, ml_overhead_sampled_ns;
extern uint64_t ml_probe_backtraces; /* the overhead probe's call-site walks left to backtrace() */
extern uint64_t ml_t_init, ml_t_final;
extern int ml_wrapped_c, ml_wrapped_f;
__attribute__((visibility("default"))) size_t mpilens_record_bytes(void); /* exported */

#pragma GCC visibility pop
#endif
