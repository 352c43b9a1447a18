/* coll: collectives timed per iteration as the slowest rank's finish after a
 * clock-offset-corrected common start (sync.c); results validated. */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLGATHERV,
       ALLTOALL, ALLTOALLV, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN, NOP };
static const char *const op_names[NOP] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather",
    "allgatherv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan"};

static int is_reduction(int op)
{
    return op == REDUCE || op == ALLREDUCE || op == REDUCE_SCATTER ||
           op == REDUCE_SCATTER_BLOCK || op == SCAN;
}

typedef struct {
    MPI_Comm comm;
    int me, np, root;
    long long s;                 /* bytes per rank block */
    int cnt;                     /* unsigned ints per block for reductions */
    unsigned char *sb, *rb;
    int *sc, *sd, *rc, *rd;      /* v-variant counts/displacements */
} ctx_t;

static int vcount(long long s, int a, int b) { return (int)(s - ((a + b) % 2) * (s / 2)); }

static void prepare(ctx_t *c, int op, unsigned seed)
{
    long long s = c->s;
    int P = c->np, me = c->me;
    memset(c->rb, 0, (size_t)(P * s));
    if (is_reduction(op)) {
        unsigned *v = (unsigned *)c->sb;
        long n = op == REDUCE_SCATTER || op == REDUCE_SCATTER_BLOCK ? (long)P * c->cnt : c->cnt;
        for (long i = 0; i < n; i++) v[i] = (unsigned)me + (unsigned)i + seed;
        for (int r = 0; r < P; r++) c->rc[r] = c->cnt;
        return;
    }
    switch (op) {
    case BCAST: if (me == c->root) ml_fill(c->rb, (size_t)s, 0, seed); break;
    case GATHER: case ALLGATHER: ml_fill(c->sb, (size_t)s, (uint64_t)(me * s), seed); break;
    case SCATTER: if (me == c->root) ml_fill(c->sb, (size_t)(P * s), 0, seed); break;
    case ALLGATHERV:
        ml_fill(c->sb, (size_t)vcount(s, me, 0), (uint64_t)(me * s), seed);
        for (int r = 0; r < P; r++) { c->rc[r] = vcount(s, r, 0); c->rd[r] = (int)(r * s); }
        break;
    case ALLTOALL: case ALLTOALLV:
        for (int d = 0; d < P; d++) {
            int n = op == ALLTOALL ? (int)s : vcount(s, me, d);
            ml_fill(c->sb + d * s, (size_t)n, (uint64_t)((me * P + d) * s), seed);
            c->sc[d] = n; c->sd[d] = (int)(d * s);
            c->rc[d] = op == ALLTOALL ? (int)s : vcount(s, d, me); c->rd[d] = (int)(d * s);
        }
        break;
    default: break;
    }
}

static void run(ctx_t *c, int op)
{
    int n = (int)c->s, cnt = c->cnt;
    MPI_Comm cm = c->comm;
    switch (op) {
    case BARRIER: MPI_Barrier(cm); break;
    case BCAST: MPI_Bcast(c->rb, n, MPI_BYTE, c->root, cm); break;
    case REDUCE: MPI_Reduce(c->sb, c->rb, cnt, MPI_UNSIGNED, MPI_SUM, c->root, cm); break;
    case ALLREDUCE: MPI_Allreduce(c->sb, c->rb, cnt, MPI_UNSIGNED, MPI_SUM, cm); break;
    case GATHER: MPI_Gather(c->sb, n, MPI_BYTE, c->rb, n, MPI_BYTE, c->root, cm); break;
    case SCATTER: MPI_Scatter(c->sb, n, MPI_BYTE, c->rb, n, MPI_BYTE, c->root, cm); break;
    case ALLGATHER: MPI_Allgather(c->sb, n, MPI_BYTE, c->rb, n, MPI_BYTE, cm); break;
    case ALLGATHERV:
        MPI_Allgatherv(c->sb, c->rc[c->me], MPI_BYTE, c->rb, c->rc, c->rd, MPI_BYTE, cm);
        break;
    case ALLTOALL: MPI_Alltoall(c->sb, n, MPI_BYTE, c->rb, n, MPI_BYTE, cm); break;
    case ALLTOALLV:
        MPI_Alltoallv(c->sb, c->sc, c->sd, MPI_BYTE, c->rb, c->rc, c->rd, MPI_BYTE, cm);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter(c->sb, c->rb, c->rc, MPI_UNSIGNED, MPI_SUM, cm);
        break;
    case REDUCE_SCATTER_BLOCK:
        MPI_Reduce_scatter_block(c->sb, c->rb, cnt, MPI_UNSIGNED, MPI_SUM, cm);
        break;
    case SCAN: MPI_Scan(c->sb, c->rb, cnt, MPI_UNSIGNED, MPI_SUM, cm); break;
    }
}

