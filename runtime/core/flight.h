/* The flight recorder (docs/flight-recorder.md): the in-flight hooks of every
 * wrapper, and the recorder that writes a rank's partial profile without any
 * collective when the job is signalled, reaches its time limit, hangs in one
 * MPI call or calls MPI_Abort (flight.c, dump.c).
 *
 * The hooks cost a few stores per call: no clock read (the entry time is the
 * call's own timing start when it is timed, else the recorder's clock, which
 * its thread advances every ML_FL_TICK_MS), no lock, no allocation.  Built
 * with -DML_NO_INFLIGHT they vanish (the overhead benchmark's baseline). */
#ifndef MLENS_FLIGHT_H
#define MLENS_FLIGHT_H
#include <limits.h>

#include "hooks.h" /* ml.h and the record kinds' per-call hooks (the wrappers include this file) */
#include "late.h"
#pragma GCC visibility push(hidden) /* this file's declarations: direct accesses, no GOT (mltypes.h) */

#ifdef ML_NO_INFLIGHT
#define ML_FL_ON 0
#else
#define ML_FL_ON 1
#endif
#define ML_FL_NOARG INT_MIN /* no peer argument */
#define ML_FL_TICK_MS 100


/* a peer argument of comm -> world rank or one of ML_FL_* (inflight.h) */
ML_INLINE int ml_fl_peer(MPI_Comm comm, int r)
{
    if (r >= 0) {
        if (comm == MPI_COMM_WORLD) return r;
        int w = comm == MPI_COMM_NULL ? ML_NOPEER : ml_peer_world_slow(comm, r);
        return w < 0 ? ML_FL_UNKNOWN : w;
    }
    if (r == ML_FL_NOARG) return ML_FL_NONE;
    return r == MPI_ANY_SOURCE ? ML_FL_ANY : r == MPI_PROC_NULL ? ML_FL_PROCNULL : ML_FL_NONE;
}

ML_INLINE int64_t ml_fl_bytes(int64_t count, MPI_Datatype dt)
{
    return count > 0 ? count * ml_type_size(dt) : 0;
}

/* The in-flight state's seq + 1 (inflight.h), by this thread, the only one that
 * writes it.  x86-64: one increment of memory, not locked (no other writer; an
 * aligned 8-byte store is atomic; x86 keeps stores in order, so a reader that
 * sees the new seq sees the fields stored before it; "memory" keeps the compiler
 * from moving those stores after it, and costs nothing next to the PMPI call,
 * which the compiler treats the same way).  Elsewhere: a release store. */
ML_INLINE void ml_fl_bump(ml_fl_t *f)
{
#if defined(__x86_64__)
    __asm__ __volatile__("addq $1, %0" : "+m"(f->seq) : : "memory");
#else
    __atomic_store_n(&f->seq, f->seq + 1, __ATOMIC_RELEASE);
#endif
}

/* before the PMPI call (outermost calls while profiling, slot not shared: the
 * wrapper tests S->shared once); peer, peer2: world ranks or ML_FL_* (the
 * wrapper converts its arguments with ml_fl_peer, once, and reuses them for
 * the records).  A call of kind ML_FL_OTHER has no peer, tag, bytes or
 * requests: only its function, start and communicator are written (dump.c
 * reads the others only for the other kinds); peer2 and tag2 are written for
 * ML_FL_SENDRECV only, rq and nrq for ML_FL_WAIT only, peer, tag and bytes
 * for all but ML_FL_WAIT. */
ML_INLINE void ml_fl_set(ml_slot_t *S, int fid, int kind, MPI_Comm comm, int peer, int tag, int64_t bytes,
                             int peer2, int tag2, const MPI_Request *rq, int nrq, uint64_t t0)
{
#if ML_FL_ON
    ml_fl_t *f = &S->fl;
    /* fid and kind, adjacent: one store of a constant */
    uint64_t fk = (uint64_t)(uint32_t)fid | (uint64_t)(uint32_t)kind << 32;
    __builtin_memcpy(&f->fid, &fk, sizeof fk);
    f->t0 = t0;
    f->comm = comm;
    if (kind != ML_FL_OTHER) {
        if (kind != ML_FL_WAIT) { /* a wait has no peer, tag or bytes (dump.c) */
            f->peer = peer;
            f->tag = tag;
            f->bytes = bytes;
        }
        /* written only for the kinds that have them: dump.c reads the second peer and
         * tag of a Sendrecv only, the requests of a wait only, and the requests'
         * table (ml_req_track) a receive's second peer only in a Sendrecv's call */
        if (kind == ML_FL_SENDRECV) {
            f->peer2 = peer2;
            f->tag2 = tag2;
        }
        if (kind == ML_FL_WAIT) {
            f->rq = rq;
            f->nrq = nrq;
        }
    }
    if (kind == ML_FL_COLL) {
        /* its place in the communicator's order of collectives (one increment; kind is a
         * constant of each wrapper, so other calls pay nothing) */
        ml_cm_rec_t *cm = S->cm;
        int id = comm == MPI_COMM_WORLD ? 0 : cm && comm != MPI_COMM_NULL ? ml_cm_id(comm) : ml_hot.cm_max;
        if (id == 0 && cm && ml_hot.cm_max) {
            /* which operation the k-th on MPI_COMM_WORLD is, before k is counted: a dump that
             * reads the count finds its entry (dump.c; x86-64 keeps stores in order) */
            S->wcoll[(cm[0].colls + 1) & 7] = (uint64_t)(uint32_t)fid | (uint64_t)(uint32_t)peer << 32;
            __atomic_signal_fence(__ATOMIC_RELEASE);
        }
        f->cseq = cm && id < ml_hot.cm_max ? ++cm[id].colls : 0;
        ml_la_in(fid, id, f->cseq); /* late arrival: a sampled call on MPI_COMM_WORLD (late.h) */
        /* a collective on a new communicator: its members known to the recorder (sem.c's table) */
        if (comm != MPI_COMM_WORLD && comm != MPI_COMM_NULL) ml_peer_world_slow(comm, 0);
    }
    ml_fl_bump(f);
#else
    (void)S; (void)fid; (void)kind; (void)comm; (void)peer; (void)tag; (void)bytes;
    (void)peer2; (void)tag2; (void)rq; (void)nrq; (void)t0;
#endif
}

