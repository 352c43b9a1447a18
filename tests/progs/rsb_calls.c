/* The per-call cost of MPI_Reduce_scatter_block through the profiler
 * (docs/collectives.md): N calls of one int a rank, MPI_SUM, on
 * MPI_COMM_WORLD, to be counted with callgrind.
 *
 *   rsb_calls [N]     (N: 10000 by default; any number of ranks, 1 is enough) */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 10000, size, v = 0, r = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *send = calloc((size_t)size, sizeof(int));
    for (int i = 0; i < n; i++) {
        send[0] = i;
        MPI_Reduce_scatter_block(send, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        v = r;
    }
    free(send);
    MPI_Finalize();
    return size > 1 || v == n - 1 ? 0 : 1;
}