/* number of wrong elements/bytes in this rank's result */
static long check(const ctx_t *c, int op, unsigned seed)
{
    long long s = c->s;
    int P = c->np, me = c->me;
    const unsigned *v = (const unsigned *)c->rb;
    unsigned tri = (unsigned)P * (unsigned)(P - 1) / 2;
    long bad = 0;
    switch (op) {
    case BCAST: return (long)ml_check(c->rb, (size_t)s, 0, seed);
    case REDUCE: case ALLREDUCE:
        if (op == REDUCE && me != c->root) return 0;
        for (int i = 0; i < c->cnt; i++) bad += v[i] != (unsigned)P * ((unsigned)i + seed) + tri;
        return bad;
    case REDUCE_SCATTER: case REDUCE_SCATTER_BLOCK:
        for (int k = 0; k < c->cnt; k++)
            bad += v[k] != (unsigned)P * ((unsigned)(me * c->cnt + k) + seed) + tri;
        return bad;
    case SCAN:
        for (int i = 0; i < c->cnt; i++)
            bad += v[i] != (unsigned)(me + 1) * ((unsigned)i + seed) +
                           (unsigned)me * (unsigned)(me + 1) / 2;
        return bad;
    case GATHER: case ALLGATHER:
        if (op == GATHER && me != c->root) return 0;
        return (long)ml_check(c->rb, (size_t)(P * s), 0, seed);
    case SCATTER: return (long)ml_check(c->rb, (size_t)s, (uint64_t)(me * s), seed);
    case ALLGATHERV:
        for (int r = 0; r < P; r++) bad += (long)ml_check(c->rb + r * s, (size_t)c->rc[r],
                                                          (uint64_t)(r * s), seed);
        return bad;
    case ALLTOALL: case ALLTOALLV:
        for (int r = 0; r < P; r++) bad += (long)ml_check(c->rb + r * s, (size_t)c->rc[r],
                                                          (uint64_t)((r * P + me) * s), seed);
        return bad;
    }
    return 0;
}

/* The expected duration of ml_coll's loop, from a probe before it on the largest rank
 * count (MPI_COMM_WORLD's first ranks): one synchronisation set-up timed, then each op's
 * whole sample (prepare, synchronised start, the call, the check) once untimed and
 * PROBE_REPS times timed at its smallest size and at the largest (at most PROBE_MAX; the
 * time per byte extrapolated linearly beyond), the median kept (on a loaded host one of
 * a few samples may take 1000 x the others: a mean of 3 foretold 2,291 s for a run of
 * 11 s).  Each size then costs its warm-up and samples at the time interpolated to the
 * size, plus one set-up; smaller rank counts are costed as the largest.  The slowest
 * rank's figure, on rank 0 (0 elsewhere). */
#define PROBE_MAX (1LL << 20)
#define PROBE_REPS 5
static double probe_sample(ctx_t *c, int op, ml_sync *sy)
{
    double t[PROBE_REPS], tmax;
    for (int j = -1; j < PROBE_REPS; j++) {   /* one untimed first */
        double t0 = MPI_Wtime();
        prepare(c, op, 1);
        ml_sync_wait(sy);
        run(c, op);
        (void)ml_sync_done(sy, MPI_Wtime(), &tmax);
        (void)check(c, op, 1);
        if (j >= 0) t[j] = MPI_Wtime() - t0;
    }
    return ml_median(t, PROBE_REPS);
}

