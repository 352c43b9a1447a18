/* a2a_groups: the adaptive Alltoall's per-group cache of the zero-byte P-LogP
 * part, on 4 ranks, with the engine linked in (no preload) to read its
 * counter of zero-byte measurements:
 *   1. world duplicate: everybody measures (1 each);
 *   2. every ordered group of 2 or 3 of ranks 0..2 (12 groups): their members
 *      measure each time; ranks 0..2 see 11 groups, more than the cache's 8,
 *      so they forget the world's group; rank 3 keeps it;
 *   3. a new world duplicate: rank 3 holds the group, the others do not, so
 *      all must measure (agreed; without agreement rank 3 would skip its half
 *      of the ping-pongs and the job would hang); a second size on it and a
 *      third world duplicate measure nothing.
 * Every Alltoall's result is checked.  Rank 0 prints
 *   zero_measurements=<r0>,<r1>,<r2>,<r3>
 * Exit 1 on a wrong result. */
#define _DEFAULT_SOURCE
#include "alltoall.h"

#include <stdio.h>
#include <stdlib.h>

#include "a2a_pattern.h"

#include "overrides.h"
extern int ml_plogp_zero_measurements;

static int bad;

static void exchange(MPI_Comm comm, int B, int tag)
{
    bad |= a2a_exchange(mlo_MPI_Alltoall, comm, B, tag);
}

/* comm over the world ranks list[0..n) in that order (others: MPI_COMM_NULL) */
static MPI_Comm group_comm(const int *list, int n)
{
    int r, color = MPI_UNDEFINED, key = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    for (int i = 0; i < n; i++)
        if (list[i] == r)
            color = 0, key = i;
    MPI_Comm c;
    PMPI_Comm_split(MPI_COMM_WORLD, color, key, &c);
    return c;
}

int main(int argc, char **argv)
{
    PMPI_Init(&argc, &argv);
    int P, r;
    PMPI_Comm_size(MPI_COMM_WORLD, &P);
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (P != 4) {
        if (r == 0)
            fprintf(stderr, "a2a_groups needs 4 ranks\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    setenv("MPILENS_ALLTOALL", "adaptive", 1);
    setenv("MPILENS_ALLTOALL_LEARN", "2", 1);
    if (ml_engine_start(&ml_engine_alltoall) != 0)
        PMPI_Abort(MPI_COMM_WORLD, 2);

    MPI_Comm w1;
    PMPI_Comm_dup(MPI_COMM_WORLD, &w1);
    exchange(w1, 64, 1);
    PMPI_Comm_free(&w1);

    static const int groups[12][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1},
                                      {2, 1, 0}, {0, 1, -1}, {1, 0, -1}, {0, 2, -1},
                                      {2, 0, -1}, {1, 2, -1}, {2, 1, -1}};
    for (int g = 0; g < 12; g++) {
        int n = groups[g][2] < 0 ? 2 : 3;
        MPI_Comm c = group_comm(groups[g], n);
        if (c != MPI_COMM_NULL) {
            exchange(c, 64, 10 + g);
            PMPI_Comm_free(&c);
        }
    }

    MPI_Comm w2, w3;
    PMPI_Comm_dup(MPI_COMM_WORLD, &w2);
    exchange(w2, 64, 30);
    exchange(w2, 512, 31);
    PMPI_Comm_dup(MPI_COMM_WORLD, &w3);
    exchange(w3, 64, 32);
    PMPI_Comm_free(&w3);
    PMPI_Comm_free(&w2);

    int counts[4], any;
    PMPI_Gather(&ml_plogp_zero_measurements, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (r == 0)
        printf("zero_measurements=%d,%d,%d,%d%s\n", counts[0], counts[1], counts[2], counts[3],
               any ? " WRONG RESULT" : "");
    PMPI_Finalize();
    return any ? 1 : 0;
}
