/* Finished decisions: one fixed-size record per (communicator size, ranks per
 * node, block size, algorithm, source), kept by the communicators whose local
 * rank is 0, gathered on rank 0 of MPI_COMM_WORLD at MPI_Finalize for the
 * profile section "alltoall" (docs/alltoall.md, fields in schema/profile.json)
 * and the tuning file. */
#include <stdlib.h>
#include <string.h>

#include "alltoall.h"

const char *const ml_a2a_sources[] = {"learned", "tuning-file", "forced", "single-candidate",
                                      "reused", "learning", "provisional"};

/* Adds record r to table tab of *n rows (at most max): merged into the row
 * with the same key (communicator size, ranks per node, block size, algorithm,
 * source) by adding its counts and times, else appended.  0, or -1 if full. */
static int merge_rec(double (*tab)[R_NFIELD], int *n, int max, const double *r)
{
    static const int sum[] = {R_CALLS, R_LCALLS, R_LS, R_GS, R_RELEARN, R_COMMS, R_CARRIED};
    for (int i = 0; i < *n; i++) {
        double *t = tab[i];
        if (t[R_P] == r[R_P] && t[R_RPN] == r[R_RPN] && t[R_BYTES] == r[R_BYTES] &&
            t[R_ALG] == r[R_ALG] && t[R_SRC] == r[R_SRC]) {
            for (size_t k = 0; k < sizeof sum / sizeof *sum; k++)
                t[sum[k]] += r[sum[k]];
            return 0;
        }
    }
    if (*n >= max)
        return -1;
    memmove(tab[(*n)++], r, sizeof(double) * R_NFIELD);
    return 0;
}

void ml_a2a_record(const comm_state *cs, const size_state *e)
{
    if (cs->rank != 0 || e->used == 0 || e->calls == 0)
        return;
    double r[R_NFIELD];
    r[R_P] = cs->P;
    r[R_RPN] = cs->rpn;
    r[R_BYTES] = (double)e->bytes;
    int learning = e->phase != PH_RUN;
    r[R_ALG] = learning ? -1 : e->alg; /* -1: finished while learning */
    r[R_SRC] = learning ? SRC_LEARNING : e->source;
    r[R_CALLS] = (double)e->calls;
    r[R_LCALLS] = (double)e->learn_calls;
    /* agreed times, plus what was not agreed yet: nothing at MPI_Finalize (the
     * samples so far were agreed there), rank 0's own times for a
     * communicator freed while learning or with a provisional choice */
    r[R_LS] = e->learn_s + e->learn_local;
    r[R_GS] = e->group_s + e->group_local;
    r[R_CARRIED] = (double)e->carried;
    r[R_RELEARN] = e->relearns;
    r[R_MASK] = e->first_mask;
    r[R_REF] = e->ref;
    r[R_COMMS] = 1;
    for (int a = 0; a < ML_A2A_NALG; a++)
        r[R_MEAN0 + a] = e->mean[a];
    pthread_mutex_lock(&ml_a2a.lock);
    if (merge_rec(ml_a2a.recs, &ml_a2a.nrecs, ML_RECS, r))
        ml_a2a.recs_dropped++;
    pthread_mutex_unlock(&ml_a2a.lock);
}

/* Collective over MPI_COMM_WORLD: every rank's records to rank 0, merged
 * there into one record per key over the whole job. */
void ml_a2a_gather_records(void)
{
    int rank, P;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &P);
    int *counts = NULL, *displs = NULL, total = 0;
    int mine = ml_a2a.nrecs * R_NFIELD;
    if (rank == 0) {
        counts = calloc((size_t)P, sizeof *counts);
        displs = calloc((size_t)P, sizeof *displs);
    }
    PMPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < P; i++) {
            displs[i] = total;
            total += counts[i];
        }
        ml_a2a.all_recs = malloc(sizeof(double) * (size_t)(total ? total : 1));
    }
    PMPI_Gatherv(ml_a2a.recs, mine, MPI_DOUBLE, ml_a2a.all_recs, counts, displs, MPI_DOUBLE, 0,
                 MPI_COMM_WORLD);
    if (rank == 0) {
        double(*tab)[R_NFIELD] = (double(*)[R_NFIELD])ml_a2a.all_recs;
        for (int i = 0, n = total / R_NFIELD; i < n; i++)
            merge_rec(tab, &ml_a2a.n_all_recs, i + 1, tab[i]); /* into the merged prefix: never full */
        free(counts);
        free(displs);
    }
}

/* The profile section: a list of decisions (rank 0 after MPI_Finalize). */
int ml_a2a_section(ml_buf_t *b)
{
    if (ml_a2a.cfg.mode == ML_A2A_MODE_NATIVE)
        return 0;
    ml_buf_printf(b, "[");
    const double *src = ml_a2a.all_recs ? ml_a2a.all_recs : &ml_a2a.recs[0][0];
    int cnt = ml_a2a.all_recs ? ml_a2a.n_all_recs : ml_a2a.nrecs;
    for (int i = 0; i < cnt; i++) {
        const double *r = src + (size_t)i * R_NFIELD;
        ml_buf_printf(b, "%s{\"comm_size\":%d,\"ranks_per_node\":%d,\"bytes\":%.0f,\"algorithm\":",
                      i ? "," : "", (int)r[R_P], (int)r[R_RPN], r[R_BYTES]);
        if (r[R_ALG] < 0)
            ml_buf_printf(b, "null");
        else
            ml_buf_printf(b, "\"%s\"", ml_a2a_names[(int)r[R_ALG]]);
        ml_buf_printf(b, ",\"source\":\"%s\",\"communicators\":%.0f,\"calls\":%.0f,\"learning_calls\":%.0f,"
                      "\"learning_s\":%.9g,\"grouping_s\":%.9g,\"relearns\":%.0f,\"time_per_call_s\":%.9g,"
                      "\"carried_calls\":%.0f,\"candidates\":[",
                      ml_a2a_sources[(int)r[R_SRC]], r[R_COMMS], r[R_CALLS], r[R_LCALLS], r[R_LS], r[R_GS],
                      r[R_RELEARN], r[R_REF] >= 0 && r[R_ALG] >= 0 ? r[R_REF] : 0.0, r[R_CARRIED]);
        int first = 1;
        for (int a = 0; a < ML_A2A_NALG; a++)
            if ((int)r[R_MASK] & (1 << a)) {
                ml_buf_printf(b, "%s\"%s\"", first ? "" : ",", ml_a2a_names[a]);
                first = 0;
            }
        ml_buf_printf(b, "],\"learned_mean_s\":{");
        first = 1;
        for (int a = 0; a < ML_A2A_NALG; a++)
            if (r[R_MEAN0 + a] >= 0) {
                ml_buf_printf(b, "%s\"%s\":%.9g", first ? "" : ",", ml_a2a_names[a], r[R_MEAN0 + a]);
                first = 0;
            }
        ml_buf_printf(b, "}}");
    }
    ml_buf_printf(b, "]");
    return 1;
}
