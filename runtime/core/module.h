/* The module interface of the profiler core (docs/architecture.md, "Modules").
 *
 * A module is what the core starts, asks at each step of a run and writes
 * into the profile, without knowing it by name: the record kinds (call
 * sites: callsite.c, regions: region.c, the time line: timeline.c,
 * communicators: comms.c), the node layout (nodes.c: "hosts" and "nodes"),
 * the machine facts (machine.c), late arrival (late.c), the process
 * topologies (topo.c) and the flight recorder (flight.c).  Each module is one
 * descriptor `const ml_module_t ml_module_<name>` in its own file and one
 * line ML_MODULE(<name>) in modules_list.h, as an engine is one ml_engine_t
 * and one line in runtime/engines/list.h.  The core (modules.c) loops over
 * the list at every step, in list order: settings, start-up, a new thread's
 * tables, the call hooks, MPI_Finalize, the profile's reduction and its JSON
 * members, the end.
 *
 * This header has no state and no per-call code: a module that only takes
 * part at start-up or in the profile includes it and the headers of what it
 * reads (a per-call update stays inline in the wrappers' headers: hooks.h,
 * callend.h, flight.h, late.h). */
#ifndef MLENS_MODULE_H
#define MLENS_MODULE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mlbuf.h"    /* runtime/common: text/JSON buffer */
#include "settings.h" /* runtime/common: settings tables */
#pragma GCC visibility push(hidden) /* this file's declarations: direct accesses, no GOT (mltypes.h) */

typedef struct ml_slot ml_slot_t;       /* one thread's records (ml.h) */
typedef struct ml_profile ml_profile_t; /* the profile being written (profile.h) */

/* The modules, numbered in list order: ML_MOD_callsites, ..., ML_NMODULES. */
#define ML_MODULE(name) ML_MOD_##name,
enum {
#include "modules_list.h"
    ML_NMODULES
};
#undef ML_MODULE

/* One call as a module's out-of-line hook sees it (ml_module_t.call). */
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
    ML_HOOKS_CALL = 2    /* a module's out-of-line hook (ml_module_t.call) is or has been on */
};

/* A function's node counters as the profile writes them (ml_module_t.function_json):
 * the rank line's from its data record, the header's from the reduced words. */
typedef struct {
    int fid, di;                  /* the function and its data record (ml_func_didx) */
    const uint64_t *xnode;        /* [2][4]: same node, other node (msgs_s, bytes_s, msgs_r, bytes_r) */
    const uint64_t *span_calls;   /* [2]: collectives within one node, across nodes */
    const uint64_t *span_max;     /* [2]: most nodes, most ranks on one node; NULL in the header */
} ml_fdata_t;

/* A module.  Every member but name may be NULL (nothing to do at that step).
 * The steps, in the order a run meets them: */
