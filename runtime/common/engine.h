/* The engine interface: what an engine (adaptive Alltoall, reproducible
 * reductions, the next ones) gives the profiler core, as Darshan's modules
 * give darshan_core_register_module a struct of functions.
 *
 * An engine lives in runtime/engines/<name>/: its sources, one
 * `const ml_engine_t ml_engine_<name>` and an overrides.h declaring the MPI
 * functions it replaces.  Registering it is one line ML_ENGINE(<name>) in
 * runtime/engines/list.h; the core then reads its settings, checks, starts
 * and stops it and writes its profile section, in the order of that list.
 *
 * Overrides: runtime/gen/genwrap.py scans every engines/<name>/overrides.h;
 * for each declaration `int mlo_MPI_Xxx(<the parameters of MPI_Xxx in
 * mpi.h, exactly>);` the generated MPI_Xxx wrapper (C and Fortran) calls
 * mlo_MPI_Xxx instead of PMPI_Xxx, inside the timed region.  The override
 * decides per call whether to run its engine's algorithm (and then calls
 * ml_mark_served()) or to call PMPI_Xxx itself.  Two engines cannot
 * override the same function: where several engines serve one MPI function,
 * one override names their order and each engine gives it a function that
 * serves the call or declines it (MPI_Allreduce: runtime/engines/coll/
 * dispatch.c, repro first, then coll, then PMPI_Allreduce; the same for
 * MPI_Reduce_scatter_block).  Engines use
 * PMPI_* calls only (MPI_* would be profiled again). */
#ifndef MLENS_ENGINE_H
#define MLENS_ENGINE_H
#include "mlbuf.h"
#include "settings.h"

typedef struct ml_engine {
    const char *name;          /* also its profile section's key in the header */
    int version;               /* version of that section (header "sections") */
    const ml_setting *settings;/* its settings table (ends with {NULL}), read with the core's */
    /* Rank 0 at MPI_Init, after the settings are read: checks what needs more
     * than one value (files it reads: tuning file, network model), without
     * communicating.  Also run by `mpilens config`.  0 ok, else -1 with one
     * line in err (ml_settings_fail). */
    int (*check)(ml_buf_t *err);
    /* Every rank, collective over MPI_COMM_WORLD, once the settings are agreed
     * (rank 0's check passed).  0 ok; else the job stops (exit status 2). */
    int (*init)(void);
    /* Every rank, collective, at MPI_Finalize before the profile is written. */
    void (*finalize)(void);
    /* Rank 0, after finalize: writes the JSON value of its profile section;
     * returns 0 if it has none (nothing written). */
    int (*section)(ml_buf_t *b);
} ml_engine_t;

/* An override served the call with its engine's own algorithm: the wrapper
 * counts it (the record's "repro_calls").  Defined by the core (core.c). */
void ml_mark_served(void);

/* This rank's node in the layout agreed at MPI_Init (ranks with the same
 * host name; nodes numbered in order of their first world rank), -1 before
 * it or without the profiler.  Defined by the core (nodes.c). */
int ml_my_node(void);

/* Collective over MPI_COMM_WORLD: if any rank has a message, the lowest such
 * rank prints it (one line), every rank finalizes MPI and exits with status 2. */
void ml_agree_or_stop(const char *msg);

/* An engine on its own, without the profiler (benchmarks and tests that link
 * an engine's sources): reads its settings from the environment, checks them
 * on rank 0, stops the job with the one line if they are bad, starts it.
 * Collective over MPI_COMM_WORLD; 0 ok, else init's failure. */
int ml_engine_start(const ml_engine_t *e);

#endif
