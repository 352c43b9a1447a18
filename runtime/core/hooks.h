/* The record kinds' per-call state and helpers: call sites (callsite.c),
 * regions (region.c), the time line (timeline.c) and communicators (comms.c),
 * each a module of modules_list.h (module.h; the registry's loops are in
 * modules.c).  The wrappers' per-call step is callend.h: ml_call_done counts an
 * untimed call in its function's record, its time-line cell, its
 * communicator's record and (depth 1) its call site, inline; ml_call_end
 * (callend.c) does the full update of a timed call, and calls the out-of-line
 * hooks of the kinds that have one on (behind one test: ml_hot.kinds_rare;
 * regions, while one is open).  No lock (the wrapper holds the shared slot's),
 * no allocation: the tables are made by each kind's attach at the thread's
 * first call.  Each kind's record holds its calls and time in an ml_timing_t
 * (ml.h) next to its byte counters.
 *
 * Include order: mltypes.h <- ml.h <- this file <- flight.h <- callend.h. */
#ifndef MLENS_HOOKS_H
#define MLENS_HOOKS_H

#include "ml.h"
#pragma GCC visibility push(hidden) /* this file's declarations: direct accesses, no GOT (mltypes.h) */

#define ML_CS_MAXDEPTH 8

/* One call site: the return addresses into the application (innermost first). */
typedef struct {
    uintptr_t pc[ML_CS_MAXDEPTH];
    uint32_t fid;
    uint8_t n;          /* frames in pc */
    uint8_t internal;   /* depth 1: pc lies in an MPI library or mpilens: attribute by walking */
    uint16_t region;    /* unused (0): fid..region form the word the depth-1 probe compares */
    ml_timing_t t;           /* calls and their time (ml.h) */
    uint64_t bytes_s, bytes_r;
    uint64_t hist[ML_NBINS]; /* per call: size class of its bytes (sent, else received) */
} ml_cs_rec_t;
_Static_assert(offsetof(ml_cs_rec_t, fid) == 8 * ML_CS_MAXDEPTH && offsetof(ml_cs_rec_t, region) == 8 * ML_CS_MAXDEPTH + 6,
               "the depth-1 probe compares fid, n, internal and region as one word");
_Static_assert(offsetof(ml_cs_rec_t, hist) == 8 * ML_CS_MAXDEPTH + 64, "the counters a call updates: 56 bytes before hist");

typedef struct ml_cstab {
    int cap, n;          /* records held at most (MPILENS_CALLSITE_SLOTS), records in use */
    uint32_t mask;       /* index table size - 1 (a power of two >= 2 cap) */
    int32_t *idx;        /* open addressing on the key: record index, -1 empty */
    ml_cs_rec_t *rec;
    ml_timing_t over;    /* calls of sites beyond cap */
    uint64_t over_bytes_s, over_bytes_r;
} ml_cstab_t;


/* Time line (timeline.c): per thread, bins of 2^shift ticks from MPI_Init, per
 * function class; when a call falls past the last bin, pairs of bins merge. */
enum { ML_TL_P2P, ML_TL_COLL, ML_TL_RMA, ML_TL_IO, ML_TL_OTHER, ML_TL_NCLASS };
typedef struct {
    ml_timing_t t;       /* calls and their time (ml.h) */
    uint64_t bytes;
} ml_tl_cell_t;
_Static_assert(sizeof(ml_tl_cell_t) == 48, "a time-line cell: 6 counters");
typedef struct ml_tltab {
    ml_tl_cell_t *row;   /* the cells of the bin of `last` (cell + bin * ML_TL_NCLASS) */
    int nbins, shift;
    uint64_t last;       /* this thread's last clock reading (the time of an untimed call) */
    uint64_t merges;
    ml_tl_cell_t *cell;  /* [nbins][ML_TL_NCLASS] */
} ml_tltab_t;
extern const unsigned char ml_tl_class[ML_NFUNC]; /* function -> class (generated: ml_funcs.c) */
void ml_tl_grow(ml_tltab_t *t, uint64_t rel);
void ml_tl_move(ml_tltab_t *t, uint64_t t0);

/* A call of class cls (a constant in the generated wrappers).  An untimed call
 * counts in the bin of the thread's last clock reading, whose cells (row) are
 * found again only when the clock is read (a timed call). */
