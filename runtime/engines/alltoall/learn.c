/* The adaptive policy, per (communicator, block size m), in three phases
 * (Nanri et al. 2008, docs/references.md; what goes beyond it: docs/alltoall.md):
 *
 *   Grouping  first call with m: a choice this run already learned for the
 *             same communicator size and ranks per node (memo.c), else a
 *             matching tuning-file entry, else an earlier run's (cache.c),
 *             runs at once; an earlier run's partial learning is resumed
 *             (candidates and samples, no measurement).  Otherwise measure
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
 *             at N/5 and at N/2 calls (MPILENS_ALLTOALL_RACE), never "mpi".
 *             The choice (run_best): "mpi" unless another candidate is faster
 *             beyond the noise (exact signed-rank test on its slots against
 *             mpi's, ml_a2a_beats); without "mpi", the lowest learned time.
 *             A run not expected to finish (learning cache: calls per
 *             run) learns for half its calls, then runs the best measured
 *             candidate: a provisional choice (MPILENS_ALLTOALL_PROVISIONAL).
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
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "alltoall.h"

#define CFG ml_a2a.cfg
#define ARGS sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype

__thread int ml_a2a_learning;
__thread int ml_a2a_user_err;

int ml_a2a_run(const comm_state *cs, int alg, const void *sendbuf, int sendcount,
               MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype)
{
    int rc = ml_a2a_algs[alg].run(ARGS, ml_a2a_comm_for(cs, alg));
    ml_a2a_user_err = rc != MPI_SUCCESS && alg == ML_A2A_MPI;
    return rc;
}

/* Learning's samples (allocated on first use, kept while a provisional
 * choice runs: cache.c saves them at MPI_Finalize). */
int ml_a2a_learn_alloc(comm_state *cs, size_state *e)
{
    if (!e->lr && !(e->lr = malloc(sizeof(cand_learn) * ML_A2A_NALG)))
        return ml_a2a_out_of_memory(cs->comm);
    memset(e->lr, 0, sizeof(cand_learn) * ML_A2A_NALG);
    for (int a = 0; a < ML_A2A_NALG; a++) {
        e->lr[a].tmin = 1e300;
        e->lr[a].ctmin = -1;
    }
    e->phase = PH_LEARN;
    e->cur = -1;
    e->rp = 0;
    return MPI_SUCCESS;
}

static int start_learning(comm_state *cs, size_state *e)
{
    e->learn_local = 0;
    e->budget = -1;
    e->carried = 0;
    return ml_a2a_learn_alloc(cs, e);
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

/* Learning runs the candidates in turn, learn_block() consecutive calls each:
 * short enough that a drifting machine biases none, long enough that each is
 * timed in the steady state it will run in (a call right after a different
 * algorithm inherits its skew between ranks). */
int ml_a2a_learn_block(void)
{
    return CFG.learn_n >= 25 && CFG.learn_n % 5 == 0 ? 5 : 1;
}

/* Turns of one call when a run makes few calls at this size (few): every
 * candidate gets a sample in a run of ten calls. */
int ml_a2a_block_of(const size_state *e)
{
    return e->few ? 1 : ml_a2a_learn_block();
}

static int end_of_turn(comm_state *cs, size_state *e);
static int cmp_dbl(const void *a, const void *b);

/* A candidate's time from the carried samples only (the median over its slots
 * of the slot means, as agreed_times): identical on every rank, since the
 * cache is broadcast, so no reduction is needed; 1e300 without samples. */
static double carried_time(const comm_state *cs, const cand_learn *l)
{
    double m[NSLOT];
    int used = 0;
    for (int j = 0; j < NSLOT; j++)
        if (l->ctn[j] > 0)
            m[used++] = l->cts[j] / cs->P / l->ctn[j];
    if (used == 0)
        return 1e300;
    qsort(m, (size_t)used, sizeof *m, cmp_dbl);
    return used % 2 ? m[used / 2] : (m[used / 2 - 1] + m[used / 2]) / 2;
}

/* Few calls per run: when a resumed learning has a sample of every candidate
 * left, the slower half leave before this run learns (their carried time is
 * kept), so that the few calls of a run go to fewer candidates.  The MPI's own
 * algorithm (the default, see run_best) stays: if it is not in the faster half,
 * it takes the half's last place. */
static void halve_field(const comm_state *cs, size_state *e)
{
    double t[ML_A2A_NALG];
    int order[ML_A2A_NALG], n = e->ncand;
    if (n <= 2)
        return;
    for (int i = 0; i < n; i++) {
        if (e->lr[i].done0 < 1)
            return; /* a candidate without a sample: not yet */
        t[i] = carried_time(cs, &e->lr[i]);
        order[i] = i;
    }
    for (int i = 1; i < n; i++) /* by time, ties by position: the same on every rank */
        for (int j = i; j > 0 && (t[order[j]] < t[order[j - 1]] ||
                                  (t[order[j]] == t[order[j - 1]] && order[j] < order[j - 1])); j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    int keep = (n + 1) / 2, stay[ML_A2A_NALG] = {0}, have_mpi = 0;
    for (int i = 0; i < keep; i++) {
        stay[order[i]] = 1;
        have_mpi |= e->cand[order[i]] == ML_A2A_MPI;
    }
    for (int i = keep; i < n && !have_mpi; i++) /* the default stays: it takes the last place */
        if (e->cand[order[i]] == ML_A2A_MPI) {
            stay[order[keep - 1]] = 0;
            stay[order[i]] = 1;
            have_mpi = 1;
        }
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!stay[i]) {
            e->mean[e->cand[i]] = t[i];
            continue;
        }
        e->cand[m] = e->cand[i];
        if (m != i)
            e->lr[m] = e->lr[i];
        m++;
    }
    e->ncand = m;
    e->cur = -1;
}

