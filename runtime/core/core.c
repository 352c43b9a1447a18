/* Core: per-thread record slots, start-up and shut-down of the profiler. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callend.h"
#include "flight.h"
#include "profile.h"
#include "unwind.h"

/* A new thread's slot: the modules' tables (state.c calls it, before the slot is
 * published); set at load, before any MPI call. */
__attribute__((constructor)) static void ml_core_wire(void) { ml_slot_made = ml_modules_attach; }

__attribute__((visibility("default"))) size_t mpilens_record_bytes(void)
{
    return (size_t)ml_slot_count() * (sizeof(ml_slot_t) + (size_t)ml_world_size * sizeof(ml_peer_t) + ml_modules_bytes());
}

/* The bare call of the probe, out of line as ml_probe_call is. */
static __attribute__((noinline)) void ml_probe_plain(int *r)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, r);
}

/* One call of the probe: the generated wrapper's path around PMPI_Comm_rank (on the
 * reserved record 0).  Its call site: at depth 1 an application's address (0x1000),
 * which the depth-1 cache then answers as for a call site called again; at depth 2 and
 * more, where every call walks the stack, this function's own return address, a frame
 * the walk follows (MPILENS_CALLSITE_UNWIND) as it follows an application's -- never
 * the backtrace() fallback that an address outside the stack sends it to. */
static __attribute__((noinline)) void ml_probe_call(int *r)
{
    enum { FID = 0 };
    void *ra = ml_hot.cs_depth > 1 ? __builtin_return_address(0) : (void *)0x1000;
    int on = ml_enter();
    ml_slot_t *S = NULL;
    int tm = 0;
    uint64_t t0 = 0;
    if (on) { S = ml_slot(); tm = ml_call_start(S, FID, 0); if (ML_TIMED(tm)) t0 = ml_now(); }
    if (on) ml_fl_in(S, FID, ML_FL_OTHER, MPI_COMM_WORLD, ML_FL_NONE, -1, 0, ML_FL_NONE, -1, NULL, 0, ML_TIMED(tm) ? t0 : ml_hot.fl_clock);
    PMPI_Comm_rank(MPI_COMM_WORLD, r);
    if (on) ml_fl_out(S);
    uint64_t dt = ML_TIMED(tm) ? ml_now() - t0 : 0;
    ml_leave();
    /* one call-site record; no communicator's record (those are not emptied after the probe) */
    if (on) ml_call_done(S, FID, -1, ML_TL_OTHER, tm, t0, dt, 0, MPI_COMM_NULL, 0, 0, -1, ra);
}

/* Instrumentation cost per call: the probe's call (ml_probe_call) minus the bare one;
 * best of 7.  Its walks left to backtrace() are counted in ml_probe_backtraces. */
static double ml_measure_overhead(void)
{
    enum { N = 4000, REPS = 7 };
    int r;
    uint64_t best_plain = UINT64_MAX, best_wrapped = UINT64_MAX, rules, fb0, fb1;
    ml_uw_stats(&rules, &fb0);
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t a0 = ml_now_slow();
        for (int i = 0; i < N; i++) ml_probe_plain(&r);
        uint64_t a1 = ml_now_slow();
        for (int i = 0; i < N; i++) ml_probe_call(&r);
        uint64_t a2 = ml_now_slow();
        if (a1 - a0 < best_plain) best_plain = a1 - a0;
        if (a2 - a1 < best_wrapped) best_wrapped = a2 - a1;
    }
    ml_uw_stats(&rules, &fb1);
    ml_probe_backtraces += fb1 - fb0;
    double ns = ((double)best_wrapped - (double)best_plain) / N;
    return ns > 0 ? ns : 0.0;
}

/* Where this process is in its life: MPI_Init and MPI_Finalize seen (once each). */
static struct {
    int init_done, final_done;
} LF;

