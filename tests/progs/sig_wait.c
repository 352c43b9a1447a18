/* Waits for a signal: the signal-forwarding tests (tests/test_signals.py).
 *
 *   sig_wait DIR
 *
 * Every rank writes its pid to DIR/rank-<r>.pid once MPI is up, then takes part
 * in one MPI_Allreduce every 20 ms until some rank has received SIGUSR1; then
 * rank 0 prints "sig_wait: SIGUSR1 received after N rounds" and all ranks
 * finalize (exit 0).  SIGTERM and the like end it the MPI's way. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void on_usr1(int s) { (void)s; got = 1; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, rounds = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: sig_wait DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    signal(SIGUSR1, on_usr1);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/rank-%d.pid", argv[1], rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, path)) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (;;) {
        int mine = got, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) break;
        rounds++;
        usleep(20000);
    }
    if (rank == 0) printf("sig_wait: SIGUSR1 received after %d rounds\n", rounds);
    MPI_Finalize();
    return 0;
}
