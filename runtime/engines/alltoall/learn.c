/* The adaptive policy, per (communicator, block size m), in three phases
 * (Nanri et al. 2008, docs/references.md; what goes beyond it: docs/alltoall.md):
 *
 *   Grouping  first call with m: a choice this run already learned for the
 *             same communicator size and ranks per node (memo.c), else a
 *             matching tuning-file entry, runs at once.  Otherwise measure
 *             P-LogP parameters (plogp.c, or read them from the network model
 *             file), predict every algorithm, keep those predicted at or below
 *             the mean of the fastest and slowest prediction
 *             (MPILENS_ALLTOALL_MODEL=off keeps all: the paper's "nomodel").
 *             The MPI's own PMPI_Alltoall ("mpi") is an eighth candidate,
 *             never pruned (it has no model).
 *   Learning  N calls per candidate (MPILENS_ALLTOALL_LEARN, default 50),
 *             interleaved in blocks so that a drifting machine biases no
 *             candidate; time of a candidate = mean over all ranks (median
 *             over its slots of blocks); clear losers leave after one turn,
 *             at N/5 and at N/2 calls (MPILENS_ALLTOALL_RACE).
 *   Running   the winner.  Every MPILENS_ALLTOALL_CHECK calls (default 1000)
 *             the mean time of the window (over all ranks) is compared with
 *             the learned time; beyond MPILENS_ALLTOALL_DRIFT (default 0.5 =
 *             +-50 %) Learning restarts without the candidates that were
 *             >= 20 % slower than the best.
 *
 * Every decision is taken from values reduced over the communicator with
 * integer (exact) sums (ml_sum_exact), so all ranks always run the same
 * algorithm at the same call, whatever order the MPI's Allreduce adds in.
 * The policy itself is ml_a2a_adaptive at the end of this file. */
#include <stdlib.h>
#include <string.h>

#include "alltoall.h"

#define CFG ml_a2a.cfg

__thread int ml_a2a_learning;

static int start_learning(comm_state *cs, size_state *e)
{
    if (!e->ts && !(e->ts = malloc(sizeof(double[ML_A2A_NALG][NSLOT]))))
        return ml_a2a_out_of_memory(cs->dup);
    e->phase = PH_LEARN;
    e->li = 0;
    e->rp = 0;
    e->learn_local = 0;
    memset(e->ts, 0, sizeof(double[ML_A2A_NALG][NSLOT]));
    for (int a = 0; a < ML_A2A_NALG; a++)
        e->tmin[a] = 1e300;
    return MPI_SUCCESS;
}

static void run_chosen(size_state *e, int source, int alg)
{
    e->phase = PH_RUN;
    e->source = source;
    e->alg = alg;
    e->ref = -1;
}

/* The candidates predicted at or below the mean of the fastest and slowest
 * prediction, and "mpi"; all of them without the model. */
static int candidates(comm_state *cs, size_state *e)
{
    e->ncand = 0;
    if (!CFG.model || cs->P <= 1) {
        for (int a = 0; a < ML_A2A_NALG; a++)
            e->cand[e->ncand++] = a;
        return MPI_SUCCESS;
    }
    ml_plogp p;
    if (ml_a2a.netmodel) { /* measured once per machine by `mpilens bench logp --model` */
        ml_netmodel_params(ml_a2a.netmodel, (size_t)e->bytes, &p);
    } else {
        double t0 = PMPI_Wtime();
        ml_plogp0 z;
        int rc = ml_plogp_measure(cs->dup, (size_t)e->bytes, &p, cs->have_p0 ? &cs->p0 : NULL, &z);
        if (rc != MPI_SUCCESS)
            return rc;
        e->group_local += PMPI_Wtime() - t0;
        if (!cs->have_p0) {
            cs->have_p0 = 1;
            cs->p0 = z;
            if (cs->wr)
                ml_a2a_p0_put(cs->wr, cs->P, cs->uid, &z);
        }
    }
    double pred[ML_A2A_NALG], lo = 0, hi = 0;
    for (int a = 0; a < ML_A2A_MPI; a++) {
        pred[a] = ml_a2a_algs[a].cost(cs->P, &p);
        if (a == 0 || pred[a] < lo)
            lo = pred[a];
        if (a == 0 || pred[a] > hi)
            hi = pred[a];
    }
    double thr = (lo + hi) / 2;
    for (int a = 0; a < ML_A2A_NALG; a++)
        if (a == ML_A2A_MPI || pred[a] <= thr) /* the MPI's own: no model, always kept */
            e->cand[e->ncand++] = a;
    return MPI_SUCCESS;
}

