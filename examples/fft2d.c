/* fft2d: 2-D complex FFT by transposes (the "transpose method" of FFT codes),
 * a few MPI_Alltoall calls per run, checked against the exact spectrum.
 *
 *   f(x, y) = exp(2 pi i (KX x + KY y) / N) + 0.5 exp(2 pi i (KX2 x + KY2 y) / N)
 *
 * N x N grid (N a power of two, divisible by the number of ranks P), rows in
 * blocks of m = N / P over the ranks.  Each iteration:
 *   forward:  FFT of every local row (over y), transpose (MPI_Alltoall, blocks
 *             of m x m complex doubles = 16 m^2 bytes), FFT of every row (over x):
 *             each rank holds rows ky of F[ky][kx];
 *   check:    F = N^2 at (KX, KY), N^2 / 2 at (KX2, KY2), 0 elsewhere (1e-9 N^2);
 *   inverse:  inverse FFTs and the transpose back: f again (1e-12).
 * So each rank calls MPI_Barrier once, MPI_Alltoall exactly 2 * ITERS times,
 * then MPI_Allreduce once (MAX of the largest error and of the time).  Rank 0 prints
 *   fft2d: n=<N> ranks=<P> alltoalls=<2 ITERS> block_bytes=<16 m^2> time_s=<t> max_err=<e> ok|FAILED
 * (time_s: the iterations' wall time, slowest rank).  Exit status 1 when a check fails.
 *
 * Usage: fft2d [N [ITERS [WRONG]]]   (defaults 128 4 0)
 * WRONG=1 adds 1e-6 N^2 to one spectrum value on rank 0: the check must then fail.
 */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define KX 3
#define KY 5
#define KX2 1
#define KY2 7

/* In-place iterative radix-2 FFT of n points; sign -1 forward, +1 inverse (unscaled). */
static void fft(double complex *a, int n, int sign)
{
    for (int i = 1, j = 0; i < n; i++) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            double complex t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    const double pi = acos(-1.0);
    for (int len = 2; len <= n; len <<= 1) {
        double complex w = cexp(sign * 2 * pi * I / len);
        for (int i = 0; i < n; i += len) {
            double complex wk = 1;
            for (int k = 0; k < len / 2; k++) {
                double complex u = a[i + k], v = a[i + k + len / 2] * wk;
                a[i + k] = u + v;
                a[i + k + len / 2] = u - v;
                wk *= w;
            }
        }
    }
}

/* a (m local rows of n) -> b (m local rows of n) transposed across the ranks. */
static void transpose(const double complex *a, double complex *b, double complex *sb,
                      double complex *rb, int n, int m, int P)
{
    for (int p = 0; p < P; p++)
        for (int c = 0; c < m; c++)
            for (int r = 0; r < m; r++)
                sb[(p * m + c) * m + r] = a[r * n + p * m + c];
    MPI_Alltoall(sb, 2 * m * m, MPI_DOUBLE, rb, 2 * m * m, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int q = 0; q < P; q++)
        for (int c = 0; c < m; c++)
            for (int r = 0; r < m; r++)
                b[c * n + q * m + r] = rb[(q * m + c) * m + r];
}

static double complex input(int x, int y, int n)
{
    const double pi = acos(-1.0);
    return cexp(2 * pi * I * (KX * x + KY * y) / n) + 0.5 * cexp(2 * pi * I * (KX2 * x + KY2 * y) / n);
}

int main(int argc, char **argv)
{
    int rank, P, params[3] = {128, 4, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    for (int a = 1; a < argc && a <= 3; a++)
        params[a - 1] = atoi(argv[a]);
    const int n = params[0], iters = params[1], wrong = params[2];
    if (n < 2 || (n & (n - 1)) || n % P || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "fft2d: N must be a power of two divisible by the %d ranks, ITERS >= 1\n", P);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int m = n / P;
    size_t cells = (size_t)m * n;
    double complex *a = malloc(sizeof *a * cells), *b = malloc(sizeof *b * cells),
                   *sb = malloc(sizeof *sb * cells), *rb = malloc(sizeof *rb * cells);
    if (!a || !b || !sb || !rb)
        MPI_Abort(MPI_COMM_WORLD, 3);
    for (int r = 0; r < m; r++)
        for (int y = 0; y < n; y++)
            a[r * n + y] = input(rank * m + r, y, n);
    double err = 0, nn = (double)n * n;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        for (int r = 0; r < m; r++) /* forward */
            fft(a + r * n, n, -1);
        transpose(a, b, sb, rb, n, m, P);
        for (int r = 0; r < m; r++)
            fft(b + r * n, n, -1);
        if (wrong && rank == 0 && it == 0)
            b[0] += 1e-6 * nn;
        for (int c = 0; c < m; c++) { /* b[c][kx] = F[kx][ky], ky = rank m + c */
            int ky = rank * m + c;
            for (int kx = 0; kx < n; kx++) {
                double complex want = (kx == KX && ky == KY) ? nn : (kx == KX2 && ky == KY2) ? nn / 2 : 0;
                double e = cabs(b[c * n + kx] - want) / nn;
                err = e > err ? e : err;
            }
        }
        for (int r = 0; r < m; r++) /* inverse */
            fft(b + r * n, n, 1);
        transpose(b, a, sb, rb, n, m, P);
        for (int r = 0; r < m; r++) {
            fft(a + r * n, n, 1);
            for (int y = 0; y < n; y++)
                a[r * n + y] /= nn;
        }
    }
    double t = MPI_Wtime() - t0;
    for (int r = 0; r < m; r++) /* the round trips gave f back */
        for (int y = 0; y < n; y++) {
            double e = cabs(a[r * n + y] - input(rank * m + r, y, n));
            err = e > err ? e : err;
        }
    double in[2] = {err, t}, out[2];
    MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int ok = out[0] < 1e-9;
    if (rank == 0)
        printf("fft2d: n=%d ranks=%d alltoalls=%d block_bytes=%d time_s=%.9g max_err=%.3g %s\n", n, P,
               2 * iters, 16 * m * m, out[1], out[0], ok ? "ok" : "FAILED");
    free(a);
    free(b);
    free(sb);
    free(rb);
    MPI_Finalize();
    return ok ? 0 : 1;
}