/* Before the set-up: the tuning file's final choice, else the learning
 * cache's, for this communicator size, ranks per node (from the world table)
 * and block size; -1 none.  Every input is the same on every rank (the files
 * are read by rank 0 and broadcast at MPI_Init, the world table is agreed
 * there, a block's bytes match on all ranks), so every rank decides alike
 * without communication.  This run's kept choices (reuse) differ between
 * ranks and are agreed only in the set-up: not consulted here. */
static int final_choice_unset(const comm_state *cs, const size_state *e)
{
    if (cs->setup || e->no_tune || cs->rpn <= 0)
        return -1;
    int t = ml_tune_lookup(cs->P, cs->rpn, e->bytes);
    return t >= 0 ? t : ml_a2a_cache_choice(cs->P, cs->rpn, e->bytes);
}

static int grouping(comm_state *cs, size_state *e)
{
    int rc;
    if (!cs->setup) {
        /* the MPI's own as a final choice runs on the user's communicator:
         * no set-up, no collective of the engine's (issue 30) */
        if (final_choice_unset(cs, e) == ML_A2A_MPI) {
            run_chosen(e, ml_tune_lookup(cs->P, cs->rpn, e->bytes) >= 0 ? SRC_TUNED : SRC_REUSED,
                       ML_A2A_MPI);
            return MPI_SUCCESS;
        }
        if ((rc = ml_a2a_setup(cs)) != MPI_SUCCESS)
            return rc;
    }
    /* this run's choice (learned on this or an earlier communicator), then the
     * tuning file's, then an earlier run's (the cache) */
    int reused = e->no_tune ? -1 : cs->reuse[ml_a2a_range_of(e->bytes)];
    int t = e->no_tune || reused >= 0 ? -1 : ml_tune_lookup(cs->P, cs->rpn, e->bytes);
    int c = e->no_tune || reused >= 0 || t >= 0 ? -1 : ml_a2a_cache_choice(cs->P, cs->rpn, e->bytes);
    if (reused >= 0 || t >= 0 || c >= 0) {
        run_chosen(e, t >= 0 ? SRC_TUNED : SRC_REUSED, t >= 0 ? t : reused >= 0 ? reused : c);
        return MPI_SUCCESS;
    }
    int resumed = 0;
    e->source = SRC_LEARNED;
    if (!e->no_tune && (rc = ml_a2a_cache_resume(cs, e, &resumed)) != MPI_SUCCESS)
        return rc;
    if (!resumed) {
        if ((rc = candidates(cs, e)) != MPI_SUCCESS)
            return rc;
        if (cs->P == 1)
            e->ncand = 1; /* nothing to choose between */
        for (int i = 0; i < e->ncand; i++)
            e->first_mask |= 1 << e->cand[i];
        if (e->ncand == 1) {
            run_chosen(e, SRC_SINGLE, e->cand[0]);
            return MPI_SUCCESS;
        }
        if ((rc = start_learning(cs, e)) != MPI_SUCCESS)
            return rc;
    }
    ml_a2a_cache_plan(cs, e);
    if (resumed && e->few)
        halve_field(cs, e);
    return resumed ? end_of_turn(cs, e) : MPI_SUCCESS; /* races the carried samples passed */
}

