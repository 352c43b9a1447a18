/* The per-call cost of MPI_Allgather through the profiler (docs/collectives.md): N
 * calls of MPI_Allgather of one int a rank on MPI_COMM_WORLD, to be counted with
 * callgrind.
 *
 *   allgather_calls [N]     (N: 10000 by default; any number of ranks, 1 is enough) */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 10000, v = 0, size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *all = malloc(sizeof(int) * (size_t)size), ok = 1;
    for (int i = 0; i < n; i++) {
        v = i + rank;
        MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    }
    for (int j = 0; j < size; j++)
        ok &= all[j] == n - 1 + j;
    free(all);
    MPI_Finalize();
    return ok ? 0 : 1;
}