/* after the PMPI call (slot not shared).  Only this thread writes seq: incremented
 * in the slot, not kept across the call (one register or stack slot less) */
ML_INLINE void ml_fl_done(ml_slot_t *S)
{
#if ML_FL_ON
    ml_fl_bump(&S->fl);
#else
    (void)S;
#endif
}

/* The same, testing the slot: a slot shared by threads (MPILENS_MAX_THREADS
 * reached) has no single call it is inside. */
ML_INLINE void ml_fl_in(ml_slot_t *S, int fid, int kind, MPI_Comm comm, int peer, int tag, int64_t bytes,
                        int peer2, int tag2, const MPI_Request *rq, int nrq, uint64_t t0)
{
    if (__builtin_expect(S->shared, 0)) return;
    (void)ml_fl_set(S, fid, kind, comm, peer, tag, bytes, peer2, tag2, rq, nrq, t0);
}
ML_INLINE void ml_fl_out(ml_slot_t *S)
{
    if (__builtin_expect(S->shared, 0)) return;
    ml_fl_done(S);
}

/* ---- the recorder (flight.c) ---- */
typedef struct {
    unsigned dump_signals;      /* bit i: ml_fl_signals[i] */
    double dump_at, dump_margin, hang_after; /* seconds; 0: off */
    int crash_dump;
    double deadline_s;          /* seconds after MPI_Init of the time-limit dump, 0: none */
} ml_fl_cfg_t;
extern ml_fl_cfg_t ml_fl_cfg;   /* settings (flight.c's table ml_fl_settings, the module's) */
typedef struct { const char *name; int sig; } ml_fl_signame_t;
extern const ml_fl_signame_t ml_fl_signals[]; /* the signals MPILENS_DUMP_SIGNALS may name */
const char *ml_fl_signal_name(int sig);
/* started, marked in MPI_Finalize and stopped as the module "flight" (flight.c, modules_list.h) */
void ml_flight_abort(int fid, MPI_Comm comm, int errorcode); /* MPI_Abort's wrapper, before the abort */

/* Times this process was stopped (SIGSTOP, SIGTSTP: the recorder's clock ran, the
 * process's CPU time did not), seen by the recorder's thread when it runs again; the
 * last ML_FL_STOPS kept (ring), written in each dump. */
#define ML_FL_STOPS 4
typedef struct {
    double from, for_s, cpu_s; /* epoch seconds; how long; CPU time used meanwhile */
} ml_fl_stop_t;
extern ml_fl_stop_t ml_fl_stops[ML_FL_STOPS];
extern int ml_fl_stops_n; /* stops seen (the last ML_FL_STOPS kept) */

/* ---- the dump (dump.c) ---- */
enum { ML_DUMP_SIGNAL, ML_DUMP_TIME_LIMIT, ML_DUMP_HANG, ML_DUMP_ABORT, ML_DUMP_CRASH };
/* Writes <dir>/rank-N atomically (the previous one kept as rank-N.prev, the first hang
 * dump as rank-N.hang).  0 ok. */
int ml_dump_write(const char *dir, int reason, int sig, int code);
void ml_dump_prepare(const char *job); /* at start: fixed facts (job: rank 0's id), buffers: no allocation later */
int ml_dump_is_mine(const char *path); /* 1: a dump of this process (job id and pid) */

/* req.c: a tracked request as the recorder reads it */
typedef struct {
    int fid, flags, peer, tag;
    int64_t bytes;
    uint64_t t0;
    MPI_Comm comm;
} ml_req_view_t;
int ml_req_at(const ml_slot_t *s, int i, ml_req_view_t *v);         /* entry i of the table: 1 if live */
int ml_req_lookup(const ml_slot_t *s, MPI_Request r, ml_req_view_t *v); /* 1 if tracked */
/* sem.c: a communicator's members (world ranks) if known, without MPI calls */
int ml_comm_members(MPI_Comm comm, int *size, const int **world);

#pragma GCC visibility pop
#endif