/* Race point j: calls per candidate after which candidates at or above
 * race[j] x the best leave (0: no such point).  Points sit after one turn,
 * at N/5 and at N/2 calls, in whole turns, at least one, strictly increasing
 * and before N; a point that coincides with an earlier one is dropped (the
 * earlier, looser factor stands).  With few calls per run (turns of one call)
 * there is no point after one turn: its fastest call would be a single call,
 * which one preemption makes 1000 x slow; the halving between runs does its
 * work. */
static int race_calls(const size_state *e, int j)
{
    static const int frac[ML_A2A_RACE_POINTS] = {0, 5, 2}; /* 0: one turn */
    int N = CFG.learn_n, b = ml_a2a_block_of(e), prev = 0;
    for (int i = 0; i <= j; i++) {
        int k = frac[i] ? N / frac[i] / b * b : b;
        double f = i == 0 && e->few ? 0 : CFG.race[i];
        if (k < b)
            k = b;
        if (i == j)
            return f > 0 && k > prev && k < N ? k : 0;
        if (f > 0 && k > prev && k < N)
            prev = k;
    }
    return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Whether candidate c's first turn had calls in this run (the same on every
 * rank: the counts are): its local fastest call then counts. */
static int first_turn_here(const size_state *e, const cand_learn *c)
{
    return c->done0 < ml_a2a_block_of(e) && c->done > c->done0;
}

/* Agreed learned time per call of each candidate left (into t: the median
 * over its slots of the slot means, carried samples included; the slot means
 * themselves into each row's am, for run_best's test), plus nx <=
 * ML_A2A_NALG + 2 further values summed over the ranks (x, in place).  With
 * S not NULL, the sums of this run's slots go there (ncand x NSLOT). */
static int agreed_times(comm_state *cs, size_state *e, double *t, double *x, int nx, double *S)
{
    double v[ML_A2A_NALG * NSLOT + ML_A2A_NALG + 2], sum[ML_A2A_NALG * NSLOT + ML_A2A_NALG + 2];
    int n = e->ncand * NSLOT;
    for (int i = 0; i < e->ncand; i++)
        memcpy(v + i * NSLOT, e->lr[i].ts, sizeof e->lr[i].ts);
    for (int j = 0; j < nx; j++)
        v[n + j] = x[j];
    int rc = ml_sum_exact(v, sum, n + nx, cs->dup);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < nx; j++)
        x[j] = sum[n + j];
    if (S)
        memcpy(S, sum, sizeof(double) * (size_t)n);
    for (int i = 0; i < e->ncand; i++) {
        cand_learn *c = &e->lr[i];
        double m[NSLOT];
        int used = 0;
        for (int j = 0; j < NSLOT; j++) {
            c->am[j] = c->tn[j] > 0 ? (sum[i * NSLOT + j] + c->cts[j]) / cs->P / c->tn[j] : 0;
            if (c->tn[j] > 0)
                m[used++] = c->am[j];
        }
        if (used == 0) {
            t[i] = 1e300; /* no sample (cannot happen at a race point or the end) */
            continue;
        }
        qsort(m, (size_t)used, sizeof *m, cmp_dbl);
        t[i] = used % 2 ? m[used / 2] : (m[used / 2 - 1] + m[used / 2]) / 2;
    }
    return MPI_SUCCESS;
}

/* Whether v is a measured time: a time of 0 (or below) is none, nor is the
 * 1e300 of a candidate without samples. */
static int measured(double v)
{
    return v > 0 && v < 1e300;
}

