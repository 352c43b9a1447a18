/* The flight recorder's labelled corpus (tests/flight_corpus.py, tests/test_flight_corpus.py):
 * small jobs, each healthy or hung in one known way, to be killed and judged.
 *
 *   flight_corpus MODE DIR      (4 ranks)
 *
 * Every rank first makes 3 MPI_Barrier calls and writes its pid to DIR/rank-<r>.pid, then:
 *
 * healthy (they run until killed):
 *   pipeline   a wavefront of blocking MPI_Send/MPI_Recv: rank r receives from r-1,
 *              works 1 ms, sends to r+1 (1 KiB, then 256 KiB every 4th step), then the
 *              same back from rank 3 to rank 0 (tags 1 and 2)
 *   ring       MPI_Irecv from both neighbours, MPI_Isend to both, MPI_Waitall, 1 ms of work
 *   colls      MPI_Allreduce, MPI_Bcast (root: step mod 4), MPI_Barrier, MPI_Allgather,
 *              1 ms of work between them
 * hung (the expected verdict in tests/flight_corpus.py):
 *   ssend2     ranks 0 and 1 MPI_Ssend 64 KiB to each other (tag 3); 2 and 3 MPI_Barrier
 *   cycle3     rank r < 3 MPI_Ssend to (r+1) mod 3 (tag 4); rank 3 MPI_Barrier
 *   recvrecv   ranks 0 and 1 MPI_Recv from each other (tag 5); 2 and 3 MPI_Barrier
 *   anysource  rank 0 MPI_Recv from MPI_ANY_SOURCE (tag 6); the others MPI_Barrier
 *   bcast_allreduce  ranks 0-1 MPI_Bcast (root 0), ranks 2-3 MPI_Allreduce
 *   skip       5 MPI_Allreduce; rank 3 skips the 3rd (then all go to MPI_Finalize)
 *   compute    ranks 0-2 MPI_Barrier; rank 3 computes forever
 *   stopme     the colls loop; rank 1 writes DIR/stop-me and stops itself (SIGSTOP) at
 *              its 400th step (2 s or more: its dumps before are then stale)
 *   loop       the colls loop (the harness kills -9 one rank, or uses a time limit)
 *   abort      rank 2 sends 8 bytes to rank 0, then MPI_Abort(MPI_COMM_WORLD, 42);
 *              the others MPI_Recv (rank 0) / MPI_Barrier
 *   segv       rank 1 sends 8 bytes to rank 0, then writes through a null pointer */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void work_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static void colls_loop(int rank, int size, int stop_at, const char *dir)
{
    double a[16] = {0}, b[16];
    int g[4];
    for (long step = 1;; step++) {
        a[0] = (double)step;
        MPI_Allreduce(a, b, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        work_ms(1);
        MPI_Bcast(a, 16, MPI_DOUBLE, (int)(step % size), MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD);
        work_ms(1);
        if (stop_at && step == stop_at && rank == 1) {
            char p[4200];
            snprintf(p, sizeof p, "%s/stop-me", dir);
            FILE *f = fopen(p, "w");
            if (f) fclose(f);
            raise(SIGSTOP);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *dir = argc > 2 ? argv[2] : ".";
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/rank-%d.pid", dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *pf = fopen(tmp, "w");
    if (!pf || fprintf(pf, "%d\n", (int)getpid()) < 0 || fclose(pf) || rename(tmp, path)) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    static char big[256 * 1024];
    char small[8] = {0};
    if (strcmp(mode, "pipeline") == 0) {
        for (long step = 0;; step++) {
            int n = step % 4 == 3 ? (int)sizeof big : 1024;
            if (rank > 0) MPI_Recv(big, n, MPI_BYTE, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            work_ms(1);
            if (rank < size - 1) MPI_Send(big, n, MPI_BYTE, rank + 1, 1, MPI_COMM_WORLD);
            if (rank < size - 1) MPI_Recv(big, n, MPI_BYTE, rank + 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            work_ms(1);
            if (rank > 0) MPI_Send(big, n, MPI_BYTE, rank - 1, 2, MPI_COMM_WORLD);
        }
    } else if (strcmp(mode, "ring") == 0) {
        static char in[2][4096], out[2][4096];
        int left = (rank + size - 1) % size, right = (rank + 1) % size;
        for (;;) {
            MPI_Request rq[4];
            MPI_Irecv(in[0], 4096, MPI_BYTE, left, 7, MPI_COMM_WORLD, &rq[0]);
            MPI_Irecv(in[1], 4096, MPI_BYTE, right, 8, MPI_COMM_WORLD, &rq[1]);
            MPI_Isend(out[0], 4096, MPI_BYTE, right, 7, MPI_COMM_WORLD, &rq[2]);
            MPI_Isend(out[1], 4096, MPI_BYTE, left, 8, MPI_COMM_WORLD, &rq[3]);
            MPI_Status st[4];
            MPI_Waitall(4, rq, st);
            work_ms(1);
        }
    } else if (strcmp(mode, "colls") == 0 || strcmp(mode, "loop") == 0) {
        colls_loop(rank, size, 0, dir);
    } else if (strcmp(mode, "stopme") == 0) {
        colls_loop(rank, size, 400, dir);
    } else if (strcmp(mode, "ssend2") == 0) {
        if (rank < 2) MPI_Ssend(big, 65536, MPI_BYTE, 1 - rank, 3, MPI_COMM_WORLD);
        else MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "cycle3") == 0) {
        if (rank < 3) MPI_Ssend(big, 1024, MPI_BYTE, (rank + 1) % 3, 4, MPI_COMM_WORLD);
        else MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "recvrecv") == 0) {
        if (rank < 2) MPI_Recv(small, 8, MPI_BYTE, 1 - rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "anysource") == 0) {
        if (rank == 0) MPI_Recv(small, 8, MPI_BYTE, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "bcast_allreduce") == 0) {
        double x = rank, y = 0;
        if (rank < 2) MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else if (strcmp(mode, "skip") == 0) {
        double x = rank, y = 0;
        for (int i = 1; i <= 5; i++)
            if (!(rank == 3 && i == 3)) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else if (strcmp(mode, "compute") == 0) {
        if (rank == 3) {
            volatile double s = 0;
            for (unsigned long i = 0;; i++) s += (double)(i % 7);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "abort") == 0) {
        if (rank == 2) {
            MPI_Send(small, 8, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            MPI_Abort(MPI_COMM_WORLD, 42);
        }
        if (rank == 0) MPI_Recv(small, 8, MPI_BYTE, 2, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "segv") == 0) {
        if (rank == 1) {
            MPI_Send(small, 8, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            volatile int *volatile nowhere = NULL;
            *nowhere = 1;
        }
        if (rank == 0) MPI_Recv(small, 8, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        if (rank == 0) fprintf(stderr, "flight_corpus: unknown mode '%s'\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
