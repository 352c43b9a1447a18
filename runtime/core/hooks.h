/* Per-call hooks beside the function records: call sites (callsite.c),
 * regions (region.c), the time line (timeline.c) and communicators
 * (comms.c).  Every timed wrapper calls ml_hook_begin before the MPI call and
 * ml_call_end (callend.c) after its semantic helpers (ml.h shows the whole
 * wrapper):
 *
 * ml_hook_begin keeps the caller's return address and zeroes the call's byte
 * counters (ml_cb, per thread); ml_call_end counts the call in its function's
 * record, then (ml_hook_end_d) attributes the call, its time and the bytes the
 * semantic helpers gave it to its region, its time-line bin, its communicator
 * and its call site.  With call sites off and no region open each is one
 * predictable branch.  No lock (the wrapper holds the shared slot's), no
 * allocation: the tables are fixed at the thread's first call. */
#ifndef MLENS_HOOKS_H
#define MLENS_HOOKS_H

#include "ml.h"

#define ML_CS_MAXDEPTH 8

/* One call site: the return addresses into the application (innermost first). */
typedef struct {
    uintptr_t pc[ML_CS_MAXDEPTH];
    uint32_t fid;
    uint8_t n;          /* frames in pc */
    uint8_t internal;   /* depth 1: pc lies in an MPI library or mpilens: attribute by walking */
    uint16_t region;    /* unused (0): fid..region form the word the depth-1 probe compares */
    uint64_t calls, timed, ticks, bytes_s, bytes_r;
    uint64_t stimed, sticks; /* of the timed: the sampled ones (ml_est_ticks) */
    uint64_t hist[ML_NBINS]; /* per call: size class of its bytes (sent, else received) */
} ml_cs_rec_t;
_Static_assert(offsetof(ml_cs_rec_t, fid) == 8 * ML_CS_MAXDEPTH && offsetof(ml_cs_rec_t, region) == 8 * ML_CS_MAXDEPTH + 6,
               "the depth-1 probe compares fid, n, internal and region as one word");

typedef struct ml_cstab {
    int cap, n;          /* records held at most (MPILENS_CALLSITE_SLOTS), records in use */
    uint32_t mask;       /* index table size - 1 (a power of two >= 2 cap) */
    int32_t *idx;        /* open addressing on the key: record index, -1 empty */
    ml_cs_rec_t *rec;
    uint64_t over_calls, over_timed, over_ticks, over_bytes_s, over_bytes_r; /* calls of sites beyond cap */
    uint64_t over_stimed, over_sticks;
} ml_cstab_t;


/* Time line (timeline.c): per thread, bins of 2^shift ticks from MPI_Init, per
 * function class; when a call falls past the last bin, pairs of bins merge. */
enum { ML_TL_P2P, ML_TL_COLL, ML_TL_RMA, ML_TL_IO, ML_TL_OTHER, ML_TL_NCLASS };
typedef struct {
    uint64_t calls, timed, ticks, bytes;
    uint64_t stimed, sticks; /* of the timed: the sampled ones (ml_est_ticks) */
} ml_tl_cell_t;
typedef struct ml_tltab {
    ml_tl_cell_t *row;   /* the cells of the bin of `last` (cell + bin * ML_TL_NCLASS) */
    int nbins, shift;
    uint64_t last;       /* this thread's last clock reading (the time of an untimed call) */
    uint64_t merges;
    ml_tl_cell_t *cell;  /* [nbins][ML_TL_NCLASS] */
} ml_tltab_t;
extern int ml_tl_bins;                      /* MPILENS_TIMELINE_BINS (0: off) */
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
    c->calls++;
    c->bytes += bytes;
    ml_time_add(&c->timed, &c->ticks, &c->stimed, &c->sticks, tm, dt);
}

/* Per-communicator records (comms.c): per thread, one per communicator kept
 * (MPILENS_COMMS), then one "other". */