/* Drops the candidates at or above factor x the best of cmp (their time t
 * is kept for the profile and re-learning); the others keep their rows, and
 * t is compacted with them (cmp may be t: read before it moves).  The MPI's
 * own algorithm is never dropped (it is the default choice, run_best).
 * Candidates without a measured value in cmp are never the best; those without
 * samples (1e300) are dropped, those without a first-turn minimum (<= 0) stay;
 * the best always stays, so at least one candidate is left. */
static void drop_slow(size_state *e, const double *cmp, double *t, double factor)
{
    int best = -1;
    for (int i = 0; i < e->ncand; i++)
        if (measured(cmp[i]) && (best < 0 || cmp[i] < cmp[best]))
            best = i;
    if (best < 0)
        return; /* nothing measured: nothing to compare */
    double bar = factor * cmp[best]; /* before t (which may be cmp) is compacted */
    int n = 0;
    for (int i = 0; i < e->ncand; i++) {
        /* a candidate without samples (1e300) is dropped as before; one without a
         * comparable time (<= 0: no first-turn minimum) stays, to be judged later;
         * the MPI's own algorithm, the default (run_best), never leaves by a race */
        double ci = cmp[i];
        if (i != best && e->cand[i] != ML_A2A_MPI && ci > 0 && ci >= bar) {
            e->mean[e->cand[i]] = t[i];
            continue;
        }
        e->cand[n] = e->cand[i];
        t[n] = t[i]; /* t follows its row (run_best reads it after a provisional drop) */
        if (n != i)
            e->lr[n] = e->lr[i];
        n++;
    }
    e->ncand = n;
    e->cur = -1;
}

/* Early elimination (beyond Nanri et al.: docs/alltoall.md): at each race
 * point the agreed times are compared and the clear losers stop learning; the
 * others go on to N calls each.  After the first turn (point 0) a candidate's
 * time is each rank's fastest call of that turn, summed over the ranks: one
 * turn's mean is at the mercy of a single preempted or cold call (first
 * contact with a peer), its fastest call is not: to look slow, every call of
 * the turn must be slow.  A candidate without a first-turn minimum (none in
 * this run, none carried) takes no part in that comparison: it stays, to be
 * judged at the next point.  Dropped candidates keep their partial time (turn
 * means; profile, re-learning pruning). */
static int race(comm_state *cs, size_state *e, double factor, int by_fastest)
{
    double t[ML_A2A_NALG], x[ML_A2A_NALG];
    for (int i = 0; i < e->ncand; i++) /* no first-turn call here: 0, the carried sum counts */
        x[i] = first_turn_here(e, &e->lr[i]) ? e->lr[i].tmin : 0;
    int rc = agreed_times(cs, e, t, x, by_fastest ? e->ncand : 0, NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; by_fastest && i < e->ncand; i++) { /* x: summed over ranks, one scale for all */
        const cand_learn *c = &e->lr[i];
        double carried = c->ctmin;
        if (first_turn_here(e, c))
            x[i] = carried > 0 && carried < x[i] ? carried : x[i];
        else
            x[i] = carried > 0 ? carried : -1; /* no first-turn minimum: not compared */
    }
    drop_slow(e, by_fastest ? x : t, t, factor);
    return MPI_SUCCESS;
}

/* Learning's agreed times: the end of this run's learning calls are summed
 * into learn_s and grouping_s (mean over ranks), the locals start again. */
static void add_times(comm_state *cs, size_state *e, const double x[2])
{
    e->learn_s += x[0] / cs->P;
    e->group_s += x[1] / cs->P;
    e->learn_local = e->group_local = 0;
}

/* Whether the slot means a are lower than d beyond the noise: a one-sided
 * exact Wilcoxon signed-rank test on the slots both have (paired by index:
 * the same turn, so a machine whose speed drifts between turns affects both),
 * p < alpha.  The differences are (a - d) / (a + d), monotone in log(a / d)
 * (scale-free, and no libm: every rank computes the same bits); ties of
 * |difference| take their mean rank (doubled, to stay integers), zeros are left
 * out.  With n pairs the smallest p is 2^-n, so fewer than 5 pairs (at alpha
 * 0.05) never show a difference.  Exported for the tests' documentation only:
 * the choice is tested end to end (tests/test_alltoall_runs.py). */
