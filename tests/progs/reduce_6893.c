/* MPICH issue 6893 (docs/scale.md): MPI_Reduce of n uint64 with MPI_SUM to rank 0,
 * every rank contributing rank + 1 in every element, then the same with a
 * user-defined non-commutative sum (what the profiler uses), then both again with
 * MPI_Ireduce (the profiler's call).  Rank 0 prints one line per kind:
 *   reduce_6893 call=reduce|ireduce op=builtin|user n=N bad=B first=X want=W
 * (B: elements that differ from W = P(P+1)/2; X: element 0).  MPICH 4.0.2 drops the
 * root's own contribution for n >= 1000 when rank 0 is alone on its node (X = W - 1).
 * Argument: n (default 1000). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] += a[i];
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint64_t *in = malloc(sizeof *in * (size_t)n), *out = calloc((size_t)n, sizeof *out);
    for (int i = 0; i < n; i++) in[i] = (uint64_t)rank + 1;
    const uint64_t want = (uint64_t)size * (uint64_t)(size + 1) / 2;
    MPI_Op user;
    MPI_Op_create(user_sum, 0, &user);
    for (int kind = 0; kind < 4; kind++) {
        MPI_Op op = kind % 2 ? user : MPI_SUM;
        for (int i = 0; i < n; i++) out[i] = 0;
        if (kind < 2) {
            MPI_Reduce(in, out, n, MPI_UINT64_T, op, 0, MPI_COMM_WORLD);
        } else {
            MPI_Request r;
            MPI_Ireduce(in, out, n, MPI_UINT64_T, op, 0, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (rank == 0) {
            int bad = 0;
            for (int i = 0; i < n; i++) bad += out[i] != want;
            printf("reduce_6893 call=%s op=%s n=%d bad=%d first=%llu want=%llu\n", kind < 2 ? "reduce" : "ireduce",
                   kind % 2 ? "user" : "builtin", n, bad, (unsigned long long)out[0], (unsigned long long)want);
        }
    }
    MPI_Op_free(&user);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
