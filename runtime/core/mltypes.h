/* mpilens runtime: the types the core's headers share, with no state and no
 * per-call code.  ml.h (the function records, the clock, the per-call path)
 * and hooks.h (the record kinds' per-call hooks) both start from here:
 *
 *     mltypes.h  <-  ml.h  <-  hooks.h  <-  flight.h  <-  the generated wrappers
 *
 * (hooks.h includes ml.h; ml.h does not include hooks.h).  A file that only
 * registers or lists record kinds (kinds.c, profile_format.c) needs this
 * header and ml.h, not the per-call hooks.
 *
 * Record kinds (docs/architecture.md, "Record kinds"): the per-call records
 * kept beside the function records -- call sites (callsite.c), regions
 * (region.c), the time line (timeline.c), communicators (comms.c).  Each
 * kind is one descriptor `const ml_kind_t ml_kind_<name>` in its own file
 * and one line ML_KIND(<name>) in kinds_list.h, as engines are one
 * ml_engine_t and one line in runtime/engines/list.h.  The core (kinds.c)
 * loops over the list at every step: settings, init, a new thread's tables,
 * their size, the reset after the overhead probe, the profile's header and
 * rank-line members. */
#ifndef MLENS_MLTYPES_H
#define MLENS_MLTYPES_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mlbuf.h"    /* runtime/common: text/JSON buffer */
#include "settings.h" /* runtime/common: settings tables */
/* The library's own declarations, in this header and in ml.h, hooks.h, late.h,
 * flight.h and callend.h, are hidden (after their system and MPI includes): the
 * library is built with hidden visibility, and a declaration the compiler knows
 * hidden is read with one instruction (mov sym(%rip)) where a default one takes a
 * GOT load first -- one instruction per global on every wrapper's path.  The few
 * exported functions say so with visibility("default"). */
#pragma GCC visibility push(hidden)

#define ML_TLS __thread __attribute__((tls_model("initial-exec")))
/* the per-call helpers: always inline into the wrappers (no call, no copy) */
#define ML_INLINE static inline __attribute__((always_inline))

typedef struct ml_slot ml_slot_t; /* one thread's records (ml.h) */

/* The kinds, numbered in list order: ML_KIND_callsites, ..., ML_NKINDS. */
#define ML_KIND(name) ML_KIND_##name,
enum {
#include "kinds_list.h"
    ML_NKINDS
};
#undef ML_KIND

/* One call as a kind's out-of-line hook sees it (ml_kind_t.call). */
typedef struct {
    int fid;           /* the function (ml_func_name[fid]) */
    int cls;           /* its time-line class (ML_TL_P2P, ...) */
    int tm;            /* timed: ML_TM_NO, ML_TM_POLICY, ML_TM_SAMPLE (ml.h) */
    uint64_t t0, dt;   /* start and duration in ticks when timed */
    uint64_t bs, br;   /* bytes the semantic helpers gave the call: sent, received */
    MPI_Comm comm;     /* its communicator argument, else MPI_COMM_NULL */
    void *ra;          /* the wrapper's return address (its immediate caller) */
} ml_call_t;

/* ml_hot.hooks_on's bits (hooks.h): the wrapper's per-call hooks run when any is set. */
enum {
    ML_HOOKS_INLINE = 1, /* a built-in kind's inline update (callend.h) is on */
    ML_HOOKS_CALL = 2    /* a kind's out-of-line hook (ml_kind_t.call) is or has been on */
};

/* A record kind.  Every member but name may be NULL (nothing to do). */
typedef struct ml_kind {
    const char *name;          /* "callsites", "regions", "timeline", "comms" */
    /* Its rows of the settings table ({0}-ended), read with the core's and every
     * engine's (config.c; part "profiler" in `mpilens config`).  The kind owns
     * the variables its rows write. */
    const ml_setting *settings;
    /* Every rank, once after MPI_Init and the settings (core.c): process-wide
     * state.  Returns the ml_hot.hooks_on bits it needs from the first call
     * (0: none yet; regions turn theirs on when the first region opens). */
    int (*init)(void);
    /* A new thread's tables (core.c, under the slot lock): the slot's typed
     * pointer (cs, rg, tl, cm for the built-in kinds) or s->kx[ML_KIND_<name>].
     * A kind that is off leaves it NULL. */
    void (*attach)(ml_slot_t *s);
    size_t (*bytes)(void);     /* those tables' size per thread (mpilens_record_bytes) */
    void (*reset)(ml_slot_t *s); /* empties them (after the start-up overhead probe) */
    /* Per call, after the function's record, out of line (the wrapper holds
     * the shared slot's lock), while the kind's bit of ml_hot.kinds_rare is set
     * (hooks.h): from the start if its init returned ML_HOOKS_CALL, or while
     * the kind says so (ml_kind_call_on; regions: while one is open).  Call
     * sites, the time line and communicators have none: their updates are
     * inline in ml_call_done/ml_call_end (callend.h, callend.c), reading the slot's typed pointers. */
    void (*call)(ml_slot_t *s, const ml_call_t *c);
    void (*header_json)(ml_buf_t *b); /* rank 0: its header members (",\"key\":value...") */
    /* Every rank: its rank-line members (",\"key\":value..."), its threads
     * merged; also from the flight recorder's thread in a partial profile
     * (ml_in_dump, hooks.h: read only, no MPI call). */
    void (*rank_json)(ml_buf_t *b);
} ml_kind_t;

/* The registry (kinds.c): the kinds of kinds_list.h in list order, NULL-ended. */
extern const ml_kind_t *const ml_kinds[];
void ml_kinds_init(void);                 /* after MPI_Init (core.c) */
void ml_kinds_attach(ml_slot_t *s);       /* a new thread's slot (core.c, under the slot lock) */
size_t ml_kinds_bytes(void);              /* per thread (mpilens_record_bytes) */
void ml_kinds_reset(ml_slot_t *s);        /* after the overhead probe (core.c) */
void ml_kinds_header_json(ml_buf_t *b);   /* header members (profile_format.c) */
void ml_kinds_rank_json(ml_buf_t *b);     /* rank-line members (profile_format.c, dump.c) */
/* The settings tables of the kinds, as parts of "profiler" (config.c): up to
 * max parts into p; returns how many. */
int ml_kinds_settings(ml_setting_part *p, int max);

#pragma GCC visibility pop
#endif
