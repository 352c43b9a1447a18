/* The per-call cost of MPI_Bcast through the profiler (docs/collectives.md): N calls
 * of MPI_Bcast of one int from rank 0 on MPI_COMM_WORLD, to be counted with callgrind.
 *
 *   bcast_calls [N]     (N: 10000 by default; any number of ranks, 1 is enough) */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 10000, v = 0;
    for (int i = 0; i < n; i++) {
        v = i;
        MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return v == n - 1 ? 0 : 1;
}