typedef struct ml_cm_rec {
    uint64_t calls, timed, ticks, bytes_s, bytes_r;
    uint64_t stimed, sticks; /* of the timed: the sampled ones (ml_est_ticks) */
    uint64_t colls;          /* collectives entered on it (flight.h: their order, for dumps) */
} ml_cm_rec_t;
typedef struct { MPI_Comm comm; int id; unsigned epoch; } ml_cm_cache_t;
extern int ml_cm_max;                 /* MPILENS_COMMS (0: off) */
extern ML_TLS ml_cm_cache_t ml_cm_cache;
extern volatile unsigned ml_cm_epoch; /* changes when a communicator is made or freed */
int ml_cm_find(MPI_Comm comm);
void ml_comm_created(MPI_Comm newcomm, MPI_Comm parent, const char *kind);
void ml_comm_freeing(MPI_Comm comm);
void ml_comm_named(MPI_Comm comm);   /* after MPI_Comm_set_name: the record's copy of the name */
void ml_cm_init(void);
void ml_cm_attach(ml_slot_t *s);
size_t ml_cm_bytes(void);
void ml_cm_rank_json(ml_buf_t *b);

ML_INLINE int ml_cm_id(MPI_Comm comm)
{
    if (ml_cm_cache.comm == comm && ml_cm_cache.epoch == ml_cm_epoch) return ml_cm_cache.id;
    return ml_cm_find(comm);
}

