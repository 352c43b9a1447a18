/* logp: P-LogP parameters (Kielmann et al.) between ranks 0 and 1:
 *   RTT(m)  ping-pong round trip;
 *   os(m)   time of MPI_Send at the sender (receiver acknowledges each message);
 *   or(m)   time of MPI_Recv at the receiver after waiting longer than RTT(m),
 *           so the message has already arrived;
 *   g(m)    gap per message in a train of back-to-back sends:
 *           (T(n) - T(1)) / (n - 1), where T(k) is a train of k sends ended by
 *           a zero-byte acknowledgement; T(n) and T(1) are measured one after
 *           the other in every sample, so what they share (latency, the
 *           acknowledgement, the drift of a noisy machine) cancels;
 *   L       = RTT(0)/2 - g(0)  (Kielmann: RTT(0) = 2 (L + g(0))).
 * A median g(m) not above the clock's resolution (zero or negative: the
 * noise of a busy machine exceeded the train's length) is not a
 * measurement: the model then holds os(m), the least time per message of a
 * train of blocking sends, and lists the entry under "not_measured"; so does
 * an L that RTT(0)/2 - g(0) leaves at or below the resolution.
 * Optionally writes the network model JSON (--model FILE) read by other parts. */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_RTT = 11, T_OS, T_OR, T_G, T_ACK, T_DATA, T_HOST };

static void spin(double secs)
{
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < secs) {}
}

/* The network model from the medians (med[q * ns + i]: q = rtt, os, or, g).
 * Entries that are bounds rather than measurements are listed in
 * "not_measured" (parameter, size, raw median, value used, reason). */
ml_json *ml_logp_model(const double *med, const long long *sz, int ns, double res)
{
    return ml_logp_model_on(med, sz, ns, res, NULL, 0);
}

/* ... with "hosts": the distinct hosts of the measuring pair (mpilens advise checks that
 * a model describes the machine a profile ran on) */
ml_json *ml_logp_model_on(const double *med, const long long *sz, int ns, double res,
                          const char *const *hosts, int nhosts)
{
    const double *rtt = med, *os = med + ns, *orr = med + 2 * ns, *graw = med + 3 * ns;
    double *g = malloc((size_t)ns * sizeof *g);
    int *bound = calloc((size_t)ns, sizeof *bound);
    int nbound = 0;
    for (int i = 0; i < ns; i++) {
        g[i] = graw[i];
        if (!(graw[i] > res)) {
            g[i] = os[i] > res ? os[i] : res;
            bound[i] = 1;
            nbound++;
        }
    }
    double Lraw = rtt[0] / 2 - g[0];
    int Lbound = !(Lraw > res);
    ml_json *m = ml_json_new();
    ml_json_obj(m, NULL);
    ml_json_str(m, "format", "mpilens-netmodel");
    ml_json_int(m, "version", 1);
    ml_json_str(m, "model", "plogp");
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = 0;
    ml_json_str(m, "mpi_library", lib);
    if (nhosts > 0) {
        ml_json_arr(m, "hosts");
        for (int h = 0; h < nhosts; h++)
            if (h == 0 || strcmp(hosts[h], hosts[0]) != 0) ml_json_str(m, NULL, hosts[h]);
        ml_json_end(m);
    }
    ml_json_num(m, "L_s", Lbound ? rtt[0] / 2 : Lraw);
    ml_json_num(m, "L_raw_s", Lraw);
    ml_json_bool(m, "L_clamped", Lbound);
    ml_json_arr(m, "sizes");
    for (int i = 0; i < ns; i++) ml_json_int(m, NULL, sz[i]);
    ml_json_end(m);
    const char *keys[5] = {"rtt_s", "os_s", "or_s", "g_s", "g_raw_s"};
    const double *arrs[5] = {rtt, os, orr, g, graw};
    for (int q = 0; q < 5; q++) {
        ml_json_arr(m, keys[q]);
        for (int i = 0; i < ns; i++) ml_json_num(m, NULL, arrs[q][i]);
        ml_json_end(m);
    }
    ml_json_int(m, "g_clamped", nbound);
    ml_json_num(m, "clock_resolution_s", res);
    ml_json_arr(m, "not_measured");
    for (int i = 0; i < ns; i++) {
        if (!bound[i]) continue;
        ml_json_obj(m, NULL);
        ml_json_str(m, "param", "g_s");
        ml_json_int(m, "size", sz[i]);
        ml_json_num(m, "raw_s", graw[i]);
        ml_json_num(m, "value_s", g[i]);
        ml_json_str(m, "reason", "train median not above the clock resolution: os(m), the least "
                                 "time per message of a train of blocking sends, is used");
        ml_json_end(m);
    }
    if (Lbound) {
        ml_json_obj(m, NULL);
        ml_json_str(m, "param", "L_s");
        ml_json_int(m, "size", 0);
        ml_json_num(m, "raw_s", Lraw);
        ml_json_num(m, "value_s", rtt[0] / 2);
        ml_json_str(m, "reason", "RTT(0)/2 - g(0) not above the clock resolution: RTT(0)/2 is used");
        ml_json_end(m);
    }
    ml_json_end(m);
    ml_json_end(m);
    free(g);
    free(bound);
    return m;
}

