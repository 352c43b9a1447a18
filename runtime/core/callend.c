/* The out-of-line end of a wrapper's recording (callend.h): a timed call, a
 * call while a region is open, and call sites the one-entry cache does not
 * hold.  The wrapper holds the shared slot's lock if its slot is shared. */
#include "callend.h"

/* Depth 1: the record of (ra, fid) by one hash probe, kept in the function's
 * one-entry cache; NULL if it is not in the table yet (or its return address
 * lies inside an MPI library: ml_cs_add_slow walks to the application). */
static ml_cs_rec_t *ml_cs_probe1(ml_slot_t *S, int fid, uintptr_t pc)
{
    ml_cstab_t *t = S->cs;
    uint64_t want = (uint64_t)(uint32_t)fid | (uint64_t)1 << 32; /* fid, n = 1, internal = 0, region = 0 */
    for (uint32_t i = ml_cs_hash1(pc, fid);; i++) {
        int32_t k = t->idx[i & t->mask];
        if (k < 0) return NULL;
        ml_cs_rec_t *r = &t->rec[k];
        uint64_t key;
        __builtin_memcpy(&key, &r->fid, sizeof key);
        if (r->pc[0] == pc && key == want) {
            S->cs1[fid].pc = pc;
            S->cs1[fid].rec = r;
            return r;
        }
    }
}

ML_INLINE void ml_cs_call(ml_slot_t *S, int fid, void *ra, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    if (!S->cs) return;
    if (ml_hot.cs_depth == 1) {
        uintptr_t pc = (uintptr_t)ra;
        ml_cs_rec_t *r = S->cs1[fid].pc == pc ? S->cs1[fid].rec : ml_cs_probe1(S, fid, pc);
        if (r) {
            ml_cs_upd(r, tm, dt, bs, br);
            return;
        }
        ml_cs_add_slow(S, fid, ra, tm, dt, bs, br);
        (void)ml_cs_probe1(S, fid, pc); /* the record it made, for the next call */
        return;
    }
    ml_cs_add_slow(S, fid, ra, tm, dt, bs, br);
}

void ml_cs_miss(ml_slot_t *S, int fid, void *ra, uint64_t bs, uint64_t br)
{
    ml_cs_call(S, fid, ra, ML_TM_NO, 0, bs, br);
}

/* A timed call at t0: the bin of t0 becomes the thread's current row (timeline.c's
 * ml_tl_move, inline here: bins merge first when t0 falls past the last one). */
ML_INLINE void ml_tl_at(ml_tltab_t *t, uint64_t t0)
{
    t->last = t0;
    uint64_t rel = t0 > ml_t_init ? t0 - ml_t_init : 0;
    if (__builtin_expect((rel >> t->shift) >= (uint64_t)t->nbins, 0)) ml_tl_grow(t, rel);
    t->row = &t->cell[(rel >> t->shift) * ML_TL_NCLASS];
}

void ml_call_end(ml_slot_t *S, uint32_t fk, uint64_t t0, uint64_t dt, MPI_Comm comm, void *ra)
{
    int fid = (int)(fk & 0xffff), cls = (int)((fk >> 16) & 0xff), tm = (int)(fk >> 24);
    if (tm == ML_TM_OFF || !ml_fon[fid]) return;
    int di = ml_func_didx[fid];
    ml_count_upd(&S->f[fid], tm, dt);
    if (!ml_hot.hooks_on) return;
    uint64_t bs = di >= 0 ? ml_thr.cb.s : 0, br = di >= 0 ? ml_thr.cb.r : 0;
    if (ml_hot.kinds_rare != 0) { /* a kind's out-of-line hook (regions, while one is open) */
        const ml_call_t c = {fid, cls, tm, t0, dt, bs, br, comm, ra};
        ml_modules_rare_end(S, &c);
    }
    ml_tltab_t *t = S->tl;
    if (t) {
        if (tm) ml_tl_at(t, t0);
        ml_tl_cell_t *c = &t->row[cls];
        c->t.calls++;
        c->bytes += bs + br;
        ml_time_add(&c->t, tm, dt);
    }
    if (S->cm && comm != MPI_COMM_NULL) ml_cm_upd(ml_cm_rec(S->cm, comm), tm, dt, bs, br);
    if (ml_hot.cs_depth) ml_cs_call(S, fid, ra, tm, dt, bs, br);
}
