/* A partial profile taken while a region is open must leave it open
 * (tests/test_regions.py).  Per rank (2 ranks):
 *
 *   region_dump PARTIAL_DIR SNAP_DIR
 *
 * opens the region "phase" (mpilens_region_begin), makes 1 MPI_Barrier, sends
 * itself SIGUSR1 (a snapshot), waits until its dump PARTIAL_DIR/rank-R is
 * written and keeps it as SNAP_DIR/snap-rank-R (a hard link: MPI_Finalize
 * removes the partial files), then makes 10 more MPI_Barrier, sleeps 0.3 s,
 * closes "phase" and ends.  So the snapshot shows "phase" with 1 MPI_Barrier
 * and the profile with 11, and a wall time of at least 0.3 s. */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mpilens.h"

/* SIGUSR1 to this process, then the dump it writes kept as snap/snap-rank-R */
static void snapshot(const char *partial, const char *snap, int rank)
{
    char f[4200], keep[4200];
    snprintf(f, sizeof f, "%s/rank-%d", partial, rank);
    snprintf(keep, sizeof keep, "%s/snap-rank-%d", snap, rank);
    struct stat st;
    if (stat(f, &st) == 0) {
        fprintf(stderr, "region_dump: %s exists before the snapshot\n", f);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    raise(SIGUSR1);
    for (int i = 0; i < 3000 && stat(f, &st) != 0; i++) usleep(10000);
    if (link(f, keep) != 0) {
        perror(keep);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3) {
        fprintf(stderr, "usage: region_dump PARTIAL_DIR SNAP_DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPILENS_REGION_BEGIN("phase");
    MPI_Barrier(MPI_COMM_WORLD);
    snapshot(argv[1], argv[2], rank);
    for (int i = 0; i < 10; i++) MPI_Barrier(MPI_COMM_WORLD);
    struct timespec ts = {0, 300000000L};
    nanosleep(&ts, NULL);
    MPILENS_REGION_END("phase");
    MPI_Finalize();
    return 0;
}