static int grouping(comm_state *cs, size_state *e)
{
    /* this run's choice (learned on this or an earlier communicator), then the file's */
    int reused = e->no_tune ? -1 : cs->reuse[ml_a2a_range_of(e->bytes)];
    int t = e->no_tune || reused >= 0 ? -1 : ml_tune_lookup(cs->P, cs->rpn, e->bytes);
    if (reused >= 0 || t >= 0) {
        run_chosen(e, reused >= 0 ? SRC_REUSED : SRC_TUNED, reused >= 0 ? reused : t);
        return MPI_SUCCESS;
    }
    int rc = candidates(cs, e);
    if (rc != MPI_SUCCESS)
        return rc;
    if (cs->P == 1)
        e->ncand = 1; /* nothing to choose between */
    for (int i = 0; i < e->ncand; i++)
        e->first_mask |= 1 << e->cand[i];
    e->source = SRC_LEARNED;
    if (e->ncand == 1) {
        run_chosen(e, SRC_SINGLE, e->cand[0]);
        return MPI_SUCCESS;
    }
    return start_learning(cs, e);
}

/* Learning runs the candidates in turn, learn_block() consecutive calls each:
 * short enough that a drifting machine biases none, long enough that each is
 * timed in the steady state it will run in (a call right after a different
 * algorithm inherits its skew between ranks). */
static int learn_block(void)
{
    return CFG.learn_n >= 25 && CFG.learn_n % 5 == 0 ? 5 : 1;
}

/* Race point j: calls per candidate after which candidates at or above
 * race[j] x the best leave (0: no such point).  Points sit after one turn,
 * at N/5 and at N/2 calls, in whole turns, at least one, strictly increasing
 * and before N; a point that coincides with an earlier one is dropped (the
 * earlier, looser factor stands). */
static int race_calls(int j)
{
    static const int frac[ML_A2A_RACE_POINTS] = {0, 5, 2}; /* 0: one turn */
    int N = CFG.learn_n, b = learn_block(), prev = 0;
    for (int i = 0; i <= j; i++) {
        int k = frac[i] ? N / frac[i] / b * b : b;
        if (k < b)
            k = b;
        if (i == j)
            return CFG.race[j] > 0 && k > prev && k < N ? k : 0;
        if (CFG.race[i] > 0 && k > prev && k < N)
            prev = k;
    }
    return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Agreed learned time per call of each candidate after k calls each (into t),
 * plus nx <= ML_A2A_NALG further values summed over the ranks (x, in place). */
static int agreed_times(comm_state *cs, size_state *e, int k, double *t, double *x, int nx)
{
    double v[ML_A2A_NALG * (NSLOT + 1)], S[ML_A2A_NALG * (NSLOT + 1)]; /* + nx <= ML_A2A_NALG */
    int n = e->ncand * NSLOT, b = learn_block(), nb = k / b;
    memcpy(v, e->ts, sizeof(double) * (size_t)n); /* rows of the first ncand candidates */
    for (int j = 0; j < nx; j++)
        v[n + j] = x[j];
    int rc = ml_sum_exact(v, S, n + nx, cs->dup);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < nx; j++)
        x[j] = S[n + j];
    int used = nb < NSLOT ? nb : NSLOT;
    for (int i = 0; i < e->ncand; i++) {
        double m[NSLOT];
        for (int j = 0; j < used; j++)
            m[j] = S[i * NSLOT + j] / cs->P / (((nb - 1 - j) / NSLOT + 1) * b);
        qsort(m, (size_t)used, sizeof *m, cmp_dbl);
        t[i] = used % 2 ? m[used / 2] : (m[used / 2 - 1] + m[used / 2]) / 2;
    }
    return MPI_SUCCESS;
}

