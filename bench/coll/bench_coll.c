/* mpilens-bench-coll: MPI_Allreduce of doubles (MPI_SUM) on MPI_COMM_WORLD.
 *
 *   mpilens-bench-coll [--iters K] [--warmup W] SIZE...
 *
 * SIZE: bytes, a multiple of 8 (8, 65536, 1M, 4Mi, 64K, 16MiB).  For each size, in
 * the order given: W untimed calls, then the timed ones: K for sizes of 1 MiB and
 * more, K x (1 MiB / size) for smaller ones (at most 20 K), so a small size is not
 * a handful of microsecond samples.  Each timed call: MPI_Barrier, then the call
 * timed on every rank from its own return from the barrier to its own return from
 * MPI_Allreduce; the iteration's time is the slowest rank's (collected after the
 * size, outside the timing, by point-to-point messages: collect()).
 *
 * A plain MPI program: the algorithm is whatever serves MPI_Allreduce, e.g. the
 * node-aware ones under mpilens-exec with MPILENS_COLL_ALLREDUCE
 * (docs/collectives.md), or the MPI's own with its MCA settings.
 *
 * Check: element i of rank r is (r + 1) * (((i + j) mod 4093) + 1) for iteration j,
 * integers, so every summation order gives the exact sum
 * (((i + j) mod 4093) + 1) * P (P + 1) / 2; every rank compares every element of
 * every call (warm-up included) bit for bit, the receive buffer having been filled
 * with -1 before.  Wrong elements are counted; any makes the exit status 1.
 *
 * Prints one JSON document on rank 0's stdout: ranks, each rank's host, and per
 * size its count, iterations and the slowest rank's time of each. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 64
#define SMALL_SCALE_MAX 20
enum { TAG_HOST = 1, TAG_TIMES, TAG_BAD };

static int rank, nranks;

static _Noreturn void usage(const char *fmt, const char *arg)
{
    if (rank == 0) {
        fputs("mpilens-bench-coll: ", stderr);
        fprintf(stderr, fmt, arg);
        fputs(" (usage: mpilens-bench-coll [--iters K] [--warmup W] SIZE...)\n", stderr);
    }
    MPI_Finalize();
    exit(2);
}

/* bytes with an optional K, M, G (or Ki, Mi, Gi, KiB, ...: powers of 1024); -1 if bad */
static long long parse_size(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0)
        return -1;
    long long mul = 1;
    switch (*end) {
    case 'K': mul = 1LL << 10; end++; break;
    case 'M': mul = 1LL << 20; end++; break;
    case 'G': mul = 1LL << 30; end++; break;
    default: break;
    }
    if (mul > 1 && *end == 'i') end++;
    if (mul > 1 && *end == 'B') end++;
    if (*end || v > (1LL << 40) / mul)
        return -1;
    return v * mul;
}

static long parse_int(const char *s, const char *what, long lo, long hi)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || v < lo || v > hi)
        usage(what, s ? s : "");
    return v;
}

static void fill(double *x, long n, int j, double scale)
{
    for (long i = 0; i < n; i++)
        x[i] = scale * (double)(((i + j) % 4093) + 1);
}

static long check(const double *y, long n, int j)
{
    double tri = (double)nranks * (double)(nranks + 1) / 2;
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += y[i] != tri * (double)(((i + j) % 4093) + 1);
    return bad;
}

/* Rank 0 gets the slowest rank's time of each of the k iterations in tmax and the sum
 * of every rank's *bad, by point-to-point messages, not collectives: the MPI's
 * collective components under test must not touch the figures (Open MPI 4.1.4's
 * coll/han, forced, gathered nothing with ranks placed round-robin). */
