/* The end of every wrapper's recording (hooks.h, ml_call_end): after the MPI
 * call and the semantic helpers (bytes, peers, requests), one call updates the
 * function's record and those of the record kinds (regions, time line,
 * communicators, call sites).  The wrapper holds the shared slot's lock if its
 * slot is shared. */
#include "hooks.h"
#include "late.h"

void ml_call_end(const ml_hook_t *h, ml_slot_t *S, int fid, int di, int cls, int tm, uint64_t t0, uint64_t dt)
{
    ml_la_out(); /* the end of a call sampled for late arrival (late.h) */
    if (!ml_fon[fid]) return;
    ml_count_upd(&S->f[fid], tm, dt);
    ml_hook_end_d(h, S, fid, di, cls, tm, t0, dt);
}
