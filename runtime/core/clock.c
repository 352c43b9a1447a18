/* Clock: invariant TSC calibrated against CLOCK_MONOTONIC, else clock_gettime. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ml_clock.h"
#include "ml_config.h" /* ml_cfg.clock */

static double ml_ns_per_tick = 1.0;

uint64_t ml_now_slow(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int ml_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a >= 0x80000007u) {
        __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
        if (d & (1u << 8)) return 1;
    }
    /* Hypervisors often hide the CPUID bit but the kernel still reports it. */
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[4096];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
            break;
        }
    }
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

void ml_clock_init(void)
{
    int tsc = ml_has_invariant_tsc();
    if (ml_cfg.clock == ML_CLOCK_MONOTONIC) tsc = 0;
    if (!tsc) {
        ml_hot.clock_tsc = 0;
        ml_ns_per_tick = 1.0;
        return;
    }
    ml_hot.clock_tsc = 1;
    /* Calibrate over ~20 ms: take the median of 5 ratios. */
    double r[5];
    for (int i = 0; i < 5; i++) {
        uint64_t n0 = ml_now_slow(), c0 = ml_now();
        uint64_t n1;
        do { n1 = ml_now_slow(); } while (n1 - n0 < 4000000ull);
        uint64_t c1 = ml_now();
        r[i] = (double)(n1 - n0) / (double)(c1 - c0);
    }
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (r[j] < r[i]) { double t = r[i]; r[i] = r[j]; r[j] = t; }
    ml_ns_per_tick = r[2];
}

double ml_ticks_to_s(uint64_t ticks) { return (double)ticks * ml_ns_per_tick * 1e-9; }
uint64_t ml_ns_to_ticks(uint64_t ns) { return (uint64_t)((double)ns / ml_ns_per_tick); }
double ml_clock_ghz(void) { return 1.0 / ml_ns_per_tick; }
const char *ml_clock_source(void) { return ml_hot.clock_tsc ? "tsc" : "clock_gettime"; }
