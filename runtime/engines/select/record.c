/* Finished keys as records for the profile (select.h): one row per
 * (communicator size, size class, choice, source, candidate compared),
 * counts and seconds added, the ratios' median averaged and their interval
 * widened over the communicators of a row.  Each communicator counts once
 * (its rank 0 keeps its keys); the job's rows meet on rank 0 of
 * MPI_COMM_WORLD in a reduction tree whose steps merge two tables of at most
 * ML_SEL_RECS rows: nothing grows with the number of ranks. */
#include <string.h>

#include "select.h"

static const int key_f[] = {SR_P, SR_CLASS, SR_CHOICE, SR_SRC, SR_AGAINST};
static const int sum_f[] = {SR_COMMS, SR_CALLS, SR_RACE_CALLS, SR_LOST_CALLS, SR_LOST_S,
                            SR_RATIO_SUM, SR_RATIO_N};
#define NKEY (int)(sizeof key_f / sizeof *key_f)
#define NSUM (int)(sizeof sum_f / sizeof *sum_f)

static int cmp_key(const double *a, const double *b)
{
    for (int i = 0; i < NKEY; i++)
        if (a[key_f[i]] != b[key_f[i]])
            return a[key_f[i]] < b[key_f[i]] ? -1 : 1;
    return 0;
}

/* Merges row r into the table rec of *n rows kept in key order; 0, or -1
 * when it has no room. */
static int merge_row(double (*rec)[SR_NF], double *n, const double *r)
{
    int m = (int)*n, i = 0;
    while (i < m && cmp_key(rec[i], r) < 0)
        i++;
    if (i < m && cmp_key(rec[i], r) == 0) {
        double *t = rec[i];
        for (int s = 0; s < NSUM; s++)
            t[sum_f[s]] += r[sum_f[s]];
        if (r[SR_RATIO_N] > 0) {
            t[SR_LO] = t[SR_RATIO_N] == r[SR_RATIO_N] || r[SR_LO] < t[SR_LO] ? r[SR_LO] : t[SR_LO];
            t[SR_HI] = r[SR_HI] > t[SR_HI] ? r[SR_HI] : t[SR_HI];
        }
        return 0;
    }
    if (m >= ML_SEL_RECS)
        return -1;
    memmove(rec[i + 1], rec[i], sizeof(double) * SR_NF * (size_t)(m - i));
    memcpy(rec[i], r, sizeof(double) * SR_NF);
    *n = m + 1;
    return 0;
}

void ml_sel_keep(ml_sel_table *tab, int comm_size, int cls, const ml_sel_key *k)
{
    if (k->phase == ML_SEL_NEW || k->calls == 0)
        return;
    double r[SR_NF] = {0};
    int racing = k->phase == ML_SEL_RACE;
    r[SR_P] = comm_size;
    r[SR_CLASS] = cls;
    r[SR_CHOICE] = racing ? -1 : k->choice;
    r[SR_SRC] = k->source;
    r[SR_AGAINST] = k->against;
    r[SR_COMMS] = 1;
    r[SR_CALLS] = (double)k->calls;
    r[SR_RACE_CALLS] = racing || k->source == ML_SEL_LEARNED ? k->step : 0;
    if (!racing) {
        r[SR_LOST_CALLS] = k->lost_calls;
        r[SR_LOST_S] = k->lost_s;
    }
    if (k->against >= 0) {
        r[SR_RATIO_SUM] = k->ratio;
        r[SR_RATIO_N] = 1;
        r[SR_LO] = k->lo;
        r[SR_HI] = k->hi;
    }
    pthread_mutex_lock(&tab->lock);
    if (merge_row(tab->rec, &tab->n, r))
        tab->dropped++;
    pthread_mutex_unlock(&tab->lock);
}

/* The reduction's operation: the table in (one element of the table type)
 * merged into inout. */
static void merge_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int e = 0; e < *len; e++) {
        double *a = (double *)in + (size_t)e * (ML_SEL_RECS * SR_NF + 2);
        double *b = (double *)inout + (size_t)e * (ML_SEL_RECS * SR_NF + 2);
        double(*brec)[SR_NF] = (double(*)[SR_NF])b;
        double *bn = b + ML_SEL_RECS * SR_NF, *bdrop = bn + 1;
        double an = a[ML_SEL_RECS * SR_NF], adrop = a[ML_SEL_RECS * SR_NF + 1];
        *bdrop += adrop;
        for (int i = 0; i < (int)an; i++)
            if (merge_row(brec, bn, a + (size_t)i * SR_NF))
                (*bdrop)++;
    }
}

int ml_sel_gather(ml_sel_table *tab)
{
    enum { N = ML_SEL_RECS * SR_NF + 2 };
    static double buf[N], out[N];
    int rank, rc;
    MPI_Datatype t;
    MPI_Op op;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memcpy(buf, tab->rec, sizeof tab->rec);
    buf[N - 2] = tab->n;
    buf[N - 1] = tab->dropped;
    if ((rc = PMPI_Type_contiguous(N, MPI_DOUBLE, &t)) != MPI_SUCCESS)
        return rc;
    PMPI_Type_commit(&t);
    if ((rc = PMPI_Op_create(merge_op, 1, &op)) == MPI_SUCCESS) {
        rc = PMPI_Reduce(buf, out, 1, t, op, 0, MPI_COMM_WORLD);
        PMPI_Op_free(&op);
    }
    PMPI_Type_free(&t);
    if (rc == MPI_SUCCESS && rank == 0) {
        memcpy(tab->rec, out, sizeof tab->rec);
        tab->n = out[N - 2];
        tab->dropped = out[N - 1];
    }
    return rc;
}

static void num(ml_buf_t *b, const char *key, double v)
{
    ml_buf_printf(b, ",\"%s\":%.6g", key, v);
}

void ml_sel_json(ml_buf_t *b, const ml_sel_client *c, const ml_sel_table *tab)
{
    ml_buf_printf(b, "[");
    for (int i = 0; i < (int)tab->n; i++) {
        const double *r = tab->rec[i];
        int choice = (int)r[SR_CHOICE], against = (int)r[SR_AGAINST];
        ml_buf_printf(b, "%s{\"comm_size\":%.0f,\"bytes\":%llu,\"choice\":", i ? "," : "",
                      r[SR_P], 1ULL << (int)r[SR_CLASS]);
        if (choice >= 0)
            ml_buf_printf(b, "\"%s\"", c->names[choice]);
        else
            ml_buf_printf(b, "null");
        ml_buf_printf(b, ",\"source\":\"%s\",\"communicators\":%.0f,\"calls\":%.0f,"
                      "\"learning_calls\":%.0f,\"lost_calls\":%.0f,\"lost_s\":%.9g",
                      ml_sel_sources[(int)r[SR_SRC]], r[SR_COMMS], r[SR_CALLS], r[SR_RACE_CALLS],
                      r[SR_LOST_CALLS], r[SR_LOST_S]);
        if (against >= 0 && r[SR_RATIO_N] > 0) {
            ml_buf_printf(b, ",\"against\":\"%s\"", c->names[against]);
            num(b, "ratio", r[SR_RATIO_SUM] / r[SR_RATIO_N]);
            num(b, "ratio_lo", r[SR_LO]);
            num(b, "ratio_hi", r[SR_HI]);
        }
        ml_buf_printf(b, "}");
    }
    ml_buf_printf(b, "]");
}