int ml_a2a_beats(const double *a, const double *d, double alpha)
{
    double x[NSLOT];
    int n = 0, r2[NSLOT], tplus = 0;
    for (int j = 0; j < NSLOT; j++)
        if (a[j] > 0 && d[j] > 0 && a[j] != d[j])
            x[n++] = (a[j] - d[j]) / (a[j] + d[j]);
    if (n == 0)
        return 0;
    for (int i = 0; i < n; i++) {
        int less = 0, eq = 0;
        double ai = x[i] < 0 ? -x[i] : x[i];
        for (int k = 0; k < n; k++) {
            double ak = x[k] < 0 ? -x[k] : x[k];
            less += ak < ai;
            eq += ak == ai;
        }
        r2[i] = 2 * less + eq + 1; /* twice the mean rank of the tie group */
        if (x[i] > 0)
            tplus += r2[i]; /* a slower than d in this slot */
    }
    double cnt[NSLOT * (NSLOT + 1) + 1] = {1}, le = 0, all = 1;
    int top = 0;
    for (int i = 0; i < n; i++) { /* sign patterns by their doubled positive rank sum */
        for (int v = top; v >= 0; v--)
            cnt[v + r2[i]] += cnt[v];
        top += r2[i];
        all *= 2;
    }
    for (int v = 0; v <= tplus; v++)
        le += cnt[v];
    return le / all < alpha;
}

/* Running the chosen candidate.  The MPI's own algorithm ("mpi", what native
 * MPI_Alltoall runs) is the default: when it is a candidate left with a
 * measured time, another candidate replaces it only if that one's slot means
 * are lower beyond the noise (ml_a2a_beats, at ML_A2A_ALPHA divided by the
 * number of candidates tested) and its learned time (median) is lower; of those,
 * the lowest learned time runs.  So no candidate runs that is not shown better
 * than the default, and a handful of samples (first calls, a preempted turn)
 * cannot move the choice away from the MPI's own.  Without the default: the
 * lowest agreed time t of the candidates left, or a dropped candidate's kept
 * time if that is lower (a race judges on early samples or fastest calls, so a
 * candidate it dropped can end with a lower measured mean than the winner's;
 * the choice is never one whose measured time is above another's).  A dropped
 * candidate chosen so rejoins the candidates (with no samples of its own while
 * learning goes on). */
static void run_best(size_state *e, const double *t, int source)
{
    int best = 0, dflt = -1, tested = 0;
    for (int i = 0; i < e->ncand; i++) {
        e->mean[e->cand[i]] = t[i];
        if (t[i] < t[best])
            best = i;
        if (e->cand[i] == ML_A2A_MPI && measured(t[i]) && e->lr)
            dflt = i;
    }
    int alg = e->cand[best];
    double tb = t[best];
    if (dflt >= 0) {
        for (int i = 0; i < e->ncand; i++)
            tested += i != dflt && measured(t[i]);
        int win = dflt;
        for (int i = 0; i < e->ncand; i++)
            if (i != dflt && measured(t[i]) && t[i] < t[dflt] && t[i] < t[win] &&
                ml_a2a_beats(e->lr[i].am, e->lr[dflt].am, ML_A2A_ALPHA / tested))
                win = i;
        alg = e->cand[win];
    } else
        for (int a = 0; a < ML_A2A_NALG; a++) {
            int left = 0;
            for (int i = 0; i < e->ncand; i++)
                left |= e->cand[i] == a;
            if (!left && measured(e->mean[a]) && e->mean[a] < tb) {
                alg = a;
                tb = e->mean[a];
            }
        }
    int in = 0;
    for (int i = 0; i < e->ncand; i++)
        in |= e->cand[i] == alg;
    if (!in) {
        if (e->lr) {
            memset(&e->lr[e->ncand], 0, sizeof e->lr[e->ncand]);
            e->lr[e->ncand].tmin = 1e300;
            e->lr[e->ncand].ctmin = -1;
        }
        e->cand[e->ncand++] = alg;
    }
    e->alg = alg;
    e->ref = e->mean[e->alg];
    e->source = source;
    e->phase = PH_RUN;
    e->run_sum = 0;
    e->run_cnt = e->run_n = 0;
}

