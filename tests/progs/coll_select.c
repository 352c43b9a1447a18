/* coll_select: the adaptive MPI_Allreduce's race, call by call
 * (MPILENS_COLL_ALLREDUCE=adaptive, tests/test_coll_select.py).
 *
 *   coll_select R C [bcast|allgather|reduce_scatter_block]
 *
 * On MPI_COMM_WORLD, R x C + 3 in-place MPI_SUM calls of 1000 doubles (8000
 * bytes: size class 4096), each checked exactly; after each one the choice
 * from mpilens_coll_choice("allreduce") (dlsym in libmpilens.so) must be NULL
 * with i race calls after call i while i < R x C, then the choice with
 * R x C race calls (C = 1: no race, the choice at once and 0 race calls).
 * Every rank must hold the same choice (its index, reduced with MIN and
 * MAX).  Prints "race=N choice=NAME agree=1" on rank 0; a wrong value prints
 * one FAIL line and the job exits with status 1.
 *
 * With "bcast": MPI_Bcast of the 1000 doubles from the last rank instead
 * (MPILENS_COLL_BCAST=adaptive), the choice from mpilens_coll_choice("bcast").
 * With "allgather": MPI_Allgather of 1000 doubles a rank (rank j's block:
 * j + 1 times the allreduce's terms), the choice from
 * mpilens_coll_choice("allgather").
 * With "reduce_scatter_block": in-place MPI_Reduce_scatter_block sums of
 * blocks of 1000 doubles (MPILENS_COLL_REDUCE_SCATTER_BLOCK=adaptive). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const char *(*choice_fn)(const char *, MPI_Comm, long long, long long *);
static const char *const names[] = {"mpi", "twolevel", "multileader"};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P, fails = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int R = argc > 2 ? atoi(argv[1]) : 5, C = argc > 2 ? atoi(argv[2]) : 1;
    int race = C > 1 ? R * C : 0;
    const char *coll = argc > 3 && (strcmp(argv[3], "bcast") == 0
                                    || strcmp(argv[3], "allgather") == 0
                                    || strcmp(argv[3], "reduce_scatter_block") == 0)
                           ? argv[3] : "allreduce";
    int bcast = coll[0] == 'b', gather = coll[0] == 'a' && coll[3] == 'g', rsb = coll[0] == 'r';
    choice_fn choice = (choice_fn)dlsym(RTLD_DEFAULT, "mpilens_coll_choice");
    if (!choice) {
        fprintf(stderr, "FAIL mpilens_coll_choice not found (not run under mpilens?)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    enum { N = 1000 };
    double *v = malloc(sizeof(double) * N * (size_t)P);
    double *all = malloc(sizeof(double) * N * (size_t)P);
    const char *got = NULL;
    long long lc = -1;
    for (int i = 1; i <= race + 3; i++) {
        for (int e = 0; e < N * (rsb ? P : 1); e++)
            v[e] = bcast && rank != P - 1 ? -1 : (double)(rank + 1) * (e % 97 + i);
        if (gather) {
            MPI_Allgather(v, N, MPI_DOUBLE, all, N, MPI_DOUBLE, MPI_COMM_WORLD);
            for (long e = 0; e < (long)N * P && !fails; e++)
                if (all[e] != (double)(e / N + 1) * (e % N % 97 + i)) {
                    fprintf(stderr, "FAIL rank=%d call=%d element=%ld: %g\n", rank, i, e,
                            all[e]);
                    fails++;
                }
        } else if (rsb)
            MPI_Reduce_scatter_block(MPI_IN_PLACE, v, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (bcast)
            MPI_Bcast(v, N, MPI_DOUBLE, P - 1, MPI_COMM_WORLD);
        else
            MPI_Allreduce(MPI_IN_PLACE, v, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int e = 0; e < N && !fails && !gather; e++)
            if (v[e] != (bcast ? (double)P : (double)P * (P + 1) / 2)
                            * ((rsb ? rank * N + e : e) % 97 + i)) { /* rsb: my block's */
                fprintf(stderr, "FAIL rank=%d call=%d element=%d: %g\n", rank, i, e, v[e]);
                fails++;
            }
        got = choice(coll, MPI_COMM_WORLD, 8 * N, &lc);
        int racing = i < race;
        if (!fails && (racing ? got != NULL || lc != i : got == NULL || lc != race)) {
            fprintf(stderr, "FAIL rank=%d call=%d: choice %s after %lld race calls\n", rank, i,
                    got ? got : "(none)", lc);
            fails++;
        }
    }
    int idx = -1;
    for (int a = 0; got && a < 3; a++)
        if (strcmp(got, names[a]) == 0)
            idx = a;
    int mm[3] = {idx, -idx, fails}, out[3];
    PMPI_Allreduce(mm, out, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !out[2])
        printf("race=%lld choice=%s agree=%d\n", lc, got ? got : "(none)",
               out[0] == -out[1] && idx >= 0);
    free(all);
    free(v);
    MPI_Finalize();
    return out[2] ? 1 : 0;
}
