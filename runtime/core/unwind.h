/* The stack walk of call sites deeper than one frame (unwind.c).
 *
 * ml_uw_init    once, after MPI_Init: the executable segments of every
 *               loaded module (sorted), each with its module's
 *               .eh_frame_hdr, and which belong to an MPI library or mpilens.
 * ml_uw_walk    from the wrapper whose caller returns to ra, up to `want`
 *               application frames (frames inside the MPI libraries and
 *               mpilens are stepped through, not returned): by the
 *               compiler's unwind tables with a rule cache (ML_UW_CFI), or
 *               by saved frame pointers (ML_UW_FP).  -1: a check failed;
 *               the caller then uses backtrace().
 *
 * No lock and no allocation once a return address's rule is cached. */
#ifndef MLENS_UNWIND_H
#define MLENS_UNWIND_H

#include <stdint.h>

enum { ML_UW_BACKTRACE, ML_UW_FP, ML_UW_CFI };

void ml_uw_init(int (*is_internal)(const char *path));
int ml_uw_walk(uintptr_t *out, int want, void *ra, int how);
/* Rules cached, and walks left to backtrace() (every walk with
 * ML_UW_BACKTRACE) since start or since ml_uw_reset (the rank line's
 * callsite_backtraces). */
void ml_uw_stats(uint64_t *rules, uint64_t *fallbacks);
void ml_uw_reset(void);

#endif