static void collect(const double *t, double *tmax, long k, long long *bad)
{
    if (rank != 0) {
        MPI_Send(t, (int)k, MPI_DOUBLE, 0, TAG_TIMES, MPI_COMM_WORLD);
        MPI_Send(bad, 1, MPI_LONG_LONG, 0, TAG_BAD, MPI_COMM_WORLD);
        return;
    }
    memcpy(tmax, t, (size_t)k * sizeof *t);
    double *u = malloc((size_t)k * sizeof *u);
    for (int r = 1; r < nranks; r++) {
        long long b;
        MPI_Recv(u, (int)k, MPI_DOUBLE, r, TAG_TIMES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&b, 1, MPI_LONG_LONG, r, TAG_BAD, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (long j = 0; j < k; j++)
            if (u[j] > tmax[j]) tmax[j] = u[j];
        *bad += b;
    }
    free(u);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    long iters = 5, warmup = 1;
    long long sizes[MAX_SIZES];
    int ns = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--iters"))
            iters = parse_int(argv[++a], "--iters '%s' is invalid (accepted: 1 to 100000)", 1,
                              100000);
        else if (!strcmp(argv[a], "--warmup"))
            warmup = parse_int(argv[++a], "--warmup '%s' is invalid (accepted: 0 to 1000)", 0,
                               1000);
        else if (argv[a][0] == '-')
            usage("unknown option '%s'", argv[a]);
        else {
            long long s = parse_size(argv[a]);
            if (s < 0 || s % 8 || s / 8 > 0x7fffffff)
                usage("size '%s' is invalid (accepted: bytes, a multiple of 8 up to 16 GiB, "
                      "e.g. 8, 64K, 1M)", argv[a]);
            if (ns == MAX_SIZES)
                usage("more than 64 sizes ('%s')", argv[a]);
            sizes[ns++] = s;
        }
    }
    if (!ns)
        usage("no size given%s", "");

    long long maxs = 0;
    long maxk = 0;
    long kof[MAX_SIZES];
    for (int i = 0; i < ns; i++) {
        long long scale = (1LL << 20) / sizes[i];
        kof[i] = iters * (scale < 1 ? 1 : scale > SMALL_SCALE_MAX ? SMALL_SCALE_MAX : scale);
        if (sizes[i] > maxs) maxs = sizes[i];
        if (kof[i] > maxk) maxk = kof[i];
    }
    double *x = malloc((size_t)maxs), *y = malloc((size_t)maxs);
    double *t = malloc((size_t)maxk * sizeof *t), *tmax = malloc((size_t)maxk * sizeof *tmax);
    if (!x || !y || !t || !tmax) {
        fprintf(stderr, "mpilens-bench-coll: out of memory (%lld bytes)\n", 2 * maxs);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int hl;
    MPI_Get_processor_name(host, &hl);
    if (rank != 0)
        MPI_Send(host, (int)sizeof host, MPI_CHAR, 0, TAG_HOST, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"program\": \"mpilens-bench-coll\", \"call\": \"MPI_Allreduce\", "
               "\"datatype\": \"MPI_DOUBLE\", \"op\": \"MPI_SUM\", \"ranks\": %d, "
               "\"warmup\": %ld,\n \"timing\": \"MPI_Barrier, then each rank's own time "
               "to its return from MPI_Allreduce; an iteration's time is the slowest "
               "rank's\",\n \"rank_hosts\": [", nranks, warmup);
        for (int r = 0; r < nranks; r++) {
            if (r)
                MPI_Recv(host, (int)sizeof host, MPI_CHAR, r, TAG_HOST, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            printf("%s\"%s\"", r ? ", " : "", host);
        }
        printf("],\n \"results\": [");
    }

    long long total_bad = 0;
    for (int i = 0; i < ns; i++) {
        long n = (long)(sizes[i] / 8), bad = 0;
        for (long j = -warmup; j < kof[i]; j++) {
            fill(x, n, (int)(j + warmup), (double)(rank + 1));
            for (long e = 0; e < n; e++) y[e] = -1;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(x, y, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            if (j >= 0) t[j] = t1 - t0;
            bad += check(y, n, (int)(j + warmup));
        }
        long long sum = bad;
        collect(t, tmax, kof[i], &sum);
        if (bad)
            fprintf(stderr, "mpilens-bench-coll: size %lld: %ld wrong elements on rank %d\n",
                    sizes[i], bad, rank);
        total_bad += sum;
        if (rank == 0) {
            printf("%s\n  {\"size\": %lld, \"count\": %ld, \"iters\": %ld, \"wrong\": %lld, "
                   "\"time_s\": [", i ? "," : "", sizes[i], n, kof[i], sum);
            for (long j = 0; j < kof[i]; j++)
                printf("%s%.9g", j ? ", " : "", tmax[j]);
            printf("]}");
            fflush(stdout);
        }
    }
    if (rank == 0)
        printf("],\n \"wrong\": %lld}\n", total_bad);
    free(x); free(y); free(t); free(tmax);
    MPI_Finalize();
    return total_bad ? 1 : 0;   /* rank 0: every rank's wrong elements; others: their own */
}