typedef struct { long long *sz; int ns, samples, reps, train; } logp_cfg_t;

/* The host names of rank 0 (hosts[0]) and rank b (hosts[1]), at rank 0: the model's
 * "hosts".  Collective over ranks 0 and b only. */
/* One round trip of n bytes between this rank (role 0 starts) and o. */
static void round_trip(int role, unsigned char *buf, int n, int o)
{
    if (role == 0) {
        MPI_Send(buf, n, MPI_BYTE, o, T_RTT, MPI_COMM_WORLD);
        MPI_Recv(buf, n, MPI_BYTE, o, T_RTT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, n, MPI_BYTE, o, T_RTT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, n, MPI_BYTE, o, T_RTT, MPI_COMM_WORLD);
    }
}

static void pair_hosts(int b, char hosts[2][MPI_MAX_PROCESSOR_NAME])
{
    int len;
    memset(hosts, 0, 2 * MPI_MAX_PROCESSOR_NAME);
    if (ml_rank == 0) MPI_Get_processor_name(hosts[0], &len);
    if (ml_rank == b) {
        MPI_Get_processor_name(hosts[1], &len);
        MPI_Send(hosts[1], MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, T_HOST, MPI_COMM_WORLD);
    }
    if (ml_rank == 0)
        MPI_Recv(hosts[1], MPI_MAX_PROCESSOR_NAME, MPI_CHAR, b, T_HOST, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}

static ml_json *pair_model(const double *med, const logp_cfg_t *c,
                           char hosts[2][MPI_MAX_PROCESSOR_NAME])
{
    const char *h[2] = {hosts[0], hosts[1]};
    return ml_logp_model_on(med, c->sz, c->ns, ml_clock_resolution(), h, 2);
}

/* The P-LogP measurements between rank 0 and rank b, every size: their statistics
 * appended to the array open in out (rank 0), their medians in med (rank 0:
 * med[q * ns + i], q = rtt, os, or, g).  Collective over MPI_COMM_WORLD. */
static long measure_pair(ml_json *out, int b, const logp_cfg_t *c, double *med)
{
    const long long *sz = c->sz;
    int ns = c->ns, samples = c->samples, reps = c->reps, train = c->train;
    int me = ml_rank, role = me == 0 ? 0 : me == b ? 1 : -1, o = role == 0 ? b : 0;
    long long maxs = sz[ns - 1];
    unsigned char *buf = role >= 0 ? ml_alloc((size_t)maxs) : NULL;
    double *x = malloc(4 * (size_t)samples * sizeof *x);   /* rtt, os, or, g */
    long errors = 0;
    char ack = 0;
    for (int i = 0; i < ns; i++) {
        int n = (int)sz[i];
        unsigned seed = (unsigned)i + 1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (role < 0) { ml_progress(i + 1, ns); continue; }
        if (role == 0) ml_fill(buf, (size_t)n, 0, seed);
        /* warm-up + RTT */
        for (int j = -1; j < samples; j++) {
            double t0 = MPI_Wtime();
            for (int k = 0; k < reps; k++) {
                round_trip(role, buf, n, o);
            }
            if (j >= 0) x[j] = (MPI_Wtime() - t0) / reps;
        }
        double rtt = ml_median(x, samples);
        double wait = 1.5 * rtt + 5e-6;
        /* os(m) at rank 0, or(m) at rank 1 */
        for (int j = 0; j < samples; j++) {
            double sos = 0, sor = 0;
            for (int k = 0; k < reps; k++) {
                if (role == 0) {
                    double t0 = MPI_Wtime();
                    MPI_Send(buf, n, MPI_BYTE, o, T_OS, MPI_COMM_WORLD);
                    sos += MPI_Wtime() - t0;
                    MPI_Recv(&ack, 0, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, o, T_OR, MPI_COMM_WORLD);
                    MPI_Recv(&ack, 0, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, n, MPI_BYTE, o, T_OS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(&ack, 0, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD);
                    spin(wait);
                    double t0 = MPI_Wtime();
                    MPI_Recv(buf, n, MPI_BYTE, o, T_OR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    sor += MPI_Wtime() - t0;
                    MPI_Send(&ack, 0, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD);
                }
            }
            x[samples + j] = sos / reps;
            x[2 * samples + j] = sor / reps;
        }
        if (role == 1 && n && ml_check(buf, (size_t)n, 0, seed)) errors++;
        /* g(m): a train of `train` sends, then a train of one, each ended by an acknowledgement */
        for (int j = 0; j < samples; j++) {
            if (role == 0) {
                double t0 = MPI_Wtime();
                for (int k = 0; k < train; k++) MPI_Send(buf, n, MPI_BYTE, o, T_G, MPI_COMM_WORLD);
                MPI_Recv(&ack, 0, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t1 = MPI_Wtime();
                MPI_Send(buf, n, MPI_BYTE, o, T_G, MPI_COMM_WORLD);
                MPI_Recv(&ack, 0, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t2 = MPI_Wtime();
                x[3 * samples + j] = ((t1 - t0) - (t2 - t1)) / (train - 1);
            } else {
                if (n) memset(buf, 0, (size_t)n);
                for (int k = 0; k < train + 1; k++) {
                    MPI_Recv(buf, n, MPI_BYTE, o, T_G, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (k == train - 1 || k == train) MPI_Send(&ack, 0, MPI_BYTE, o, T_ACK, MPI_COMM_WORLD);
                }
            }
        }
        if (role == 1 && n && ml_check(buf, (size_t)n, 0, seed)) errors++;
        if (role == 1) MPI_Send(x + 2 * samples, samples, MPI_DOUBLE, 0, T_DATA, MPI_COMM_WORLD);
        else {
            MPI_Recv(x + 2 * samples, samples, MPI_DOUBLE, b, T_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int q = 0; q < 4; q++) med[q * ns + i] = ml_median(x + q * samples, samples);
            ml_json_obj(out, NULL);
            ml_json_int(out, "size", sz[i]);
            ml_json_stats(out, "rtt_s", x, samples, 1.0);
            ml_json_stats(out, "os_s", x + samples, samples, 1.0);
            ml_json_stats(out, "or_s", x + 2 * samples, samples, 1.0);
            ml_json_stats(out, "g_s", x + 3 * samples, samples, 1.0);
            ml_json_end(out);
        }
        ml_progress(i + 1, ns);
    }
    free(buf);
    free(x);
    return errors;
}

/* The expected duration of measure_pair for every size, from a probe before it:
 * ping-pong round trips at 0 B (the mean of 30) and at the largest size (at most
 * PROBE_MAX, the time per byte extrapolated linearly beyond; the mean of 10), after a
 * warm-up each: the mean, not the least, so that a busy machine's waits count;
 * the messages each size sends (RTT, os/or, trains, acknowledgements) and the
 * receiver's waits then cost what the probe's one-way time says.  Collective over
 * MPI_COMM_WORLD; the estimate is rank 0's (the other ranks get -1). */
#define PROBE_MAX (1LL << 20)
static double expected_duration(int b, const logp_cfg_t *c)
{
    int me = ml_rank, role = me == 0 ? 0 : me == b ? 1 : -1, o = role == 0 ? b : 0;
    long long maxs = c->sz[c->ns - 1], probe = maxs < PROBE_MAX ? maxs : PROBE_MAX;
    double rt[2] = {0, 0};
    MPI_Barrier(MPI_COMM_WORLD);
    if (role >= 0) {
        unsigned char *buf = ml_alloc((size_t)(probe ? probe : 1));
        memset(buf, 0, (size_t)(probe ? probe : 1));
        for (int k = 0; k < 2; k++) {
            int n = (int)(k ? probe : 0), reps = k ? 10 : 30;
            double t0 = 0;
            for (int j = -1; j < reps; j++) {   /* one warm-up, then the mean */
                if (j == 0) t0 = MPI_Wtime();
                round_trip(role, buf, n, o);
            }
            rt[k] = (MPI_Wtime() - t0) / reps;
        }
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (role != 0) return -1;
    double one0 = rt[0] / 2, per_byte = probe ? (rt[1] - rt[0]) / 2 / (double)probe : 0;
    if (per_byte < 0) per_byte = 0;
    double total = 0, S = c->samples, R = c->reps, T = c->train;
    for (int i = 0; i < c->ns; i++) {
        double t = one0 + per_byte * (double)c->sz[i];
        double msgs = 2 * (S + 1) * R + 2 * S * R + S * (T + 1);   /* of this size */
        double acks = 2 * S * R + 2 * S;                           /* of 0 bytes */
        total += msgs * t + acks * one0 + S * R * (3 * t + 5e-6);  /* + or's waits */
    }
    return total;
}

/* --pairs intra,inter: the model of each class under "classes"; its top-level
 * parameters are the inter-node class's (the network), else the one measured.
 * Returns malloc'd JSON text. */
static char *classes_model(ml_json *const m[ML_NPAIR], unsigned classes)
{
    int top = (classes & 1u << ML_PAIR_INTER) ? ML_PAIR_INTER : ML_PAIR_INTRA;
    const char *t = ml_json_text(m[top]);
    size_t n = strlen(t), total = n + 64;
    while (n && t[n - 1] != '}') n--; /* the closing brace of the top-level object */
    for (int k = 0; k < ML_NPAIR; k++)
        if (classes & 1u << k) total += strlen(ml_json_text(m[k]));
    char *out = malloc(total);
    size_t at = (size_t)snprintf(out, total, "%.*s,\"classes\":{", (int)(n ? n - 1 : 0), t);
    for (int k = 0, first = 1; k < ML_NPAIR; k++) {
        if (!(classes & 1u << k)) continue;
        at += (size_t)snprintf(out + at, total - at, "%s\"%s\":%s", first ? "" : ",", ml_pair_names[k],
                               ml_json_text(m[k]));
        first = 0;
    }
    snprintf(out + at, total - at, "}}");
    return out;
}

int ml_logp(ml_json *out, int argc, char **argv)
{
    (void)argc; (void)argv;
    if (ml_size < 2) ml_usage("logp needs at least 2 ranks (got %d)", ml_size);
    logp_cfg_t c;
    c.ns = ml_opt_sizes(0, 1 << 20, 0, 1LL << 28, &c.sz);
    c.samples = (int)ml_opt_int("samples", 20, 1, 1000000);
    c.reps = (int)ml_opt_int("iters", 10, 1, 1000000);
    c.train = (int)ml_opt_int("train", 64, 2, 1000000);
    const char *model = ml_opt_str("model", NULL);
    unsigned classes = ml_opt_names("pairs", ml_pair_names, ML_NPAIR, 0);
    ml_opts_finish();
    int err = 0;                /* before measuring: a bad path fails fast */
    if (ml_rank == 0 && model) err = ml_check_writable(model);
    MPI_Bcast(&err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (err) ml_usage("--model '%s': cannot write this file: %s", model, strerror(err));
    int partner[ML_NPAIR] = {1, 1};
    if (classes) ml_pair_partners(classes, partner);
    int first = classes ? ((classes & 1u << ML_PAIR_INTRA) ? ML_PAIR_INTRA : ML_PAIR_INTER) : 0;
    double *med = malloc(4 * (size_t)c.ns * sizeof *med);
    long errors = 0;
    double expected = 0;   /* every pair measured, from a probe of each */
    for (int k = 0; k < (classes ? ML_NPAIR : 1); k++)
        if (!classes || (classes & 1u << k)) expected += expected_duration(classes ? partner[k] : 1, &c);
    long long maxs = c.sz[c.ns - 1];
    if (ml_rank == 0) ml_announce("logp", expected, maxs < PROBE_MAX ? maxs : PROBE_MAX);
    if (ml_rank == 0) {
        ml_json_obj(out, "options");
        ml_json_pair_options(out, 0, partner[first], classes);
        ml_json_int(out, "min_size", c.sz[0]);
        ml_json_int(out, "max_size", c.sz[c.ns - 1]);
        ml_json_int(out, "samples", c.samples);
        ml_json_int(out, "iters", c.reps);
        ml_json_int(out, "train", c.train);
        ml_json_num(out, "expected_s", expected);
        ml_json_end(out);
    }
    char *m = NULL;
    char hosts[2][MPI_MAX_PROCESSOR_NAME];
    if (!classes) {
        if (ml_rank == 0) ml_json_arr(out, "results");
        pair_hosts(1, hosts);
        errors = measure_pair(out, 1, &c, med);
        if (ml_rank == 0) {
            ml_json_end(out);
            ml_json *one = pair_model(med, &c, hosts);
            m = strdup(ml_json_text(one));
            ml_json_free(one);
        }
    } else {
        ml_json *mk[ML_NPAIR] = {NULL, NULL};
        if (ml_rank == 0) ml_json_arr(out, "pairs");
        for (int k = 0; k < ML_NPAIR; k++) {
            if (!(classes & 1u << k)) continue;
            if (ml_rank == 0) {
                ml_json_obj(out, NULL);
                ml_json_str(out, "class", ml_pair_names[k]);
                ml_json_arr(out, "ranks");
                ml_json_int(out, NULL, 0);
                ml_json_int(out, NULL, partner[k]);
                ml_json_end(out);
                ml_json_arr(out, "results");
            }
            pair_hosts(partner[k], hosts);
            errors += measure_pair(out, partner[k], &c, med);
            if (ml_rank == 0) {
                ml_json_end(out);
                mk[k] = pair_model(med, &c, hosts);
                ml_json_end(out);
            }
        }
        if (ml_rank == 0) {
            ml_json_end(out);
            m = classes_model(mk, classes);
        }
        for (int k = 0; k < ML_NPAIR; k++) ml_json_free(mk[k]);
    }
    if (ml_rank == 0) {
        ml_json_raw(out, "model", m);
        if (model) err = ml_write_file_atomic(model, m);
        free(m);
    }
    MPI_Bcast(&err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (err) ml_usage("--model '%s': cannot write this file: %s", model, strerror(err));
    free(med); free(c.sz);
    return (int)errors;
}
