/* Per-communicator records (tests/test_comms.py), on 4 ranks:
 *   dup   = MPI_Comm_dup(MPI_COMM_WORLD), named "dupw": 3 MPI_Allreduce of 8 ints
 *   half  = MPI_Comm_split(dup, rank % 2, rank), named "half" on every rank:
 *           5 MPI_Bcast of 4 ints from its rank 0, then freed
 *   world: 1 MPI_Barrier (and the MPI_Comm_rank, MPI_Comm_dup, MPI_Comm_split
 *          and MPI_Comm_set_name calls name their own communicators). */
#include <mpi.h>

int main(int argc, char **argv)
{
    int r, a[8] = {0}, b[4] = {0};
    MPI_Comm dup, half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_name(dup, "dupw");
    for (int i = 0; i < 3; i++) MPI_Allreduce(MPI_IN_PLACE, a, 8, MPI_INT, MPI_SUM, dup);
    MPI_Comm_split(dup, r % 2, r, &half);
    MPI_Comm_set_name(half, "half");
    for (int i = 0; i < 5; i++) MPI_Bcast(b, 4, MPI_INT, 0, half);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