ML_INLINE void ml_cm_upd(ml_cm_rec_t *r, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    r->calls++;
    r->bytes_s += bs;
    r->bytes_r += br;
    ml_time_add(&r->timed, &r->ticks, &r->stimed, &r->sticks, tm, dt);
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

extern int ml_cs_depth;          /* MPILENS_CALLSITES: 0 off, 1..ML_CS_MAXDEPTH */
extern volatile int ml_region_cur; /* innermost open region (0: none), process-wide */
extern int ml_hooks_on;          /* ml_cs_depth || a region has been opened */

typedef struct {
    void *ra;
    int on;             /* ml_hooks_on at the start of the call */
    MPI_Comm comm;      /* the call's communicator (ml_hook_comm), else MPI_COMM_NULL */
} ml_hook_t;

/* After a successful call with a communicator argument (generated wrappers). */
ML_INLINE void ml_hook_comm(ml_hook_t *h, MPI_Comm comm) { h->comm = comm; }

extern int ml_cs_slots, ml_rg_max;  /* MPILENS_CALLSITE_SLOTS, MPILENS_REGIONS */
extern int ml_cs_unwind;            /* MPILENS_CALLSITE_UNWIND: 0 backtrace, 1 frame pointers */

void ml_hooks_init(void);           /* after MPI_Init (core.c) */
void ml_hooks_attach(ml_slot_t *s); /* a new thread's tables (core.c, under the slot lock) */
size_t ml_hooks_bytes(void);        /* their size per thread (mpilens_record_bytes) */
void ml_cs_init(void);
void ml_hooks_reset(ml_slot_t *s);  /* empties the call-site table (after the overhead probe) */
void ml_cs_attach(ml_slot_t *s);
size_t ml_cs_bytes(void);
void ml_rg_attach(ml_slot_t *s);
size_t ml_rg_bytes(void);
void ml_cs_rank_json(ml_buf_t *b);  /* rank line members (profile_format.c) */
void ml_rg_rank_json(ml_buf_t *b);
void ml_tl_init(void);
void ml_tl_attach(ml_slot_t *s);
size_t ml_tl_bytes(void);
void ml_tl_reset(ml_slot_t *s);
void ml_tl_rank_json(ml_buf_t *b);
void ml_hooks_header_json(ml_buf_t *b); /* header members */
void ml_hooks_rank_json(ml_buf_t *b);   /* rank-line members: call sites, regions, time line */
/* Set on the thread writing a partial profile (dump.c) while it formats the rank
 * line: the dump only reads (no MPI call, no change to the open regions); the
 * profile at MPI_Finalize is the one that closes the open regions and asks MPI
 * for the communicators' names. */
extern ML_TLS int ml_in_dump;
int ml_pcontrol(int level, const char *label); /* MPI_Pcontrol (core.c); 1 if it was a region */
extern int ml_paused;               /* MPI_Pcontrol(0): recording off until MPI_Pcontrol(1) */
extern int ml_ever_paused;          /* MPI_Pcontrol(0) was called once */

void ml_cs_add_slow(ml_slot_t *S, int fid, void *ra, int tm, uint64_t dt, uint64_t bs, uint64_t br);
void ml_region_add(ml_slot_t *S, int fid, int tm, uint64_t dt, uint64_t bs, uint64_t br);
ml_cs_rec_t *ml_cs_insert(ml_cstab_t *t, const uintptr_t *pc, int n, int fid, uint32_t h);

ML_INLINE void ml_hook_begin(ml_hook_t *h, ml_slot_t *S, int fid, void *ra)
{
    h->ra = ra;
    h->comm = MPI_COMM_NULL;
    h->on = ml_hooks_on;
    (void)S;
    (void)fid;
    if (__builtin_expect(!h->on, 0)) return;
    ml_cb.s = ml_cb.r = 0;
}

ML_INLINE uint32_t ml_cs_hash1(uintptr_t pc, int fid)
{
    return (uint32_t)(((uint64_t)pc * 0x9E3779B97F4A7C15ull + (uint64_t)fid) >> 32);
}

ML_INLINE void ml_cs_upd(ml_cs_rec_t *r, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    r->calls++;
    ml_time_add(&r->timed, &r->ticks, &r->stimed, &r->sticks, tm, dt);
    if (bs | br) {
        r->bytes_s += bs;
        r->bytes_r += br;
        r->hist[ml_bin(bs ? bs : br)]++;
    }
}

/* After the call, with the shared slot's lock held if S is shared (the
 * wrapper takes it once around all its updates).  di, cls: the function's
 * data record (-1: none) and time-line class, constants in the wrappers. */
static inline void ml_hook_end_d(const ml_hook_t *h, ml_slot_t *S, int fid, int di, int cls, int tm,
                                 uint64_t t0, uint64_t dt)
{
    if (__builtin_expect(!h->on, 0) || !ml_fon[fid]) return;
    /* a completion call (no byte counters of its own) gives none: what its receives
     * got belongs to the functions that started them (docs/runtime.md) */
    uint64_t bs = di >= 0 ? ml_cb.s : 0, br = di >= 0 ? ml_cb.r : 0;
    if (__builtin_expect(ml_region_cur != 0, 0)) ml_region_add(S, fid, tm, dt, bs, br);
    if (S->tl) ml_tl_add(S->tl, cls, tm, t0, dt, bs + br);
    if (S->cm && h->comm != MPI_COMM_NULL) ml_cm_upd(&S->cm[ml_cm_id(h->comm)], tm, dt, bs, br);
    ml_cstab_t *t = S->cs;
    if (ml_cs_depth == 1 && t) { /* the immediate caller: one probe, usually */
        uintptr_t pc = (uintptr_t)h->ra;
        uint64_t want = (uint64_t)(uint32_t)fid | (uint64_t)1 << 32; /* fid, n = 1, internal = 0, region = 0 */
        for (uint32_t i = ml_cs_hash1(pc, fid);; i++) {
            int32_t k = t->idx[i & t->mask];
            if (k < 0) break;
            ml_cs_rec_t *r = &t->rec[k];
            uint64_t key;
            __builtin_memcpy(&key, &r->fid, sizeof key);
            if (r->pc[0] == pc && key == want) {
                ml_cs_upd(r, tm, dt, bs, br);
                return;
            }
        }
    }
    if (ml_cs_depth) ml_cs_add_slow(S, fid, h->ra, tm, dt, bs, br);
}

static inline void ml_hook_end(const ml_hook_t *h, ml_slot_t *S, int fid, int tm, uint64_t t0, uint64_t dt)
{
    ml_hook_end_d(h, S, fid, ml_func_didx[fid], ml_tl_class[fid], tm, t0, dt);
}

/* The wrappers' per-call step after the MPI call: callend.h (ml_call_done, ml_call_end). */

#endif
