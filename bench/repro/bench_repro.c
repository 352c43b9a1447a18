/* mpilens-bench-repro: native MPI_Allreduce(MPI_SUM, MPI_DOUBLE) against the
 * reproducible engine (runtime/repro), in one run, interleaved.
 *
 *   mpilens-bench-repro [--samples N] [--progress]
 *
 * --progress: before the timed samples, "MLB-ESTIMATE <s>" on stderr (rank 0): the
 * expected duration of the samples, from a probe of every count (the batch sizing's
 * own calls), as the mpilens-bench families send it.
 * Timing: for counts 1, 16, 1Ki, 1Mi doubles, N samples alternating native and
 * reproducible; a sample is the slowest rank's time for a batch of calls
 * (sized to ~20 ms of native calls, at least 3) divided by the batch size.  Accuracy: for several data sets, bits of the
 * native result that differ from the correctly rounded exact sum (the
 * reproducible result), 53 - log2(|S| / |native - S|), clamped to [0, 53].
 * Prints one JSON document on rank 0.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overrides.h"
#include "repro.h"

void ml_mark_served(void) {}  /* the profiler core is not linked here */

static int rank, P;

static uint64_t rng = 88172645463325252ULL;
static double urand(void)     /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per call for `reps` calls, slowest rank. */
static double batch(int repro, const double *x, double *y, int n, int reps)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) {
        if (repro)
            ml_repro_allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else
            PMPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    double t = (MPI_Wtime() - t0) / reps, tmax;
    PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

static void stats(double *s, int n, const char *key)
{
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += s[i];
    printf("\"%s\": {\"median\": %.6g, \"mean\": %.6g, \"min\": %.6g, \"max\": %.6g}", key,
           s[n / 2] * 1e6, sum / n * 1e6, s[0] * 1e6, s[n - 1] * 1e6);
}

static double bits_lost(double native, double exact)
{
    if (native == exact || (isnan(native) && isnan(exact)))
        return 0;
    if (exact == 0 || !isfinite(exact) || !isfinite(native))
        return 53;
    double rel = fabs(native - exact) / fabs(exact);
    double lost = 53 + log2(rel);
    return lost < 0 ? 0 : lost > 53 ? 53 : lost;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &P);
    int samples = 11, progress = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--samples") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            samples = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--progress")) {
            progress = 1;
        } else {
            if (rank == 0)
                fprintf(stderr, "mpilens-bench-repro: bad argument '%s': expected --samples N (N > 0) "
                        "or --progress\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    if (ml_repro_enable(1) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < rank * 1000; i++)
        urand();
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    for (char *c = lib; *c; c++)
        if (*c == '\n' || *c == '"' || *c == '\\' || *c == '\t')
            *c = ' ';
    if (rank == 0)
        printf("{\"bench\": \"repro\", \"nranks\": %d, \"mpi_library\": \"%.80s\", \"samples\": %d,\n"
               " \"timing\": [", P, lib, samples);

    const int counts[] = {1, 16, 1024, 1 << 20};
    const int nc = (int)(sizeof counts / sizeof counts[0]);
    int maxn = counts[nc - 1];
    double *x = malloc(sizeof(double) * (size_t)maxn), *y = malloc(sizeof(double) * (size_t)maxn),
           *z = malloc(sizeof(double) * (size_t)maxn);
    double *sn = malloc(sizeof(double) * (size_t)samples), *sr = malloc(sizeof(double) * (size_t)samples);
    for (int i = 0; i < maxn; i++)
        x[i] = 2 * urand() - 1;
    /* the probe: per count, warm up both paths and size a batch to ~20 ms of native calls
     * (the same on every rank); the samples then take samples x reps x (native + repro) */
    int sized[sizeof counts / sizeof counts[0]];
    double expected = 0;
    for (int c = 0; c < nc; c++) {
        batch(1, x, y, counts[c], 2); /* the warm-up: set-up costs stay out of the probe */
        double t1 = batch(0, x, y, counts[c], 3);
        int reps = t1 > 0.02 / 3 ? 3 : (int)(0.02 / t1);
        sized[c] = reps > 2000 ? 2000 : reps;
        double tr = batch(1, x, y, counts[c], 3);
        expected += (double)samples * sized[c] * (t1 + tr);
    }
    if (progress && rank == 0) {
        fprintf(stderr, "MLB-ESTIMATE %.6g\n", expected);
        fflush(stderr);
    }
    double t_start = MPI_Wtime();
    for (int c = 0; c < nc; c++) {
        int n = counts[c], reps = sized[c];
        batch(1, x, y, n, 1); /* this count's buffers warm again after the others' */
        batch(0, x, y, n, 1);
        for (int s = 0; s < samples; s++) {
            if (s % 2) {
                sr[s] = batch(1, x, y, n, reps);
                sn[s] = batch(0, x, y, n, reps);
            } else {
                sn[s] = batch(0, x, y, n, reps);
                sr[s] = batch(1, x, y, n, reps);
            }
        }
        if (rank == 0) {
            printf("%s\n  {\"count\": %d, \"bytes\": %zu, \"calls_per_sample\": %d, ", c ? "," : "", n,
                   (size_t)n * sizeof(double), reps);
            stats(sn, samples, "native_us");
            printf(", ");
            stats(sr, samples, "repro_us");
            printf(", \"ratio_median\": %.3f}", sr[samples / 2] / sn[samples / 2]);
        }
    }
    if (rank == 0)
        printf("],\n \"expected_s\": %.6g, \"elapsed_s\": %.6g,\n \"accuracy\": [", expected,
               MPI_Wtime() - t_start);

    const char *sets[] = {"random_uniform", "mixed_magnitudes", "ill_conditioned", "published_example"};
    const int n = 1024;
    for (int d = 0; d < 4; d++) {
        for (int i = 0; i < n; i++) {
            double u = 2 * urand() - 1;
            if (d == 0)
                x[i] = u;
            else if (d == 1)
                x[i] = ldexp(u, (int)(urand() * 80) - 40);
            else if (d == 2) { /* the same large term, + on the first half of the ranks and
                                  - on the second half, plus a small random term */
                double big = ldexp(1.0 + (double)((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL >> 11) * 0x1p-53, 30);
                x[i] = (rank < P / 2 ? big : P % 2 && rank == P - 1 ? 0.0 : -big) + u;
            }
            else
                x[i] = rank == 1 % P ? 1.0 : rank == P - 1 ? -1.0 : 0x1p-60;
        }
        PMPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ml_repro_allreduce(x, z, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double sum = 0, mx = 0;
        int exact = 0;
        for (int i = 0; i < n; i++) {
            double b = bits_lost(y[i], z[i]);
            sum += b;
            mx = b > mx ? b : mx;
            exact += y[i] == z[i];
        }
        if (rank == 0)
            printf("%s\n  {\"dataset\": \"%s\", \"count\": %d, \"bits_lost_mean\": %.3f, \"bits_lost_max\": %.3f, "
                   "\"native_exact_fraction\": %.4f}", d ? "," : "", sets[d], n, sum / n, mx, (double)exact / n);
    }
    if (rank == 0)
        printf("]}\n");
    free(x);
    free(y);
    free(z);
    free(sn);
    free(sr);
    ml_repro_finalize();
    MPI_Finalize();
    return 0;
}
