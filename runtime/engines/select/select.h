/* Run-time selection among a collective's algorithms (runtime/engines/select,
 * docs/collectives.md "Adaptive"): not an engine of its own, a module the
 * engines that serve collectives use.  A collective is a client: its
 * candidates (index 0 is always the MPI's own call, the default) and one
 * ml_sel_client describing them; the client keeps one ml_sel_key per
 * (communicator, size class) and asks it which candidate runs each call.
 *
 *   select.c   a key's life: fixed at once (forced, one node), or a race of
 *              R rounds (every candidate once per round, the order rotated),
 *              one agreement of the R x C times (MPI_MAX over the
 *              communicator) and the decision rule (ml_sel_decide)
 *   record.c   finished keys as records per (communicator size, size class,
 *              choice, source, candidate compared): kept by the
 *              communicator's rank 0, merged over the job in a reduction
 *              tree, written as the client's "choices" list in the profile
 *
 * Adding a collective: its algorithms, an ml_sel_client naming them, and its
 * eligible calls routed through ml_sel_pick / ml_sel_took.  In the coll
 * engine that is one ml_coll_def (runtime/engines/coll/collint.h; coll.c's
 * serve() does the routing for MPI_Allreduce and MPI_Bcast alike).  Only
 * PMPI_* calls here. */
#ifndef MLENS_SELECT_H
#define MLENS_SELECT_H
#include <mpi.h>
#include <pthread.h>
#include <stddef.h>

#include "mlbuf.h"

#define ML_SEL_MAXCAND 8     /* candidates of one collective, the MPI's own included */
#define ML_SEL_CLASSES 64    /* size classes: 2^c <= bytes < 2^(c+1) */
#define ML_SEL_MIN_ROUNDS 3
#define ML_SEL_MAX_ROUNDS 64

typedef struct ml_sel_client {
    const char *name;            /* the collective, e.g. "allreduce" */
    int ncand;                   /* candidates, 0 = the MPI's own call */
    const char *const *names;    /* [ncand] */
} ml_sel_client;

/* Where a key's choice came from (the profile's "source"). */
enum { ML_SEL_LEARNED, ML_SEL_ONE_NODE, ML_SEL_ONE_PER_NODE, ML_SEL_FORCED, ML_SEL_LEARNING,
       ML_SEL_NSRC };
extern const char *const ml_sel_sources[ML_SEL_NSRC];

enum { ML_SEL_NEW, ML_SEL_RACE, ML_SEL_CHOSEN };

/* One (communicator, size class): identical on every rank of the
 * communicator (the same calls in the same order, and one agreement). */
typedef struct ml_sel_key {
    signed char phase, source, choice, against; /* candidates: the client's indices */
    unsigned char n, rounds;     /* the race: candidates, rounds */
    unsigned char cand[ML_SEL_MAXCAND];
    int step;                    /* race calls made */
    long long calls;             /* calls at this key */
    double *t;                   /* rounds x n: this rank's time of each race call */
    double ratio, lo, hi;        /* against / mpi: median paired ratio, its interval; 0 none */
    double lost_s;               /* race calls of candidates not chosen: seconds, slowest rank */
    int lost_calls;
} ml_sel_key;

/* The size class of a call moving bytes bytes (> 0): floor(log2(bytes)). */
static inline int ml_sel_class(unsigned long long bytes)
{
    return bytes ? 63 - __builtin_clzll(bytes) : 0;
}

/* The key's choice is fixed: candidate choice, from source (no race). */
void ml_sel_fix(ml_sel_key *k, int choice, int source);

/* A race among cand[0..n) (cand[0] the MPI's own, n >= 2) over rounds rounds.
 * MPI_SUCCESS, or MPI_ERR_NO_MEM (MPI_ERR_ARG: n or rounds out of range). */
int ml_sel_race(ml_sel_key *k, const int *cand, int n, int rounds);

/* The candidate this call runs: the choice, or in a race the next one
 * (round r runs the candidates in the order r, r+1, ..., modulo n). */
static inline int ml_sel_pick(const ml_sel_key *k)
{
    if (k->phase == ML_SEL_CHOSEN)
        return k->choice;
    int r = k->step / k->n, j = k->step % k->n;
    return k->cand[(j + r) % k->n];
}

/* A race call took dt seconds on this rank.  After the last one: one
 * PMPI_Allreduce(MPI_MAX) of the rounds x n times on comm (every rank of it is
 * at this same call), then the decision, the same on every rank.  An MPI
 * return code. */
int ml_sel_took(ml_sel_key *k, double dt, MPI_Comm comm);

/* The decision rule on agreed times t[rounds][n] (column 0: the MPI's own):
 * the candidate with the lowest median time; it replaces column 0 only if its
 * time is below column 0's in every round (its paired ratios' interval
 * [lowest, highest] lies below 1), else column 0.  Ties go to the lower
 * column.  d gets the chosen column, the column compared with column 0 (the
 * chosen one, or when column 0 is chosen the other with the lowest median;
 * -1 with n == 1) and the ratios' median, lowest and highest. */
typedef struct {
    int choice, against;
    double ratio, lo, hi;
} ml_sel_decision;
void ml_sel_decide(const double *t, int rounds, int n, ml_sel_decision *d);

/* ---- records (record.c) ---- */

#define ML_SEL_RECS 64
enum { SR_P, SR_CLASS, SR_CHOICE, SR_SRC, SR_AGAINST, SR_COMMS, SR_CALLS, SR_RACE_CALLS,
       SR_LOST_CALLS, SR_LOST_S, SR_RATIO_SUM, SR_RATIO_N, SR_LO, SR_HI, SR_NF };
typedef struct ml_sel_table {
    double rec[ML_SEL_RECS][SR_NF];
    double n, dropped;           /* rows used; records that found no room */
    pthread_mutex_t lock;
} ml_sel_table;

/* Adds the key (its communicator of comm_size ranks, size class cls) to the
 * table: merged into the row of the same communicator size, size class,
 * choice, source and compared candidate.  Called by one rank per
 * communicator (its rank 0), when the key ends (communicator freed, or
 * MPI_Finalize).  Thread-safe. */
void ml_sel_keep(ml_sel_table *tab, int comm_size, int cls, const ml_sel_key *k);

/* Collective over MPI_COMM_WORLD: every rank's table merged into rank 0's
 * (a reduction tree: each step merges two tables of at most ML_SEL_RECS
 * rows), rows in key order.  MPI_SUCCESS or an MPI error. */
int ml_sel_gather(ml_sel_table *tab);

/* The list of records as JSON (docs/profile-format.md, coll choices). */
void ml_sel_json(ml_buf_t *b, const ml_sel_client *c, const ml_sel_table *tab);

#endif