static double expected_duration(ctx_t *c, unsigned ops, const long long *sz, int ns,
                                int samples, int warmup, const int *counts, int nc, int root)
{
    int kmax = 0;
    for (int k = 1; k < nc; k++) if (counts[k] > counts[kmax]) kmax = k;
    int in = ml_rank < counts[kmax];
    MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, ml_rank, &c->comm);
    double total = 0;
    if (in) {
        MPI_Comm_rank(c->comm, &c->me);
        MPI_Comm_size(c->comm, &c->np);
        c->root = root;
        ml_sync sy;
        double t0 = MPI_Wtime();
        ml_sync_init(&sy, c->comm);
        double t_init = MPI_Wtime() - t0;
        for (int o = 0; o < NOP; o++) {
            if (!(ops & (1u << o))) continue;
            int first = -1;
            for (int i = 0; i < ns; i++) {
                int skip = (is_reduction(o) && sz[i] / 4 == 0) || (o == BARRIER && i > 0);
                if (!skip && first < 0) first = i;
            }
            if (first < 0) continue;
            long long lo = sz[first], hi = sz[ns - 1] < PROBE_MAX ? sz[ns - 1] : PROBE_MAX;
            if (hi < lo || o == BARRIER) hi = lo;
            double t_lo, t_hi;
            c->s = lo; c->cnt = (int)(lo / 4);
            t_lo = t_hi = probe_sample(c, o, &sy);
            if (hi > lo) {
                c->s = hi; c->cnt = (int)(hi / 4);
                t_hi = probe_sample(c, o, &sy);
            }
            for (int i = first; i < ns; i++) {
                if ((is_reduction(o) && sz[i] / 4 == 0) || (o == BARRIER && i > 0)) continue;
                double t = hi > lo ? t_lo + (t_hi - t_lo) * (double)(sz[i] - lo) / (double)(hi - lo)
                                   : t_lo;
                if (t < t_lo) t = t_lo;
                total += t_init + (warmup + samples) * t;
            }
        }
        total *= nc;                       /* every rank count, costed as the largest */
        MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_MAX, c->comm);
        MPI_Comm_free(&c->comm);
    }
    return ml_rank == 0 ? total : 0;
}

