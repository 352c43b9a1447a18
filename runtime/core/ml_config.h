/* mpilens runtime: the core's settings (config.c), read at MPI_Init */
#ifndef MLENS_ML_CONFIG_H
#define MLENS_ML_CONFIG_H

#include "engine.h" /* runtime/common: ml_buf_t */

#pragma GCC visibility push(hidden) /* direct accesses, no GOT (mltypes.h) */

/* ---- settings (config.c): the core's table, read with every record kind's, the flight recorder's and every engine's ---- */
enum { ML_TIMING_SAMPLED, ML_TIMING_ALL };
enum { ML_CLOCK_AUTO, ML_CLOCK_TSC, ML_CLOCK_MONOTONIC };
enum { ML_COMPRESS_AUTO, ML_COMPRESS_GZIP, ML_COMPRESS_OFF };
enum { ML_WRITE_AUTO, ML_WRITE_POSIX, ML_WRITE_MPIIO };
typedef struct {
    const char *output, *include, *exclude, *config; /* include/exclude NULL: unset */
    int detail, profile, timing, clock, max_threads, max_requests, quiet, compress, writer;
    int compress_group; /* MPILENS_COMPRESS_GROUP: consecutive ranks whose lines share one gzip member */
    int time_above_ns; /* MPILENS_TIME_ABOVE_NS: sampled timing times every call of a function slower than this */
} ml_core_cfg_t;
extern ml_core_cfg_t ml_cfg;
/* Reads every setting (core and engines) and, on the leader (rank 0), runs the
 * engines' checks; sets the function mask.  0 ok; -1 with one line in err. */
int ml_config_load(ml_buf_t *err, int leader);

#pragma GCC visibility pop
#endif
