/* timing_strata: one function whose first calls are slow and the rest fast, for
 * the sampled timing's estimate (docs/runtime.md, MPILENS_TIMING=sampled).
 *
 *   timing_strata SLOW WAIT_MS FAST
 *
 * Rank 0's first SLOW MPI_Barrier calls (MPI_COMM_WORLD) each wait WAIT_MS for
 * the last rank, which sleeps before each of them; then every rank makes FAST
 * MPI_Barrier calls on MPI_COMM_SELF, which return at once.  Rank 0 prints its
 * own wall time between MPI_Init and MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4 || atol(argv[1]) < 0 || atol(argv[2]) < 0 || atol(argv[3]) < 0) {
        if (rank == 0) fprintf(stderr, "usage: timing_strata SLOW WAIT_MS FAST\n");
        MPI_Finalize();
        return 2;
    }
    long slow = atol(argv[1]), wait_ms = atol(argv[2]), fast = atol(argv[3]);
    struct timespec nap = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};
    for (long i = 0; i < slow; i++) {
        if (rank == size - 1) nanosleep(&nap, NULL);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (long i = 0; i < fast; i++) MPI_Barrier(MPI_COMM_SELF);
    printf("rank %d done\n", rank);
    MPI_Finalize();
    return 0;
}