ML_INLINE void ml_tl_add(ml_tltab_t *t, int cls, int tm, uint64_t t0, uint64_t dt, uint64_t bytes)
{
    if (__builtin_expect(tm, 0)) ml_tl_move(t, t0);
    ml_tl_cell_t *c = &t->row[cls];
    c->t.calls++;
    c->bytes += bytes;
    ml_time_add(&c->t, tm, dt);
}

/* Per-communicator records (comms.c): per thread, one per communicator kept
 * (MPILENS_COMMS), then one "other". */
typedef struct ml_cm_rec {
    ml_timing_t t;           /* calls and their time (ml.h) */
    uint64_t bytes_s, bytes_r;
    uint64_t colls;          /* collectives entered on it (flight.h: their order, for dumps) */
} ml_cm_rec_t;
_Static_assert(sizeof(ml_cm_rec_t) == 64, "a communicator record: one cache line's size");
int ml_cm_find(MPI_Comm comm);
void ml_comm_created(MPI_Comm newcomm, MPI_Comm parent, const char *kind);
void ml_comm_freeing(MPI_Comm comm);
void ml_comm_named(MPI_Comm comm);   /* after MPI_Comm_set_name: the record's copy of the name */

ML_INLINE int ml_cm_id(MPI_Comm comm)
{
    if (ml_thr.cm.comm == comm && ml_thr.cm.epoch == ml_hot.cm_epoch) return ml_thr.cm.id;
    return ml_cm_find(comm);
}

ML_INLINE void ml_cm_upd(ml_cm_rec_t *r, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    r->t.calls++;
    r->bytes_s += bs;
    r->bytes_r += br;
    ml_time_add(&r->t, tm, dt);
}

/* Per thread and region: one record per (region, function), open addressing. */
typedef struct {
    uint32_t key;        /* region << 16 | fid, plus 1; 0 empty */
    uint32_t pad;
    ml_cm_rec_t s;       /* calls, time, bytes (the communicators' record) */
} ml_rg_rec_t;

typedef struct ml_rgtab {
    int cap, n;
    ml_rg_rec_t *rec;    /* cap entries (a power of two) */
    uint64_t over_calls; /* calls whose (region, function) did not fit */
} ml_rgtab_t;





/* The modules whose out-of-line hook (ml_module_t.call) runs now, bit i for
 * ml_modules[i] (modules.c): behind one test in ml_call_done (callend.h).  Set from a module's
 * init (ML_HOOKS_CALL), or at run time by the module itself (ml_module_call_on:
 * regions, while one is open). */
void ml_module_call_on(int mod, int on); /* mod: ML_MOD_<name> (module.h) */
void ml_modules_rare_end(ml_slot_t *S, const ml_call_t *c);
/* Set on the thread writing a partial profile (dump.c) while it formats the rank
 * line: the dump only reads (no MPI call, no change to the open regions); the
 * profile at MPI_Finalize is the one that closes the open regions and asks MPI
 * for the communicators' names. */
extern ML_TLS int ml_in_dump;
int ml_pcontrol(int level, const char *label); /* MPI_Pcontrol (core.c); 1 if it was a region */
extern int ml_paused;               /* MPI_Pcontrol(0): recording off until MPI_Pcontrol(1) */
extern int ml_ever_paused;          /* MPI_Pcontrol(0) was called once */

void ml_cs_add_slow(ml_slot_t *S, int fid, void *ra, int tm, uint64_t dt, uint64_t bs, uint64_t br);
ml_cs_rec_t *ml_cs_insert(ml_cstab_t *t, const uintptr_t *pc, int n, int fid, uint32_t h);

ML_INLINE uint32_t ml_cs_hash1(uintptr_t pc, int fid)
{
    return (uint32_t)(((uint64_t)pc * 0x9E3779B97F4A7C15ull + (uint64_t)fid) >> 32);
}

ML_INLINE void ml_cs_upd(ml_cs_rec_t *r, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    r->t.calls++;
    ml_time_add(&r->t, tm, dt);
    if (bs | br) {
        r->bytes_s += bs;
        r->bytes_r += br;
        r->hist[ml_bin(bs ? bs : br)]++;
    }
}

/* The wrappers' per-call step after the MPI call: callend.h (ml_call_done, ml_call_end). */

#pragma GCC visibility pop
#endif