void ml_after_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (LF.init_done) return;
    LF.init_done = 1;
    ml_thr.depth++; /* our own MPI calls below are never recorded */
    PMPI_Comm_size(MPI_COMM_WORLD, &ml_world_size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &ml_world_rank);
    ml_modules_early(); /* the node of every rank, before any call is recorded (nodes.c) */
    /* Every setting of the core and the engines, and the engines' checks on
     * rank 0: a bad one stops every rank here with one line. */
    ml_buf_t err = {0};
    ml_agree_or_stop(ml_config_load(&err, ml_world_rank == 0) ? err.p : NULL);
    ml_buf_free(&err);
    int eng = 0, any = 0;
    for (int i = 0; ml_engines[i]; i++)
        if (ml_engines[i]->init && ml_engines[i]->init()) eng = 1;
    PMPI_Allreduce(&eng, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        PMPI_Finalize();
        _exit(2);
    }
    ml_clock_init();
    ml_fortran_init();
    ml_modules_init(); /* the modules (modules_list.h) */
    ml_hot.slow_ticks = ml_ns_to_ticks((uint64_t)ml_cfg.time_above_ns);
    if (ml_cfg.profile) {
        /* The probe runs as an outermost call, even when MPI_Init was reached
         * from a Fortran wrapper (MPICH's mpi_init_ calls the C MPI_Init). */
        int depth = ml_thr.depth;
        ml_fon[0] = 1;
        ml_hot.active = 1;
        ml_thr.depth = 0;
        /* a fully timed call (what "caution" compares with), then the policy in force */
        ml_hot.sample_mask = 0;
        ml_overhead_ns = ml_measure_overhead();
        ml_hot.sample_mask = ml_cfg.timing == ML_TIMING_SAMPLED ? ML_SAMPLE_PERIOD - 1 : 0;
        memset(&ml_slot()->f[0], 0, sizeof(ml_frec_t));
        ml_overhead_sampled_ns = ml_measure_overhead();
        ml_thr.depth = depth;
        memset(&ml_slot()->f[0], 0, sizeof(ml_frec_t));
        ml_modules_reset(ml_slot());
        ml_fon[0] = 0;
    }
    ml_t_init = ml_now();
    if (ml_cfg.profile) ml_modules_start(); /* collective: the flight recorder (its partial directory) */
    ml_thr.depth--;
}

/* At exit: MPI was initialised but never through mpilens (the program uses
 * bindings that reach PMPI directly, such as mpi_f08): say so once (rank 0 or
 * an unknown rank) instead of leaving the user with a missing profile. */
__attribute__((destructor)) static void ml_unseen_check(void)
{
    int init = 0;
    if (LF.init_done || PMPI_Initialized(&init) != MPI_SUCCESS || !init) return;
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (!r) r = getenv("PMIX_RANK");
    if (r && atoi(r) != 0) return;
    fprintf(stderr, "mpilens: this program started MPI without passing through mpilens (this MPI's "
            "mpi_f08 Fortran bindings are not interposed; use 'use mpi' or mpif.h): no profile written\n");
}

/* MPI_Finalize's record (docs/runtime.md): the time this rank waits in
 * MPI_Finalize for the last rank to call it, measured by a barrier before the
 * profile is written.  PMPI_Finalize itself runs after the profile is written,
 * so its own duration cannot be in it. */
static void ml_finalize_wait(void)
{
    int fid = 0;
    for (int i = 1; i < ML_NFUNC && !fid; i++)
        if (strcmp(ml_func_name[i], "MPI_Finalize") == 0) fid = i;
    if (!fid || !ml_fon[fid]) return; /* the same on every rank (MPILENS_INCLUDE/EXCLUDE) */
    uint64_t t0 = ml_now();
    MPI_Request r;
    PMPI_Ibarrier(MPI_COMM_WORLD, &r);
    ml_fin_wait(&r); /* sleeping between tests (fin.c) */
    ml_time(ml_slot(), fid, ml_now() - t0);
}

void ml_before_finalize(void)
{
    if (LF.final_done || !LF.init_done) return;
    LF.final_done = 1;
    ml_t_final = ml_now();
    int was_active = ml_hot.active || ml_paused;
    ml_hot.active = 0;
    ml_thr.depth++;
    ml_modules_finalize_enter(); /* the flight recorder: a rank waiting here shows as in MPI_Finalize */
    ml_fin_start(); /* rank 0's clock at the end of each step (fin.c) */
    if (was_active) ml_finalize_wait();
    ml_fin_mark("barrier");
    if (was_active) ml_modules_finalize(); /* late arrival per collective (late.c); marks each */
    for (int i = 0; ml_engines[i]; i++)
        if (ml_engines[i]->finalize) ml_engines[i]->finalize();
    ml_fin_mark("engines");
    int failed = was_active ? ml_write_profile() : 1;
    if (!was_active)
        ml_report_to("none", ml_cfg.profile ? "recording was off at MPI_Finalize" : "MPILENS_PROFILE=off");
    ml_modules_stop(!failed); /* the flight recorder: a complete profile, the partial files go */
    ml_thr.depth--;
}

/* MPI_Pcontrol is variadic: wrapped by hand (the MPI ignores the extra arguments too). */
__attribute__((visibility("default"))) int MPI_Pcontrol(const int level, ...)
{
    va_list ap;
    va_start(ap, level);
    const char *label = level == 1 || level == -1 ? va_arg(ap, const char *) : NULL;
    va_end(ap);
    ml_pcontrol(level, label); /* regions and recording off/on (region.c) */
    int on = ml_enter();
    uint64_t t0 = ml_now();
    int ret = PMPI_Pcontrol(level);
    uint64_t t1 = ml_now();
    ml_leave();
    if (on) ml_time(ml_slot(), ML_FID_PCONTROL, t1 - t0);
    return ret;
}