/* Early elimination (beyond Nanri et al.: docs/alltoall.md): at each race
 * point the agreed times are compared and the clear losers stop learning; the
 * others go on to N calls each.  After the first turn (point 0) a candidate's
 * time is each rank's fastest call of that turn, averaged over the ranks: one
 * turn's mean is at the mercy of a single preempted or cold call (first
 * contact with a peer), its fastest call is not: to look slow, every call of
 * the turn must be slow.  Dropped candidates keep their partial time (turn
 * means; profile, re-learning pruning). */
static int race(comm_state *cs, size_state *e, int k, double factor, int by_fastest)
{
    double t[ML_A2A_NALG], x[ML_A2A_NALG];
    memcpy(x, e->tmin, sizeof x);
    int rc = agreed_times(cs, e, k, t, x, by_fastest ? e->ncand : 0);
    if (rc != MPI_SUCCESS)
        return rc;
    const double *cmp = by_fastest ? x : t; /* x: summed over ranks, same scale for all */
    double best = cmp[0];
    for (int i = 1; i < e->ncand; i++)
        if (cmp[i] < best)
            best = cmp[i];
    int n = 0;
    for (int i = 0; i < e->ncand; i++) {
        if (cmp[i] >= factor * best) {
            e->mean[e->cand[i]] = t[i];
            continue;
        }
        e->cand[n] = e->cand[i];
        e->tmin[n] = e->tmin[i];
        memmove(e->ts[n++], e->ts[i], sizeof e->ts[i]);
    }
    e->ncand = n;
    e->li = k * n;
    return MPI_SUCCESS;
}

/* End of Learning: agree on the learned times and pick the fastest. */
static int finish_learning(comm_state *cs, size_state *e, int each)
{
    double t[ML_A2A_NALG], x[2] = {e->learn_local, e->group_local};
    int rc = agreed_times(cs, e, each, t, x, 2);
    if (rc != MPI_SUCCESS)
        return rc;
    int best = 0;
    for (int i = 0; i < e->ncand; i++) {
        e->mean[e->cand[i]] = t[i];
        if (t[i] < t[best])
            best = i;
    }
    e->alg = e->cand[best];
    e->ref = e->mean[e->alg];
    free(e->ts); /* the learned means stay, the slots go */
    e->ts = NULL;
    if (CFG.reuse) { /* agreed by construction: every rank finishes at this call */
        cs->reuse[ml_a2a_range_of(e->bytes)] = (signed char)e->alg;
        ml_a2a_keep_choice(cs->P, cs->rpn, e->bytes, e->alg);
    }
    e->learn_s += x[0] / cs->P;
    e->group_s += x[1] / cs->P;
    e->group_local = 0;
    e->phase = PH_RUN;
    e->run_sum = 0;
    e->run_cnt = e->run_n = 0;
    return MPI_SUCCESS;
}

/* After a learning call: the race at a race point just reached, then the end
 * of Learning when one candidate is left or every one has had N calls. */
