/* Time line (tests/test_timeline.py): argv[1] = N cheap calls (MPI_Comm_rank, class
 * other), and after every 1000th an MPI_Allreduce of 2 doubles (class coll, 16 bytes
 * sent and 16 received); then one MPI_Barrier.  Per rank: N MPI_Comm_rank,
 * N / 1000 MPI_Allreduce, 1 MPI_Barrier. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    double x[2] = {1, 2};
    int r;
    for (long i = 1; i <= n; i++) {
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        if (i % 1000 == 0) MPI_Allreduce(MPI_IN_PLACE, x, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
