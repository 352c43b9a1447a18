/* mpilens runtime: the clock (clock.c) and a record's time in seconds */
#ifndef MLENS_ML_CLOCK_H
#define MLENS_ML_CLOCK_H

#include "ml_state.h"

#pragma GCC visibility push(hidden) /* direct accesses, no GOT (mltypes.h) */

/* ---- clock (clock.c) ---- */
uint64_t ml_now_slow(void);
static inline uint64_t ml_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(ml_hot.clock_tsc, 1)) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return ml_now_slow();
}
void ml_clock_init(void);
double ml_ticks_to_s(uint64_t ticks);
uint64_t ml_ns_to_ticks(uint64_t ns);
double ml_clock_ghz(void);
const char *ml_clock_source(void);


/* ... in seconds (the profile's time_s). */
static inline double ml_est_s(const ml_timing_t *t) { return ml_ticks_to_s(1) * ml_est_ticks(t); }

#pragma GCC visibility pop
#endif
