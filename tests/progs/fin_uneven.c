/* Rank lines of uneven lengths, for the offsets of the profile's write
 * (tests/test_finalize_write.py): rank r sends one 8-byte message to every lower
 * rank and receives one from every higher rank (r peers sent, P - 1 - r received),
 * and calls the first r of seven local MPI functions once each (MPI_Get_version,
 * MPI_Get_processor_name, MPI_Initialized, MPI_Query_thread, MPI_Is_thread_main,
 * MPI_Get_library_version, MPI_Wtick): each rank's line is longer than the one of
 * the rank below it. */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, flag, v, sv;
    char name[MPI_MAX_PROCESSOR_NAME > MPI_MAX_LIBRARY_VERSION_STRING ? MPI_MAX_PROCESSOR_NAME
                                                                       : MPI_MAX_LIBRARY_VERSION_STRING];
    double msg = 1.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int q = 0; q < rank; q++) MPI_Send(&msg, 1, MPI_DOUBLE, q, 5, MPI_COMM_WORLD);
    for (int q = rank + 1; q < size; q++) MPI_Recv(&msg, 1, MPI_DOUBLE, q, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int k = 0; k < rank && k < 7; k++) {
        switch (k) {
        case 0: MPI_Get_version(&v, &sv); break;
        case 1: MPI_Get_processor_name(name, &v); break;
        case 2: MPI_Initialized(&flag); break;
        case 3: MPI_Query_thread(&v); break;
        case 4: MPI_Is_thread_main(&flag); break;
        case 5: MPI_Get_library_version(name, &v); break;
        default: (void)MPI_Wtick(); break;
        }
    }
    MPI_Finalize();
    return 0;
}
