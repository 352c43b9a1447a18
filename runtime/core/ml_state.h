/* mpilens runtime: the core's global state (state.c): the function mask, the world,
 * this thread's hot state, the process-wide hot state, the slots */
#ifndef MLENS_ML_STATE_H
#define MLENS_ML_STATE_H

#include "ml_records.h"

#pragma GCC visibility push(hidden) /* direct accesses, no GOT (mltypes.h) */

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

#pragma GCC visibility pop
#endif