typedef struct ml_module {
    const char *name;          /* also the finalize steps' marks (MPILENS_FIN_TRACE) */
    /* Its rows of the settings table ({0}-ended), read with the core's and every
     * engine's (config.c; part "profiler" in `mpilens config`).  The module owns
     * the variables its rows write. */
    const ml_setting *settings;
    /* Every rank, collective over MPI_COMM_WORLD, right after MPI_Init and
     * before the settings: what the engines' start may read (the node layout). */
    void (*early)(void);
    /* Every rank, once after MPI_Init, the settings and the engines' start
     * (core.c): process-wide state.  Returns the ml_hot.hooks_on bits it needs
     * from the first call (0: none yet; regions turn theirs on when the first
     * region opens). */
    int (*init)(void);
    /* A new thread's tables (core.c, under the slot lock): the slot's typed
     * pointer (cs, rg, tl, cm for the built-in kinds) or s->kx[ML_MOD_<name>].
     * A module that is off leaves it NULL. */
    void (*attach)(ml_slot_t *s);
    size_t (*bytes)(void);     /* those tables' size per thread (mpilens_record_bytes) */
    void (*reset)(ml_slot_t *s); /* empties them (after the start-up overhead probe) */
    /* Per call, after the function's record, out of line (the wrapper holds
     * the shared slot's lock), while the module's bit of ml_hot.kinds_rare is
     * set (hooks.h): from the start if its init returned ML_HOOKS_CALL, or
     * while the module says so (ml_module_call_on; regions: while one is
     * open).  Call sites, the time line, communicators, late arrival and the
     * flight recorder have none: their updates are inline in the wrappers
     * (callend.h, callend.c, flight.h, late.h). */
    void (*call)(ml_slot_t *s, const ml_call_t *c);
    /* Every rank, collective, at the end of MPI_Init when the profile is on
     * (the flight recorder: its directory agreed, its thread started). */
    void (*start)(void);
    /* MPI_Finalize reached, before its barrier (the flight recorder: this
     * thread is "in MPI_Finalize"). */
    void (*finalize_enter)(void);
    /* Every rank, collective, after MPI_Finalize's barrier when recording was
     * on, before the engines stop (late arrival's reduction). */
    void (*finalize)(void);
    /* Every rank, collective, in the profile's reduction (profile_reduce.c),
     * after the core's aggregates: p->m (this rank's merged records), p->host,
     * p->span_max (rank 0) are set.  What it reduces it keeps for its JSON. */
    void (*reduce)(const ml_profile_t *p);
    /* Rank 0: header members (",\"key\":value..."), about where and how the
     * job ran (after "nranks"; profile_format.c) */
    void (*header_where_json)(ml_buf_t *b);
    /* ... and about its records (after "functions") */
    void (*header_json)(ml_buf_t *b);
    /* Every rank: rank-line members about where it ran (after "node") */
    void (*rank_where_json)(ml_buf_t *b);
    /* Every rank: rank-line members about its records (after "peers"), its
     * threads merged; also from the flight recorder's thread in a partial
     * profile (ml_in_dump, hooks.h: read only, no MPI call). */
    void (*rank_json)(ml_buf_t *b);
    /* A function's members in its "functions" entry, header and rank line. */
    void (*function_json)(ml_buf_t *b, const ml_fdata_t *f);
    /* Every rank, after the profile is formatted: frees what reduce kept. */
    void (*release)(void);
    /* Every rank, the last step of MPI_Finalize (profile_written: 1 if the
     * complete profile was written). */
    void (*stop)(int profile_written);
} ml_module_t;

/* The registry (modules.c): the modules of modules_list.h in list order, NULL-ended,
 * and the core's loops over it, one per step above. */
extern const ml_module_t *const ml_modules[];
/* The settings tables of the modules, as parts of "profiler" (config.c): up to
 * max parts into p; returns how many. */
int ml_modules_settings(ml_setting_part *p, int max);
void ml_modules_early(void);                /* core.c */
void ml_modules_init(void);                 /* core.c */
void ml_modules_attach(ml_slot_t *s);       /* a new thread's slot (core.c, under the slot lock) */
size_t ml_modules_bytes(void);              /* per thread (mpilens_record_bytes) */
void ml_modules_reset(ml_slot_t *s);        /* after the overhead probe (core.c) */
void ml_modules_start(void);                /* core.c */
void ml_modules_finalize_enter(void);       /* core.c */
void ml_modules_finalize(void);             /* core.c: each one, then its finalize step's mark */
void ml_modules_reduce(const ml_profile_t *p); /* profile_reduce.c: each one, then its mark */
void ml_modules_header_where_json(ml_buf_t *b); /* profile_format.c */
void ml_modules_header_json(ml_buf_t *b);
void ml_modules_rank_where_json(ml_buf_t *b);
void ml_modules_rank_json(ml_buf_t *b);     /* profile_format.c, dump.c */
void ml_modules_function_json(ml_buf_t *b, const ml_fdata_t *f);
void ml_modules_release(void);              /* profile_reduce.c (ml_profile_free) */
void ml_modules_stop(int profile_written);  /* core.c */

#pragma GCC visibility pop
#endif
