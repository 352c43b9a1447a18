/* heat2d: explicit 2-D heat equation on the periodic unit square, checked
 * against its exact solution.
 *
 *   u_t = u_xx + u_yy,  u(x, y, 0) = sin(2 pi KX x) sin(2 pi KY y)
 *
 * N x N grid, h = 1/N, dt = R h^2 (R = 0.2, stable), 5-point stencil.  Rows
 * are split in blocks over the ranks (N must be divisible by the number of
 * ranks); each step exchanges one halo row with each neighbour (MPI_Irecv,
 * MPI_Isend, MPI_Waitall; periodic, so rank 0 and rank P-1 are neighbours).
 *
 * What each rank does, exactly (the tests count on it), for STEPS steps and a
 * transpose every EVERY steps:
 *   MPI_Bcast      1                 (rank 0 broadcasts the 3 int parameters, 12 B)
 *   MPI_Irecv      2 * STEPS         (N doubles each)
 *   MPI_Isend      2 * STEPS         (N doubles each, to rank-1 and rank+1)
 *   MPI_Waitall    STEPS
 *   MPI_Allreduce  STEPS + 1         (1 double: sum of u^2 each step; then 2 doubles, MAX: final check)
 *   MPI_Alltoall   STEPS / EVERY     (periodic transpose of the whole field)
 *
 * Checks (exit status 1 when any fails):
 *   - the field equals the discrete exact solution g^n sin() sin() to 1e-12,
 *     g = 1 - 4R (sin^2(pi KX h) + sin^2(pi KY h));
 *   - the global sum of u^2 (the Allreduce) equals g^(2n) N^2 / 4 to 1e-10 relative;
 *   - every transposed field equals the transpose of the exact solution;
 *   - the final field agrees with the continuous solution exp(-4 pi^2 (KX^2+KY^2) t)
 *     to 20 h^2 (the scheme is second order in space and first in time with
 *     dt = R h^2; the error bound is about 12 h^2 of the initial amplitude).
 *
 * Usage: heat2d [N [STEPS [EVERY [WRONG]]]]   (defaults 64 100 25 0)
 * WRONG=1 adds 1e-6 to one grid value on rank 0: the checks must then fail.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define KX 1
#define KY 2
#define R 0.2

static double exact_discrete(int n_steps, int i, int j, int n)
{
    const double pi = acos(-1.0);
    double h = 1.0 / n;
    double g = 1.0 - 4.0 * R * (pow(sin(pi * KX * h), 2) + pow(sin(pi * KY * h), 2));
    return pow(g, n_steps) * sin(2 * pi * KX * i * h) * sin(2 * pi * KY * j * h);
}

/* u[i][j]: i = global row (x index), j = column (y index). */
int main(int argc, char **argv)
{
    int rank, size, params[3] = {64, 100, 25};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        for (int a = 1; a < argc && a <= 3; a++)
            params[a - 1] = atoi(argv[a]);
    MPI_Bcast(params, 3, MPI_INT, 0, MPI_COMM_WORLD);
    const int n = params[0], steps = params[1], every = params[2];
    if (n <= 0 || steps < 0 || every <= 0 || n % size != 0) {
        if (rank == 0)
            fprintf(stderr, "heat2d: N=%d must be a positive multiple of the %d ranks, "
                            "STEPS>=0, EVERY>0\n", n, size);
        MPI_Finalize();
        return 2;
    }
    const int rows = n / size, row0 = rank * rows;
    const int up = (rank + size - 1) % size, down = (rank + 1) % size;
    const double pi = acos(-1.0), h = 1.0 / n, dt = R * h * h;

    /* rows+2 rows with halo rows 0 and rows+1 */
    double *u = malloc(sizeof(double) * (size_t)(rows + 2) * n);
    double *v = malloc(sizeof(double) * (size_t)(rows + 2) * n);
    double *sbuf = malloc(sizeof(double) * (size_t)rows * n);
    double *rbuf = malloc(sizeof(double) * (size_t)rows * n);
    if (!u || !v || !sbuf || !rbuf) {
        fprintf(stderr, "heat2d: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#define U(a, i, j) (a)[(size_t)(i) * n + (j)]
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < n; j++)
            U(u, i + 1, j) = exact_discrete(0, row0 + i, j, n);
    if (rank == 0 && argc > 4 && atoi(argv[4]) != 0)
        U(u, 1, 0) += 1e-6; /* deliberately wrong answer */

    int bad = 0;
    double max_err = 0.0;
    for (int step = 1; step <= steps; step++) {
        MPI_Request req[4];
        MPI_Status st[4];
        MPI_Irecv(&U(u, 0, 0), n, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(&U(u, rows + 1, 0), n, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(&U(u, 1, 0), n, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(&U(u, rows, 0), n, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, st);

        double local = 0.0;
        for (int i = 1; i <= rows; i++)
            for (int j = 0; j < n; j++) {
                int jm = (j + n - 1) % n, jp = (j + 1) % n;
                double lap = U(u, i - 1, j) + U(u, i + 1, j) + U(u, i, jm) + U(u, i, jp)
                             - 4.0 * U(u, i, j);
                U(v, i, j) = U(u, i, j) + R * lap;
                local += U(v, i, j) * U(v, i, j);
            }
        double *t = u; u = v; v = t;

        double global;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double g = 1.0 - 4.0 * R * (pow(sin(pi * KX * h), 2) + pow(sin(pi * KY * h), 2));
        double expect = pow(g, 2.0 * step) * n * (double)n / 4.0;
        if (fabs(global - expect) > 1e-10 * expect) {
            if (rank == 0)
                fprintf(stderr, "heat2d: step %d: sum u^2 = %.15g, expected %.15g\n",
                        step, global, expect);
            bad = 1;
        }

        if (step % every == 0) {
            /* transpose: block b of my rows goes to rank b, packed so that the
             * receiver gets, for each of its rows (my columns), my rows in order */
            for (int b = 0; b < size; b++)
                for (int jj = 0; jj < rows; jj++)
                    for (int i = 0; i < rows; i++)
                        sbuf[(size_t)b * rows * rows + (size_t)jj * rows + i] =
                            U(u, i + 1, b * rows + jj);
            MPI_Alltoall(sbuf, rows * rows, MPI_DOUBLE, rbuf, rows * rows, MPI_DOUBLE,
                         MPI_COMM_WORLD);
            /* rbuf block s, [jj][i] = u(row s*rows+i, column row0+jj) = T(row0+jj, s*rows+i) */
            for (int s = 0; s < size; s++)
                for (int jj = 0; jj < rows; jj++)
                    for (int i = 0; i < rows; i++) {
                        double got = rbuf[(size_t)s * rows * rows + (size_t)jj * rows + i];
                        double want = exact_discrete(step, s * rows + i, row0 + jj, n);
                        if (fabs(got - want) > 1e-12)
                            bad = 1;
                    }
        }
    }

    const double tfinal = steps * dt;
    const double decay = exp(-4.0 * pi * pi * (KX * KX + KY * KY) * tfinal);
    double cont_err = 0.0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < n; j++) {
            double e = fabs(U(u, i + 1, j) - exact_discrete(steps, row0 + i, j, n));
            if (e > max_err)
                max_err = e;
            double c = decay * sin(2 * pi * KX * (row0 + i) * h) * sin(2 * pi * KY * j * h);
            double ce = fabs(U(u, i + 1, j) - c);
            if (ce > cont_err)
                cont_err = ce;
        }
    double mine[2] = {max_err, cont_err + (bad ? 1e300 : 0.0)}, all[2];
    /* one call: the two maxima travel together (max_err < 1e-12, cont_err < 20 h^2) */
    MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int ok = all[0] < 1e-12 && all[1] < 20.0 * h * h;
    if (rank == 0)
        printf("heat2d: N=%d ranks=%d steps=%d transposes=%d t=%.6g "
               "max|u-exact|=%.3g max|u-continuous|=%.3g %s\n",
               n, size, steps, steps / every, tfinal, all[0], all[1] > 1e299 ? -1.0 : all[1],
               ok ? "OK" : "FAILED");
    free(u); free(v); free(sbuf); free(rbuf);
    MPI_Finalize();
    return ok ? 0 : 1;
}
