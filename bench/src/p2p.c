/* p2p: ping-pong latency (half round trip), ping-ping, uni- and bi-directional
 * windowed bandwidth between one pair of ranks, 0 B .. 4 MiB; optional in-run
 * OSU reference loops (osu_latency / osu_bw algorithms) for accuracy checks. */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M_LAT, M_PING, M_BW, M_BIBW, NMODE };
static const char *const mode_names[NMODE] = {"latency", "pingping", "bw", "bibw"};
static const char *const mode_keys[NMODE] = {"latency_s", "pingping_s", "bw_Bps", "bibw_Bps"};
enum { T_PP = 1, T_PI, T_BW, T_ACK, T_OSU, T_OSUACK };

typedef struct {
    int a, b, role, other;          /* role 0 = rank a (timer), 1 = rank b, -1 idle */
    unsigned char *sbuf, *rbuf;
    char ack[4];
    MPI_Request req[2 * 4096];
    MPI_Status st[2 * 4096];      /* osu_bw passes a status array too */
    int window;
    MPI_Comm comm;                  /* the two ranks (MPI_COMM_NULL elsewhere) */
} pair_t;

/* one timed sample of `iters` repetitions; returns seconds on rank a */
static double sample(pair_t *p, int mode, long long size, int iters)
{
    int n = (int)size, o = p->other, w = p->window;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        switch (mode) {
        case M_LAT:
            if (p->role == 0) {
                MPI_Send(p->sbuf, n, MPI_BYTE, o, T_PP, MPI_COMM_WORLD);
                MPI_Recv(p->rbuf, n, MPI_BYTE, o, T_PP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(p->rbuf, n, MPI_BYTE, o, T_PP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(p->sbuf, n, MPI_BYTE, o, T_PP, MPI_COMM_WORLD);
            }
            break;
        case M_PING:
            MPI_Isend(p->sbuf, n, MPI_BYTE, o, T_PI, MPI_COMM_WORLD, &p->req[0]);
            MPI_Recv(p->rbuf, n, MPI_BYTE, o, T_PI, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&p->req[0], MPI_STATUS_IGNORE);
            break;
        case M_BW:
            if (p->role == 0) {
                for (int k = 0; k < w; k++)
                    MPI_Isend(p->sbuf, n, MPI_BYTE, o, T_BW, MPI_COMM_WORLD, &p->req[k]);
                MPI_Waitall(w, p->req, p->st);
                MPI_Recv(p->ack, 4, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int k = 0; k < w; k++)
                    MPI_Irecv(p->rbuf, n, MPI_BYTE, o, T_BW, MPI_COMM_WORLD, &p->req[k]);
                MPI_Waitall(w, p->req, p->st);
                MPI_Send(p->ack, 4, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD);
            }
            break;
        case M_BIBW:
            for (int k = 0; k < w; k++)
                MPI_Irecv(p->rbuf, n, MPI_BYTE, o, T_BW, MPI_COMM_WORLD, &p->req[k]);
            for (int k = 0; k < w; k++)
                MPI_Isend(p->sbuf, n, MPI_BYTE, o, T_BW, MPI_COMM_WORLD, &p->req[w + k]);
            MPI_Waitall(2 * w, p->req, p->st);
            break;
        }
    }
    return MPI_Wtime() - t0;
}

/* osu_latency: skip warm-up iterations, then time/(2*iters) */
static double osu_latency(pair_t *p, long long size, int iters, int skip)
{
    int n = (int)size, o = p->other;
    double t0 = 0;
    MPI_Barrier(p->comm);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip) t0 = MPI_Wtime();
        if (p->role == 0) {
            MPI_Send(p->sbuf, n, MPI_BYTE, o, T_OSU, MPI_COMM_WORLD);
            MPI_Recv(p->rbuf, n, MPI_BYTE, o, T_OSU, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (p->role == 1) {
            MPI_Recv(p->rbuf, n, MPI_BYTE, o, T_OSU, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(p->sbuf, n, MPI_BYTE, o, T_OSU, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * iters);
}

/* osu_bw: window of 64 MPI_Isend + MPI_Waitall, then a 4-byte ack */
static double osu_bw(pair_t *p, long long size, int iters, int skip)
{
    int n = (int)size, o = p->other, w = p->window;
    double t0 = 0;
    MPI_Barrier(p->comm);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip) t0 = MPI_Wtime();
        if (p->role == 0) {
            for (int k = 0; k < w; k++)
                MPI_Isend(p->sbuf, n, MPI_BYTE, o, T_OSU, MPI_COMM_WORLD, &p->req[k]);
            MPI_Waitall(w, p->req, p->st);
            MPI_Recv(p->ack, 4, MPI_BYTE, o, T_OSUACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int k = 0; k < w; k++)
                MPI_Irecv(p->rbuf, n, MPI_BYTE, o, T_OSU, MPI_COMM_WORLD, &p->req[k]);
            MPI_Waitall(w, p->req, p->st);
            MPI_Send(p->ack, 4, MPI_BYTE, o, T_OSUACK, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    return (double)size * w * iters / t;
}

static void parse_ranks(int *a, int *b)
{
    const char *v = ml_opt_str("ranks", "0,1");
    char extra;
    if (sscanf(v, "%d,%d%c", a, b, &extra) != 2 || *a < 0 || *b < 0 || *a >= ml_size ||
        *b >= ml_size || *a == *b)
        ml_usage("--ranks '%s' is invalid (accepted: two distinct ranks A,B from 0 to %d)",
                 v, ml_size - 1);
}

/* sizes where the latency gains a fixed cost beyond the linear model (protocol
 * switch) or the bandwidth drops as the size grows.  lat and bw hold 3 x ns values:
 * the medians, then the low and the high ends of their 95 % intervals; a crossover
 * is claimed only when it holds at the ends of the intervals that make it hardest
 * (outside the noise), not on the medians alone. */
static void crossovers(ml_json *w, const long long *sz, int ns, const double *lat,
                       const double *bw)
{
    const double *lat_lo = lat + ns, *lat_hi = lat + 2 * ns;
    const double *bw_lo = bw + ns, *bw_hi = bw + 2 * ns;
    ml_json_arr(w, "crossovers");
    double base_lo = ns ? lat_lo[0] : 0;
    for (int i = 1; i < ns; i++) {
        if (sz[i - 1] == 0 || sz[i] != 2 * sz[i - 1]) continue;
        /* excess = lat - 2 lat[i-1] + lat[0] > 0.3 lat, at the ends least favourable */
        double excess = lat_lo[i] - 2 * lat_hi[i - 1] + base_lo;
        if (sz[i] >= 64 && isfinite(excess) && excess > 0.3 * lat_lo[i]) {
            ml_json_obj(w, NULL);
            ml_json_int(w, "size", sz[i]);
            ml_json_str(w, "evidence", "latency_step");
            ml_json_num(w, "before", lat[i - 1]);
            ml_json_num(w, "after", lat[i]);
            ml_json_end(w);
        }
        if (sz[i] >= 1024 && isfinite(bw_hi[i]) && isfinite(bw_lo[i - 1]) &&
            bw_hi[i] < 0.85 * bw_lo[i - 1]) {
            ml_json_obj(w, NULL);
            ml_json_int(w, "size", sz[i]);
            ml_json_str(w, "evidence", "bandwidth_drop");
            ml_json_num(w, "before", bw[i - 1]);
            ml_json_num(w, "after", bw[i]);
            ml_json_end(w);
        }
    }
    ml_json_end(w);
}

typedef struct {
    long long *sz;
    int ns, samples, warmup, rounds, osu;
    long long iters_opt, bwit_opt, osu_n;
    unsigned modes;
} p2p_cfg_t;

/* The expected duration of run_pair, from a probe before it (the pair's two ranks):
 * each mode's sample of 3 repetitions at 0 B and at the largest size (at most
 * PROBE_MAX; the time per byte extrapolated linearly beyond), after one repetition
 * each; every size then costs its samples' and warm-up's repetitions, and the OSU
 * reference loops theirs, at the time per repetition interpolated to the size. */
#define PROBE_MAX (1LL << 20)
static double expected_duration(pair_t *p, const p2p_cfg_t *c)
{
    long long maxs = c->sz[c->ns - 1], probe = maxs < PROBE_MAX ? maxs : PROBE_MAX;
    double t0[NMODE] = {0}, t1[NMODE] = {0};
    for (int m = 0; m < NMODE; m++) {
        if (!(c->modes & (1u << m))) continue;
        int bwmode = m == M_BW || m == M_BIBW;
        long long lo = bwmode ? (probe < 1 ? probe : 1) : 0;
        sample(p, m, lo, 1);
        t0[m] = sample(p, m, lo, 3) / 3;
        t1[m] = probe > lo ? sample(p, m, probe, 3) / 3 : t0[m];
    }
    double total = 0;
    for (int i = 0; i < c->ns; i++) {
        long long s = c->sz[i];
        int iters = (int)(c->iters_opt ? c->iters_opt : s <= 8192 ? 100 : s <= 262144 ? 20 : 5);
        int bwit = (int)(c->bwit_opt ? c->bwit_opt : s <= 8192 ? 4 : s <= 262144 ? 2 : 1);
        int big = s > 8192;
        long long osu_n = c->osu_n;
        long long li = big ? (osu_n / 10 ? osu_n / 10 : 1) : osu_n, ls = li / 100 ? li / 100 : 1;
        long long bi = big ? (osu_n / 500 ? osu_n / 500 : 1) : (osu_n / 100 ? osu_n / 100 : 1);
        long long bs = bi / 10 ? bi / 10 : 1;
        for (int m = 0; m < NMODE; m++) {
            if (!(c->modes & (1u << m))) continue;
            int bwmode = m == M_BW || m == M_BIBW;
            if (bwmode && s == 0) continue;
            double t = t0[m] + (probe > 0 ? (t1[m] - t0[m]) * (double)s / (double)probe : 0);
            if (t < t0[m]) t = t0[m];
            int it = bwmode ? bwit : iters;
            double reps = (double)c->samples * it + (c->warmup ? (bwmode ? (c->warmup + p->window - 1) / p->window : c->warmup) : 0);
            total += reps * t;
            if (c->osu && m == M_LAT) total += c->rounds * (double)(li + ls) * t;
            if (c->osu && m == M_BW) total += c->rounds * (double)(bi + bs) * t;
        }
    }
    return total;
}

/* Every size and mode between the ranks p->a and p->b (collective over
 * MPI_COMM_WORLD); "results" and "analysis" go into the current object of out
 * on rank 0; lat_med / bw_med (3 x ns) get the medians, then the low and the high
 * ends of their 95 % intervals, on every rank.  Returns errors. */
static long run_pair(ml_json *out, pair_t *p, const p2p_cfg_t *c, double *lat_med, double *bw_med)
{
    const long long *sz = c->sz;
    int ns = c->ns, samples = c->samples, warmup = c->warmup, rounds = c->rounds, osu = c->osu;
    long long iters_opt = c->iters_opt, bwit_opt = c->bwit_opt, osu_n = c->osu_n;
    unsigned modes = c->modes;
    p->role = ml_rank == p->a ? 0 : ml_rank == p->b ? 1 : -1;
    p->other = p->role == 0 ? p->b : p->a;
    long long maxs = sz[ns - 1];
    p->sbuf = p->rbuf = NULL;
    if (p->role >= 0) {
        p->sbuf = ml_alloc((size_t)maxs);
        p->rbuf = ml_alloc((size_t)maxs);
    }
    MPI_Comm_split(MPI_COMM_WORLD, p->role >= 0 ? 0 : MPI_UNDEFINED, p->role, &p->comm);

    double expected = p->role >= 0 ? expected_duration(p, c) : 0;
    if (p->role == 0) ml_announce("p2p", expected, maxs < PROBE_MAX ? maxs : PROBE_MAX);
    ml_json *w = ml_json_new();      /* built on rank a, shipped to rank 0 */
    double *x = malloc((size_t)samples * sizeof *x), *xo = malloc((size_t)rounds * sizeof *xo);
    long errors = 0;
    ml_json_arr(w, NULL);
    for (int i = 0; i < ns; i++) {
        long long s = sz[i];
        int iters = (int)(iters_opt ? iters_opt : s <= 8192 ? 100 : s <= 262144 ? 20 : 5);
        int bwit = (int)(bwit_opt ? bwit_opt : s <= 8192 ? 4 : s <= 262144 ? 2 : 1);
        unsigned seed = (unsigned)(2 * i + p->role + 1);
        for (int e = 0; e < 3; e++) lat_med[e * ns + i] = bw_med[e * ns + i] = NAN;
        MPI_Barrier(MPI_COMM_WORLD);
        if (p->role >= 0) {
            ml_fill(p->sbuf, (size_t)s, 0, seed);
            memset(p->rbuf, 0, (size_t)s);
        }
        ml_json_obj(w, NULL);
        ml_json_int(w, "size", s);
        ml_json_int(w, "iters", iters);
        ml_json_int(w, "bw_iters", bwit);
        int big = s > 8192;
        int li = (int)(big ? (osu_n / 10 ? osu_n / 10 : 1) : osu_n), ls = li / 100 ? li / 100 : 1;
        int bi = (int)(big ? (osu_n / 500 ? osu_n / 500 : 1) : (osu_n / 100 ? osu_n / 100 : 1));
        int bs = bi / 10 ? bi / 10 : 1;
        for (int m = 0; m < NMODE && p->role >= 0; m++) {
            if (!(modes & (1u << m))) continue;
            int bwmode = m == M_BW || m == M_BIBW;
            if (bwmode && s == 0) { ml_json_null(w, mode_keys[m]); continue; }
            int it = bwmode ? bwit : iters;
            int withosu = osu && (m == M_LAT || m == M_BW);
            if (warmup) sample(p, m, s, bwmode ? (warmup + p->window - 1) / p->window : warmup);
            /* our samples and the OSU loop alternate in `rounds` chunks */
            for (int r = 0, k = 0; r < rounds; r++) {
                int upto = (int)((long)samples * (r + 1) / rounds);
                for (; k < upto; k++) {
                    double t = sample(p, m, s, it);
                    x[k] = m == M_LAT ? t / (2.0 * it) : m == M_PING ? t / it
                         : (double)s * p->window * it * (m == M_BIBW ? 2 : 1) / t;
                }
                if (withosu && m == M_LAT) xo[r] = osu_latency(p, s, li, ls);
                if (withosu && m == M_BW) xo[r] = osu_bw(p, s, bi, bs);
            }
            /* rank b receives in every mode; rank a in all but "bw" */
            if (!(m == M_BW && p->role == 0)) {
                size_t bad = ml_check(p->rbuf, (size_t)s, 0, (unsigned)(2 * i + (1 - p->role) + 1));
                if (bad) {
                    fprintf(stderr, "mpilens-bench: p2p %s size %lld: %zu wrong bytes on rank %d\n",
                            mode_names[m], s, bad, ml_rank);
                    errors++;
                }
                memset(p->rbuf, 0, (size_t)s);
            }
            ml_json_stats(w, mode_keys[m], x, samples, 1.0);
            ml_stats st;
            ml_stats_compute(x, samples, &st);
            if (m == M_LAT) { lat_med[i] = st.median; lat_med[ns + i] = st.ci_lo; lat_med[2 * ns + i] = st.ci_hi; }
            if (m == M_BW) { bw_med[i] = st.median; bw_med[ns + i] = st.ci_lo; bw_med[2 * ns + i] = st.ci_hi; }
            if (withosu) {
                double om = ml_median(xo, rounds);
                char key[32];
                snprintf(key, sizeof key, "osu_%s", m == M_LAT ? "latency" : "bw");
                ml_json_obj(w, key);
                ml_json_num(w, m == M_LAT ? "latency_s" : "bw_Bps", om);
                ml_json_arr(w, "runs");
                for (int r = 0; r < rounds; r++) ml_json_num(w, NULL, xo[r]);
                ml_json_end(w);
                ml_json_int(w, "iters", m == M_LAT ? li : bi);
                ml_json_int(w, "skip", m == M_LAT ? ls : bs);
                ml_json_num(w, "ours_vs_osu_pct", 100.0 * (st.median / om - 1.0));
                ml_json_end(w);
            }
        }
        ml_json_end(w);
        ml_progress(i + 1, ns);
    }
    ml_json_end(w);
    ml_json_ship(out, "results", w, p->a);
    ml_json *cr = ml_json_new();
    ml_json_obj(cr, NULL);
    crossovers(cr, sz, ns, lat_med, bw_med);
    ml_json_end(cr);
    ml_json_ship(out, "analysis", cr, p->a);
    ml_json_free(cr);
    ml_json_free(w);
    MPI_Bcast(&expected, 1, MPI_DOUBLE, p->a, MPI_COMM_WORLD);
    if (ml_rank == 0) ml_json_num(out, "expected_s", expected);  /* beside results */
    MPI_Bcast(lat_med, 3 * ns, MPI_DOUBLE, p->a, MPI_COMM_WORLD);
    MPI_Bcast(bw_med, 3 * ns, MPI_DOUBLE, p->a, MPI_COMM_WORLD);
    free(x); free(xo);
    free(p->sbuf); free(p->rbuf);
    if (p->comm != MPI_COMM_NULL) MPI_Comm_free(&p->comm);
    return errors;
}

enum { C_INTRA = ML_PAIR_INTRA, C_INTER = ML_PAIR_INTER, NCLASS = ML_NPAIR };
static const char *const *const class_names = ml_pair_names;

/* The class faster at each size and the sizes where that changes (seed 001 2.2.2:
 * where shared memory stops winning), by latency and by bandwidth.  A class wins at
 * a size only when its 95 % interval lies wholly on the better side of the other's
 * (sizes where the intervals overlap decide nothing, "faster" is null there); a
 * crossover is claimed where the winner changes between two decided sizes. */
/* The class better at size i beyond both intervals (bandwidth: higher; latency:
 * lower), -1 when the intervals overlap or a value is missing. */
static int decided(double *const v[NCLASS], int ns, int i, int higher_better)
{
    double a_lo = v[C_INTRA][ns + i], a_hi = v[C_INTRA][2 * ns + i];
    double b_lo = v[C_INTER][ns + i], b_hi = v[C_INTER][2 * ns + i];
    if (!isfinite(a_lo) || !isfinite(a_hi) || !isfinite(b_lo) || !isfinite(b_hi)) return -1;
    if (higher_better ? b_lo > a_hi : b_hi < a_lo) return C_INTER;
    if (higher_better ? a_lo > b_hi : a_hi < b_lo) return C_INTRA;
    return -1;
}

static void compare_classes(ml_json *out, const p2p_cfg_t *c, double *const lat[NCLASS],
                            double *const bw[NCLASS])
{
    ml_json_arr(out, "comparison");
    for (int i = 0; i < c->ns; i++) {
        ml_json_obj(out, NULL);
        ml_json_int(out, "size", c->sz[i]);
        ml_json_num(out, "latency_inter_over_intra", lat[C_INTER][i] / lat[C_INTRA][i]);
        ml_json_num(out, "bw_inter_over_intra", bw[C_INTER][i] / bw[C_INTRA][i]);
        for (int k = 0; k < 2; k++) {
            int win = decided(k ? bw : lat, c->ns, i, k);
            if (win < 0) ml_json_null(out, k ? "faster_bw" : "faster_latency");
            else ml_json_str(out, k ? "faster_bw" : "faster_latency", class_names[win]);
        }
        ml_json_end(out);
    }
    ml_json_end(out);
    ml_json_arr(out, "crossover_sizes");
    for (int k = 0; k < 2; k++) {
        double *const *v = k ? bw : lat;
        int prev = -1;
        for (int i = 0; i < c->ns; i++) {
            int win = decided(v, c->ns, i, k);
            if (win < 0) continue;
            int inter_wins = win == C_INTER;
            if (prev >= 0 && inter_wins != prev) {
                ml_json_obj(out, NULL);
                ml_json_int(out, "size", c->sz[i]);
                ml_json_str(out, "evidence", k ? "bandwidth" : "latency");
                ml_json_str(out, "from", class_names[prev]);
                ml_json_str(out, "to", class_names[inter_wins]);
                ml_json_end(out);
            }
            prev = inter_wins;
        }
    }
    ml_json_end(out);
}

int ml_p2p(ml_json *out, int argc, char **argv)
{
    (void)argc; (void)argv;
    if (ml_size < 2) ml_usage("p2p needs at least 2 ranks (got %d)", ml_size);
    static pair_t p;
    unsigned classes = ml_opt_names("pairs", class_names, NCLASS, 0);
    if (classes && ml_opt_given("ranks")) ml_usage("--pairs and --ranks both choose the ranks: give one of them");
    parse_ranks(&p.a, &p.b);
    p2p_cfg_t c;
    c.ns = ml_opt_sizes(0, 4 << 20, 0, 1LL << 30, &c.sz);
    c.samples = (int)ml_opt_int("samples", 20, 1, 1000000);
    c.iters_opt = ml_opt_int("iters", 0, 1, 100000000);
    c.bwit_opt = ml_opt_int("bw-iters", 0, 1, 100000000);
    c.warmup = (int)ml_opt_int("warmup", 10, 0, 100000000);
    p.window = (int)ml_opt_int("window", 64, 1, 4096);
    c.modes = ml_opt_names("modes", mode_names, NMODE, (1u << NMODE) - 1);
    static const char *const refs[] = {"none", "osu"};
    unsigned ref = ml_opt_names("reference", refs, 2, 1);
    c.osu = (ref & 2) != 0;
    c.osu_n = ml_opt_int("osu-iters", 10000, 1, 100000000);
    c.rounds = (int)ml_opt_int("osu-rounds", 5, 1, 1000);
    if (!c.osu) c.rounds = 1;
    if (c.rounds > c.samples)
        ml_usage("--osu-rounds %d exceeds --samples %d (each round holds our samples too)",
                 c.rounds, c.samples);
    ml_opts_finish();
    int partner[NCLASS];
    if (classes) {
        ml_pair_partners(classes, partner);
        p.a = 0;
        p.b = partner[(classes & 1u << C_INTRA) ? C_INTRA : C_INTER];
    }

    if (ml_rank == 0) {
        ml_json_obj(out, "options");
        ml_json_pair_options(out, p.a, p.b, classes);
        ml_json_int(out, "min_size", c.sz[0]);
        ml_json_int(out, "max_size", c.sz[c.ns - 1]);
        ml_json_int(out, "samples", c.samples);
        ml_json_int(out, "warmup", c.warmup);
        ml_json_int(out, "window", p.window);
        ml_json_arr(out, "modes");
        for (int m = 0; m < NMODE; m++)
            if (c.modes & (1u << m)) ml_json_str(out, NULL, mode_names[m]);
        ml_json_end(out);
        ml_json_str(out, "reference", c.osu ? "osu" : "none");
        ml_json_int(out, "osu_rounds", c.rounds);
        ml_json_int(out, "osu_iters", c.osu_n);
        ml_json_end(out);
    }

    double *lat[NCLASS], *bw[NCLASS];
    for (int k = 0; k < NCLASS; k++) {
        lat[k] = malloc(3 * (size_t)c.ns * sizeof **lat);  /* medians, interval ends */
        bw[k] = malloc(3 * (size_t)c.ns * sizeof **bw);
    }
    long errors = 0;
    if (!classes) {
        errors = run_pair(out, &p, &c, lat[0], bw[0]);
    } else {
        /* "results"/"analysis" of the first pair as without --pairs, then every pair */
        if (ml_rank == 0) ml_json_arr(out, "pairs");
        for (int k = 0; k < NCLASS; k++) {
            if (!(classes & 1u << k)) continue;
            p.a = 0;
            p.b = partner[k];
            if (ml_rank == 0) {
                ml_json_obj(out, NULL);
                ml_json_str(out, "class", class_names[k]);
                ml_json_arr(out, "ranks");
                ml_json_int(out, NULL, p.a);
                ml_json_int(out, NULL, p.b);
                ml_json_end(out);
            }
            errors += run_pair(out, &p, &c, lat[k], bw[k]);
            if (ml_rank == 0) ml_json_end(out);
        }
        if (ml_rank == 0) {
            ml_json_end(out);
            if (classes == (1u << NCLASS) - 1) {
                ml_json_obj(out, "classes");
                compare_classes(out, &c, lat, bw);
                ml_json_end(out);
            }
        }
    }
    for (int k = 0; k < NCLASS; k++) {
        free(lat[k]);
        free(bw[k]);
    }
    free(c.sz);
    return (int)errors;
}
