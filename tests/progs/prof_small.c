/* Small program for configuration and output tests: 3 Barriers, 2 Allreduce,
 * 1 Comm_rank; with argument "abort", rank 0 calls MPI_Abort in the middle. */
#include <mpi.h>
#include <string.h>

int main(int argc, char **argv)
{
    int r, x = 1, y = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (argc > 1 && strcmp(argv[1], "abort") == 0 && r == 0) MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