static int after_learning_call(comm_state *cs, size_state *e)
{
    int rc = MPI_SUCCESS, raced = 0;
    while (e->rp < ML_A2A_RACE_POINTS) {
        int k = race_calls(e->rp);
        if (k > 0 && e->li < e->ncand * k)
            break; /* this point is still ahead */
        if (k > 0 && e->li == e->ncand * k) {
            rc = race(cs, e, k, CFG.race[e->rp], e->rp == 0);
            raced = 1;
        }
        e->rp++;
        if (raced)
            break;
    }
    if (rc == MPI_SUCCESS && raced && e->ncand == 1)
        return finish_learning(cs, e, e->li); /* the race left one: it has won */
    if (rc == MPI_SUCCESS && e->li == e->ncand * CFG.learn_n)
        return finish_learning(cs, e, CFG.learn_n);
    return rc;
}

/* Periodic check in Running: agreed mean of the window vs the learned time. */
static int check_drift(comm_state *cs, size_state *e)
{
    double s;
    int rc = ml_sum_exact(&e->run_sum, &s, 1, cs->dup);
    if (rc != MPI_SUCCESS)
        return rc;
    double mean = s / cs->P / (e->run_n > 0 ? e->run_n : 1);
    e->run_sum = 0;
    e->run_cnt = e->run_n = 0;
    if (e->ref < 0) {
        e->ref = mean; /* tuned or single: this window is the reference */
        return MPI_SUCCESS;
    }
    if (mean <= e->ref * (1 + CFG.drift) && mean >= e->ref * (1 - CFG.drift))
        return MPI_SUCCESS;
    e->relearns++;
    if (e->source != SRC_LEARNED) { /* no learned times to prune with: full Grouping */
        e->source = SRC_LEARNED;
        e->phase = PH_NEW;
        e->no_tune = 1;
        e->ref = -1;
        return MPI_SUCCESS;
    }
    double best = e->mean[e->alg];
    int n = 0;
    for (int i = 0; i < e->ncand; i++) {
        int a = e->cand[i];
        if (e->mean[a] >= 0 && e->mean[a] < best * PRUNE_RELEARN)
            e->cand[n++] = a;
    }
    e->ncand = n;
    if (n <= 1) { /* the winner stands alone: the drifted time is the new reference */
        e->ref = mean;
        e->mean[e->alg] = mean;
        return MPI_SUCCESS;
    }
    return start_learning(cs, e);
}

#define ARGS sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype

/* ---------------- the policy ---------------- */
int ml_a2a_adaptive(comm_state *cs, size_state *e, const void *sendbuf, int sendcount,
                    MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype)
{
    int rc, rc2 = MPI_SUCCESS;
    e->calls++;
    if (e->phase == PH_NEW && (rc = grouping(cs, e)) != MPI_SUCCESS)
        return rc;
    ml_a2a_learning = e->phase != PH_RUN; /* after Grouping: a tuned or single candidate runs at once */
    if (e->phase == PH_LEARN) {           /* the next candidate's turn, timed */
        int i = (e->li / learn_block()) % e->ncand, turn = e->li / learn_block() / e->ncand;
        double t0 = PMPI_Wtime();
        rc = ml_a2a_algs[e->cand[i]].run(ARGS, cs->dup);
        double dt = PMPI_Wtime() - t0;
        e->ts[i][turn % NSLOT] += dt;
        if (turn == 0 && dt < e->tmin[i])
            e->tmin[i] = dt;
        e->learn_local += dt;
        e->learn_calls++;
        ++e->li;
        rc2 = after_learning_call(cs, e);
        return rc == MPI_SUCCESS ? rc2 : rc;
    }
    if (CFG.check_every <= 0)             /* Running, never checked */
        return ml_a2a_algs[e->alg].run(ARGS, cs->dup);
    int timed = e->run_cnt % RUN_SAMPLE == 0; /* Running, a sample of the calls timed */
    double t0 = timed ? PMPI_Wtime() : 0;
    rc = ml_a2a_algs[e->alg].run(ARGS, cs->dup);
    if (timed) {
        e->run_sum += PMPI_Wtime() - t0;
        e->run_n++;
    }
    if (++e->run_cnt >= CFG.check_every)
        rc2 = check_drift(cs, e);
    return rc == MPI_SUCCESS ? rc2 : rc;
}
