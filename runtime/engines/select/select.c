/* A key's life and the decision rule (select.h; docs/collectives.md,
 * "Adaptive").
 *
 * The race: R rounds, every candidate once per round, the order rotated by
 * one each round so that no candidate always runs right after the same
 * other (a call inherits its predecessor's skew between ranks) or always
 * first.  Each rank times its own calls.  After the last call of the last
 * round, one PMPI_Allreduce(MPI_MAX) of the R x C times on the user's
 * communicator, inside the user's call: every rank of the communicator is at
 * the same call (the same key sequence: a collective's size is the same on
 * every rank), so the collective order stays the user's.  The maximum is
 * exact, every rank holds the same matrix and takes the same decision.
 *
 * The rule (ml_sel_decide): the candidate with the lowest median time over
 * the rounds runs if it is the MPI's own; another replaces the MPI's own
 * only if it is faster in every round.  Its paired ratios (time / the MPI's
 * own time, the same round) then all lie below 1: the interval [lowest,
 * highest ratio], which holds the ratios' median with probability
 * 1 - 2^(1-R), excludes 1.  It is a one-sided sign test: a candidate that is
 * not faster (each round's ratio below 1 with probability 1/2 or less,
 * rounds independent) passes with probability 2^-R or less (3.1 % at R = 5;
 * with C - 1 other candidates, (C - 1) 2^-R at most). */
#include "select.h"

#include <stdlib.h>
#include <string.h>

const char *const ml_sel_sources[ML_SEL_NSRC] = {"learned", "one node", "one rank per node",
                                                 "forced", "learning"};

void ml_sel_fix(ml_sel_key *k, int choice, int source)
{
    k->phase = ML_SEL_CHOSEN;
    k->choice = (signed char)choice;
    k->source = (signed char)source;
    k->against = -1;
}

int ml_sel_race(ml_sel_key *k, const int *cand, int n, int rounds)
{
    if (n < 2 || n > ML_SEL_MAXCAND || rounds < 1 || rounds > ML_SEL_MAX_ROUNDS)
        return MPI_ERR_ARG;
    if (!(k->t = calloc((size_t)rounds * (size_t)n, sizeof *k->t)))
        return MPI_ERR_NO_MEM;
    k->phase = ML_SEL_RACE;
    k->source = ML_SEL_LEARNING;
    k->choice = k->against = -1;
    k->n = (unsigned char)n;
    k->rounds = (unsigned char)rounds;
    for (int i = 0; i < n; i++)
        k->cand[i] = (unsigned char)cand[i];
    k->step = 0;
    return MPI_SUCCESS;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) /* sorts v */
{
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void ml_sel_decide(const double *t, int rounds, int n, ml_sel_decision *d)
{
    double med[ML_SEL_MAXCAND], v[ML_SEL_MAX_ROUNDS];
    for (int j = 0; j < n; j++) {
        for (int r = 0; r < rounds; r++)
            v[r] = t[r * n + j];
        med[j] = median(v, rounds);
    }
    int best = 0, alt = -1;
    for (int j = 1; j < n; j++) {
        if (med[j] < med[best])
            best = j;
        if (alt < 0 || med[j] < med[alt])
            alt = j;
    }
    if (best != 0)
        alt = best;
    d->choice = 0;
    d->against = alt;
    d->ratio = d->lo = d->hi = 0;
    if (alt < 0)
        return;
    for (int r = 0; r < rounds; r++) {
        double a = t[r * n + alt], m = t[r * n];
        v[r] = m > 0 ? a / m : a > 0 ? 1e300 : 1; /* a clock too coarse to tell: a tie */
    }
    d->ratio = median(v, rounds);
    d->lo = v[0];
    d->hi = v[rounds - 1];
    if (best != 0 && d->hi < 1)
        d->choice = best;
}

int ml_sel_took(ml_sel_key *k, double dt, MPI_Comm comm)
{
    int n = k->n, r = k->step / n, j = (k->step % n + r) % n;
    k->t[r * n + j] = dt;
    if (++k->step < n * k->rounds)
        return MPI_SUCCESS;
    int rc = PMPI_Allreduce(MPI_IN_PLACE, k->t, n * k->rounds, MPI_DOUBLE, MPI_MAX, comm);
    ml_sel_decision d = {0, -1, 0, 0, 0};
    if (rc == MPI_SUCCESS)
        ml_sel_decide(k->t, k->rounds, n, &d); /* else the MPI's own, on every rank alike */
    k->lost_s = 0;
    for (int i = 0; rc == MPI_SUCCESS && i < n * k->rounds; i++)
        if (i % n != d.choice)
            k->lost_s += k->t[i];
    k->lost_calls = (n - 1) * k->rounds;
    k->ratio = d.ratio;
    k->lo = d.lo;
    k->hi = d.hi;
    ml_sel_fix(k, k->cand[d.choice], ML_SEL_LEARNED);
    k->against = d.against >= 0 ? (signed char)k->cand[d.against] : -1;
    free(k->t);
    k->t = NULL;
    return rc;
}