/* Learning again, from the samples so far (a provisional choice that drifted
 * or outlived its run's estimate). */
static void back_to_learning(size_state *e)
{
    e->phase = PH_LEARN;
    e->source = SRC_LEARNED;
    e->budget = -1;
    e->cur = -1;
}

/* End of Learning: agree on the learned times and pick the fastest. */
static int finish_learning(comm_state *cs, size_state *e)
{
    double t[ML_A2A_NALG], x[2] = {e->learn_local, e->group_local};
    int rc = agreed_times(cs, e, t, x, 2, NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    run_best(e, t, SRC_LEARNED);
    free(e->lr); /* the learned means stay, the samples go */
    e->lr = NULL;
    if (CFG.reuse) { /* agreed by construction: every rank finishes at this call */
        cs->reuse[ml_a2a_range_of(e->bytes)] = (signed char)e->alg;
        ml_a2a_keep_choice(cs->P, cs->rpn, e->bytes, e->alg);
    }
    add_times(cs, e, x);
    return MPI_SUCCESS;
}

/* A provisional choice (docs/alltoall.md, "Choices from few calls"): this run
 * is not expected to last until Learning ends, and it has spent its learning
 * budget.  The candidates at or above the race's first factor x the best
 * leave (as at a race point); of the others, the one with the lowest learned
 * time so far runs.  Every candidate left has at least one whole turn (the
 * caller checks), so the choice is always a measured one, and never one
 * whose time is above the best measured.  The samples stay (a later run, or
 * this one if it outlives the estimate, finishes Learning). */
static int provisional(comm_state *cs, size_state *e)
{
    double t[ML_A2A_NALG];
    int rc = agreed_times(cs, e, t, NULL, 0, NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    double f = 0;
    for (int j = 0; j < ML_A2A_RACE_POINTS && f == 0; j++)
        f = CFG.race[j];
    if (f > 0)
        drop_slow(e, t, t, f);
    if (e->ncand == 1)
        return finish_learning(cs, e); /* as at a race point: the one left has won */
    run_best(e, t, SRC_PROVISIONAL);
    return MPI_SUCCESS;
}

static int min_done(const size_state *e)
{
    int lo = INT_MAX;
    for (int i = 0; i < e->ncand; i++)
        lo = e->lr[i].done < lo ? e->lr[i].done : lo;
    return lo;
}

/* At the end of a turn: the race at every race point reached, the end of
 * Learning when one candidate is left or every one has had N calls, else a
 * provisional choice once this run's learning budget is spent. */
static int end_of_turn(comm_state *cs, size_state *e)
{
    int rc, lo = min_done(e);
    while (e->rp < ML_A2A_RACE_POINTS) {
        int k = race_calls(e, e->rp);
        if (k > 0 && lo < k)
            break; /* this point is still ahead */
        int j = e->rp++;
        if (k == 0)
            continue;
        if ((rc = race(cs, e, CFG.race[j], j == 0)) != MPI_SUCCESS)
            return rc;
        if (e->ncand == 1)
            return finish_learning(cs, e); /* the race left one: it has won */
        lo = min_done(e);
    }
    if (lo >= CFG.learn_n)
        return finish_learning(cs, e);
    if (e->budget >= 0 && e->learn_calls - e->round0 >= e->budget && lo >= ml_a2a_block_of(e))
        return provisional(cs, e);
    return MPI_SUCCESS;
}

/* MPI_Finalize while learning, or with a provisional choice: the learning
 * and grouping times so far are agreed (mean over ranks, added to learn_s
 * and grouping_s), and with S not NULL this run's slot sums and first-turn
 * fastest calls (summed over the ranks: ncand x NSLOT, then ncand) go
 * there for the cache.  Collective over the communicator. */
int ml_a2a_agree_partial(comm_state *cs, size_state *e, double *S)
{
    double t[ML_A2A_NALG], x[ML_A2A_NALG + 2];
    int n = e->ncand;
    for (int i = 0; i < n; i++)
        x[i] = first_turn_here(e, &e->lr[i]) ? e->lr[i].tmin : 0;
    x[n] = e->learn_local;
    x[n + 1] = e->group_local;
    int rc = agreed_times(cs, e, t, x, n + 2, S);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; S && i < n; i++) { /* the first turn's fastest calls, carried ones included */
        const cand_learn *c = &e->lr[i];
        int here = first_turn_here(e, c);
        S[n * NSLOT + i] = here && c->ctmin > 0 && c->ctmin < x[i] ? c->ctmin : here ? x[i] : c->ctmin;
    }
    add_times(cs, e, x + n);
    if (e->final_run && min_done(e) >= 1)
        return finish_learning(cs, e); /* few calls, third run: the best measured, final */
    if (e->phase == PH_LEARN) /* still learning: what the times so far say, for the profile */
        for (int i = 0; i < n; i++)
            if (t[i] < 1e300)
                e->mean[e->cand[i]] = t[i];
    return MPI_SUCCESS;
}

/* Periodic check in Running: agreed mean of the window vs the learned time. */
static int check_drift(comm_state *cs, size_state *e)
{
    double s;
    /* not set up ("mpi" final, run on the user's communicator): on it */
    int rc = ml_sum_exact(&e->run_sum, &s, 1, cs->setup ? cs->dup : cs->comm);
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
    if (e->source == SRC_PROVISIONAL) { /* learning goes on from its samples */
        back_to_learning(e);
        return MPI_SUCCESS;
    }
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
        if (e->mean[a] >= 0 && (a == ML_A2A_MPI || e->mean[a] < best * PRUNE_RELEARN))
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

/* The candidate whose turn comes: the one with the fewest calls (the first
 * such), so that candidates take turns and carried samples even out. */
static int next_candidate(const size_state *e)
{
    int best = 0;
    for (int i = 1; i < e->ncand; i++)
        if (e->lr[i].done < e->lr[best].done)
            best = i;
    return best;
}

/* ---------------- the policy ---------------- */
int ml_a2a_adaptive(comm_state *cs, size_state *e, const void *sendbuf, int sendcount,
                    MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype)
{
    int rc, rc2 = MPI_SUCCESS;
    e->calls++;
    if (e->phase == PH_NEW && (rc = grouping(cs, e)) != MPI_SUCCESS)
        return rc;
    if (e->phase == PH_RUN && e->source == SRC_PROVISIONAL && e->expect >= 0 &&
        e->calls > e->expect) /* the run outlives its estimate: learning goes on */
        back_to_learning(e);
    ml_a2a_learning = e->phase != PH_RUN; /* after Grouping: a tuned or single candidate runs at once */
    if (e->phase == PH_LEARN) {           /* the next candidate's turn, timed */
        int b = ml_a2a_block_of(e);
        if (e->cur < 0 || e->lr[e->cur].done % b == 0)
            e->cur = next_candidate(e);
        cand_learn *c = &e->lr[e->cur];
        int slot = c->done / b % NSLOT;
        double t0 = PMPI_Wtime();
        rc = ml_a2a_run(cs, e->cand[e->cur], ARGS);
        double dt = PMPI_Wtime() - t0;
        c->ts[slot] += dt;
        c->tn[slot]++;
        if (c->done < b && dt < c->tmin)
            c->tmin = dt;
        c->done++;
        e->learn_local += dt;
        e->learn_calls++;
        if (c->done % b == 0)
            rc2 = end_of_turn(cs, e);
        return rc == MPI_SUCCESS ? rc2 : rc;
    }
    if (CFG.check_every <= 0)             /* Running, never checked */
        return ml_a2a_run(cs, e->alg, ARGS);
    int timed = e->run_cnt % RUN_SAMPLE == 0; /* Running, a sample of the calls timed */
    double t0 = timed ? PMPI_Wtime() : 0;
    rc = ml_a2a_run(cs, e->alg, ARGS);
    if (timed) {
        e->run_sum += PMPI_Wtime() - t0;
        e->run_n++;
    }
    if (++e->run_cnt >= CFG.check_every)
        rc2 = check_drift(cs, e);
    return rc == MPI_SUCCESS ? rc2 : rc;
}
