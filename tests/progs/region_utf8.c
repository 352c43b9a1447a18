/* Names that are not whole UTF-8 (tests/test_regions.py): a region label of 40 x "é"
 * (80 bytes, cut by the profiler to 63 bytes: 31 characters and half of one), one
 * MPI_Barrier inside it; a communicator named "caf\xe9" (Latin-1), one MPI_Barrier on
 * it.  The profile must stay UTF-8 text (the cut and foreign bytes as U+FFFD). */
#include <mpi.h>
#include <string.h>

#include "mpilens.h"

int main(int argc, char **argv)
{
    char label[81] = {0};
    for (int i = 0; i < 40; i++) memcpy(label + 2 * i, "\xc3\xa9", 2);
    MPI_Init(&argc, &argv);
    MPILENS_REGION_BEGIN(label); /* MPI_Pcontrol takes printable ASCII labels only */
    MPI_Barrier(MPI_COMM_WORLD);
    MPILENS_REGION_END(label);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_name(dup, "caf\xe9");
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