int ml_coll(ml_json *out, int argc, char **argv)
{
    (void)argc; (void)argv;
    long long *sz;
    int ns = ml_opt_sizes(4, 1 << 20, 0, 1LL << 28, &sz);
    int samples = (int)ml_opt_int("samples", 20, 1, 1000000);
    int warmup = (int)ml_opt_int("warmup", 3, 0, 1000000);
    unsigned ops = ml_opt_names("ops", op_names, NOP, (1u << NOP) - 1);
    int root = (int)ml_opt_int("root", 0, 0, ml_size - 1);
    const char *nr = ml_opt_str("nranks", NULL);
    int counts[64], nc = 0;
    if (nr) {
        char *copy = strdup(nr), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *end;
            long v = strtol(t, &end, 10);
            if (*end || v < 1 || v > ml_size || nc == 64)
                ml_usage("--nranks '%s' is invalid (accepted: comma list of rank counts "
                         "from 1 to %d)", nr, ml_size);
            counts[nc++] = (int)v;
        }
        free(copy);
    } else counts[nc++] = ml_size;
    for (int k = 0; k < nc; k++)
        if (root >= counts[k])
            ml_usage("--root %d is not a rank of a %d-rank run (see --nranks)", root, counts[k]);
    ml_opts_finish();
    long long maxs = sz[ns - 1];
    if (ml_rank == 0) {
        ml_json_obj(out, "options");
        ml_json_int(out, "min_size", sz[0]);
        ml_json_int(out, "max_size", maxs);
        ml_json_int(out, "samples", samples);
        ml_json_int(out, "warmup", warmup);
        ml_json_int(out, "root", root);
        ml_json_arr(out, "ops");
        for (int o = 0; o < NOP; o++)
            if (ops & (1u << o)) ml_json_str(out, NULL, op_names[o]);
        ml_json_end(out);
        ml_json_arr(out, "nranks");
        for (int k = 0; k < nc; k++) ml_json_int(out, NULL, counts[k]);
        ml_json_end(out);
        ml_json_str(out, "timing", "clock-offset-corrected common start (offsets to rank 0 "
                    "by min-RTT ping-pong), time = slowest rank's finish - start");
        ml_json_end(out);
        ml_json_arr(out, "results");
    }
    int nops = 0;
    for (int o = 0; o < NOP; o++) nops += (ops >> o) & 1;
    long total = (long)nc * nops * ns, done = 0, errors = 0;
    ctx_t c = {0};
    c.sb = ml_alloc((size_t)(ml_size * maxs));
    c.rb = ml_alloc((size_t)(ml_size * maxs));
    c.sc = malloc(4 * (size_t)ml_size * sizeof(int));
    c.sd = c.sc + ml_size; c.rc = c.sd + ml_size; c.rd = c.rc + ml_size;
    double *x = malloc((size_t)samples * sizeof *x);
    double *rankmean = malloc((size_t)ml_size * sizeof *rankmean);
    double expected = expected_duration(&c, ops, sz, ns, samples, warmup, counts, nc, root);
    if (ml_rank == 0) ml_announce("coll", expected, maxs < PROBE_MAX ? maxs : PROBE_MAX);
    double started = MPI_Wtime();
    for (int k = 0; k < nc; k++) {
        int in = ml_rank < counts[k];
        MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, ml_rank, &c.comm);
        if (in) {
            MPI_Comm_rank(c.comm, &c.me);
            MPI_Comm_size(c.comm, &c.np);
            c.root = root;
        }
        for (int o = 0; o < NOP; o++) {
            if (!(ops & (1u << o))) continue;
            for (int i = 0; i < ns; i++, done++) {
                c.s = sz[i];
                c.cnt = (int)(sz[i] / 4);
                int skip = (is_reduction(o) && c.cnt == 0) || (o == BARRIER && i > 0);
                if (in && !skip) {
                    ml_sync sy;
                    ml_sync_init(&sy, c.comm);
                    for (int u = 0; u < warmup; u++) { prepare(&c, o, 0); run(&c, o); }
                    double mysum = 0;
                    long bad = 0, late_acc = 0;
                    for (int j = 0; j < samples; j++) {
                        unsigned seed = (unsigned)j + 1;
                        for (int tries = 0;; tries++) {
                            prepare(&c, o, seed);
                            ml_sync_wait(&sy);
                            run(&c, o);
                            double end = MPI_Wtime(), tmax;
                            int ok = ml_sync_done(&sy, end, &tmax);
                            if (ok || tries == 3) {
                                late_acc += !ok;
                                x[j] = tmax;
                                mysum += end - sy.start_local;
                                break;
                            }
                        }
                        bad += check(&c, o, seed);
                    }
                    if (bad) {
                        fprintf(stderr, "mpilens-bench: coll %s size %lld: %ld wrong values on "
                                "rank %d\n", op_names[o], sz[i], bad, ml_rank);
                        errors++;
                    }
                    mysum /= samples;
                    MPI_Gather(&mysum, 1, MPI_DOUBLE, rankmean, 1, MPI_DOUBLE, 0, c.comm);
                    if (ml_rank == 0) {
                        ml_json_obj(out, NULL);
                        ml_json_str(out, "op", op_names[o]);
                        ml_json_int(out, "nranks", c.np);
                        ml_json_int(out, "size", o == BARRIER ? 0 : sz[i]);
                        ml_json_int(out, "count", is_reduction(o) ? c.cnt : o == BARRIER ? 0 : sz[i]);
                        ml_json_stats(out, "time_s", x, samples, 1.0);
                        ml_json_arr(out, "per_rank_mean_s");
                        for (int r = 0; r < c.np; r++) ml_json_num(out, NULL, rankmean[r]);
                        ml_json_end(out);
                        ml_json_int(out, "late_repeats", sy.late - late_acc);
                        ml_json_int(out, "late_accepted", late_acc);
                        ml_json_end(out);
                    }
                }
                MPI_Barrier(MPI_COMM_WORLD);
                ml_progress(done + 1, total);
            }
        }
        if (in) MPI_Comm_free(&c.comm);
    }
    if (ml_rank == 0) {
        ml_json_end(out);
        ml_json_num(out, "expected_s", expected);  /* said before measuring, beside results */
        ml_json_num(out, "elapsed_s", MPI_Wtime() - started);  /* what it took (rank 0) */
    }
    free(x); free(rankmean); free(c.sb); free(c.rb); free(c.sc); free(sz);
    return (int)errors;
}
