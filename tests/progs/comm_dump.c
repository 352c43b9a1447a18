/* A partial profile names the communicators without calling MPI
 * (tests/test_comms.py).  Per rank (2 ranks):
 *
 *   comm_dump PARTIAL_DIR SNAP_DIR
 *
 * names MPI_COMM_WORLD "everyone"; duplicates it (record 2), names the duplicate
 * "first", then "dupw"; duplicates it again (record 3), names that one "gone"
 * and frees it; then sends itself SIGUSR1 (a snapshot), waits until its dump
 * PARTIAL_DIR/rank-R is written and keeps it as SNAP_DIR/snap-rank-R (a hard
 * link: MPI_Finalize removes the partial files).  Then it prints
 * "rank R get_name main M other O": the calls of PMPI_Comm_get_name so far on
 * the main thread and on any other thread (the flight recorder's).
 *
 * PMPI_Comm_get_name is defined here and exported (ENABLE_EXPORTS in
 * tests/CMakeLists.txt), so mpilens's calls of it come here first; it counts
 * them, then calls the MPI's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_t main_thread;
static volatile int on_main, on_other;

int PMPI_Comm_get_name(MPI_Comm comm, char *name, int *len)
{
    static int (*real)(MPI_Comm, char *, int *);
    if (!real) real = (int (*)(MPI_Comm, char *, int *))dlsym(RTLD_NEXT, "PMPI_Comm_get_name");
    if (pthread_equal(pthread_self(), main_thread)) __atomic_add_fetch(&on_main, 1, __ATOMIC_RELAXED);
    else __atomic_add_fetch(&on_other, 1, __ATOMIC_RELAXED);
    return real(comm, name, len);
}

static void snapshot(const char *partial, const char *snap, int rank)
{
    char f[4200], keep[4200];
    snprintf(f, sizeof f, "%s/rank-%d", partial, rank);
    snprintf(keep, sizeof keep, "%s/snap-rank-%d", snap, rank);
    struct stat st;
    raise(SIGUSR1);
    for (int i = 0; i < 3000 && stat(f, &st) != 0; i++) usleep(10000);
    if (link(f, keep) != 0) {
        perror(keep);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

int main(int argc, char **argv)
{
    main_thread = pthread_self();
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3) {
        fprintf(stderr, "usage: comm_dump PARTIAL_DIR SNAP_DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm d, e;
    MPI_Comm_set_name(MPI_COMM_WORLD, "everyone");
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_name(d, "first");
    MPI_Comm_set_name(d, "dupw");
    MPI_Comm_dup(d, &e);
    MPI_Comm_set_name(e, "gone");
    MPI_Comm_free(&e);
    snapshot(argv[1], argv[2], rank);
    printf("rank %d get_name main %d other %d\n", rank, on_main, on_other);
    fflush(stdout);
    MPI_Barrier(d);
    MPI_Finalize();
    return 0;
}
