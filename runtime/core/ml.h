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
 * wrappers include).  This file does not include hooks.h.  Its parts, by
 * topic, each including the one before: ml_records.h (the records and their
 * timing counters), ml_state.h (the core's state), ml_clock.h, ml_fastpath.h
 * (the per-call path), ml_sem.h (bytes, peers, nodes), ml_req.h (requests);
 * here what is left: lifecycle, Fortran, engines, settings, the profile.  A
 * file that needs only the clock includes ml_clock.h.
 */
#ifndef MLENS_ML_H
#define MLENS_ML_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mltypes.h"     /* ML_TLS, ML_INLINE, the module interface and registry */
#include "ml_records.h"  /* the records: ml_timing_t, ml_frec_t, ml_drec_t, ml_slot_t */
#include "ml_state.h"    /* the core's state: ml_fon, ml_thr, ml_hot, the slots */
#include "ml_clock.h"    /* ml_now, ticks and seconds */
#include "ml_fastpath.h" /* ml_enter, ml_slot, the timing policy, ml_count, ml_bin */
#include "ml_sem.h"      /* bytes, peers, nodes, the collectives' descriptor */
#include "ml_req.h"      /* request tracking */
#include "ml_config.h"   /* the core's settings (ml_cfg) */
#include "ml_funcs.h"    /* generated: ML_NFUNC, ML_NDATA, ml_func_name[], ml_func_didx[] */
#include "ml_schema.h"   /* generated from schema/profile.json: ML_NBINS, ML_CAUTION_FACTOR, ... */
#include "engine.h"      /* runtime/common: the engine interface, settings, text buffers */
#pragma GCC visibility push(hidden) /* this file's declarations: direct accesses, no GOT (mltypes.h) */

#ifdef MPI_F_STATUS_SIZE
#define ML_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else /* Open MPI 4 does not define it in mpi.h: a Fortran status has the C status's size */
#define ML_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

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

/* ---- the profile (profile_*.c) ---- */
int ml_write_profile(void);
extern double ml_overhead_ns, ml_overhead_sampled_ns;
extern uint64_t ml_probe_backtraces; /* the overhead probe's call-site walks left to backtrace() */
extern uint64_t ml_t_init, ml_t_final;
extern int ml_wrapped_c, ml_wrapped_f;
__attribute__((visibility("default"))) size_t mpilens_record_bytes(void); /* exported */

#pragma GCC visibility pop
#endif
