/* The per-call cost of the collective count (docs/flight-recorder.md, "Cost"): N calls
 * each of MPI_Barrier, MPI_Allreduce (one double) and MPI_Comm_rank on MPI_COMM_WORLD,
 * to be counted with callgrind.
 *
 *   coll_calls [N]      (N: 2000 by default; any number of ranks, 1 is enough) */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    double a = 1, b = 0;
    for (int i = 0; i < n; i++) MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        int r;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    }
    MPI_Finalize();
    return 0;
}
