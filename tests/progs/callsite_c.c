/* Call sites (tests/test_callsites.py): MPI_Allreduce from three known
 * source lines, a known number of times each, and nothing else between
 * MPI_Init and MPI_Finalize.  The lines are marked SITE-A/B/C; the test
 * finds them in this file.  Built with -g -O0 (tests/CMakeLists.txt).
 * Order of first calls: B, C, A (the overflow test keeps the first two). */
#include <mpi.h>

static int buf[64];

static void site_a(int n)
{
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* SITE-A */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int i = 0; i < 3; i++)
        MPI_Allreduce(MPI_IN_PLACE, buf, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* SITE-B */
    for (int i = 0; i < 5; i++)
        MPI_Allreduce(MPI_IN_PLACE, buf, 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* SITE-C */
    for (int i = 0; i < 7; i++)
        site_a(64); /* CALLER-A */
    MPI_Finalize();
    return 0;
}
