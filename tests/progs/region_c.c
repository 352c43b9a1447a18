/* Regions (tests/test_regions.py), per rank:
 *   outer  (MPI_Pcontrol labels): 3 + 1 MPI_Allreduce of 4 ints
 *   inner  (inside outer, then once more at top level): 5 MPI_Bcast of 16 ints
 *          from rank 0, then 2 MPI_Allreduce of 4 ints on its second entry
 *   deep   (mpilens_region_begin/end, inside inner): 2 MPI_Barrier
 *   recording off (MPI_Pcontrol(0)): 4 MPI_Barrier not recorded; back on
 *   (MPI_Pcontrol(1, NULL)): 1 MPI_Barrier outside any region.
 * Runs without mpilens too (the region calls are then no-ops). */
#include <mpi.h>
#include <stddef.h>

#include "mpilens.h"

int main(int argc, char **argv)
{
    int a[4] = {0}, b[16] = {0};
    MPI_Init(&argc, &argv);
    MPI_Pcontrol(1, "outer");
    for (int i = 0; i < 3; i++) MPI_Allreduce(MPI_IN_PLACE, a, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Pcontrol(1, "inner");
    for (int i = 0; i < 5; i++) MPI_Bcast(b, 16, MPI_INT, 0, MPI_COMM_WORLD);
    MPILENS_REGION_BEGIN("deep");
    for (int i = 0; i < 2; i++) MPI_Barrier(MPI_COMM_WORLD);
    MPILENS_REGION_END("deep");
    MPI_Pcontrol(-1, "inner");
    MPI_Allreduce(MPI_IN_PLACE, a, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Pcontrol(-1, "outer");
    MPI_Pcontrol(1, "inner");
    for (int i = 0; i < 2; i++) MPI_Allreduce(MPI_IN_PLACE, a, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Pcontrol(-1, "inner");
    MPI_Pcontrol(0);
    for (int i = 0; i < 4; i++) MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
