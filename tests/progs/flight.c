/* Jobs that never reach MPI_Finalize: the flight recorder's tests (tests/test_flight.py).
 *
 *   flight MODE [DIR]      (4 ranks)
 *
 * Every rank first makes 3 MPI_Barrier calls and writes its pid to DIR/rank-<r>.pid
 * (when DIR is given), then:
 *   deadlock  ranks 1 and 2 MPI_Ssend 1 MiB to each other with tag 7 (neither posts a
 *             receive: a cycle), the other ranks wait in MPI_Barrier on MPI_COMM_WORLD
 *   mismatch  ranks 0-1 call MPI_Bcast (root 3, 4 ints) on MPI_COMM_WORLD, ranks 2-3
 *             MPI_Barrier
 *   absent    every rank but the last calls MPI_Barrier; the last sleeps outside MPI
 *   subcomm   MPI_Comm_split into even and odd world ranks; the even ranks call
 *             MPI_Allreduce on theirs, world rank 1 MPI_Bcast (root: world rank 3) on theirs,
 *             except world rank 3, which sleeps
 *   loop      MPI_Allreduce every 20 ms; after each one every rank prints
 *             "rank R allreduce N" (N: its calls so far); ends on a signal only
 *   abort     rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3) after an MPI_Send of 8 bytes to
 *             rank 0 (received); the others wait in MPI_Barrier
 *   handler   a SIGTERM handler installed before MPI_Init sets a flag; MPI_Allreduce of
 *             the flag every 20 ms until some rank has it; then rank 0 prints
 *             "handler ran", and each rank whose handler ran prints
 *             "rank R partial <yes|no>" (DIR/../job.prof.partial/rank-R exists) before
 *             MPI_Finalize
 *   isend     ranks 0 and 1 exchange 2 MPI_Isend of 64 bytes each (tags 5 and 6);
 *             rank 0 then waits in MPI_Waitall on an MPI_Irecv from rank 2 (tag 9)
 *             and on its sends; the others wait in MPI_Barrier
 *   crash     rank 2 sends 8 bytes to rank 0 (received), then writes through a null
 *             pointer (SIGSEGV); the others wait in MPI_Barrier */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void on_term(int s) { (void)s; got = 1; }

static void forever(void)
{
    for (;;) sleep(1);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "handler") == 0) signal(SIGTERM, on_term);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2) {
        char path[4096], tmp[4200];
        snprintf(path, sizeof path, "%s/rank-%d.pid", argv[2], rank);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, path)) {
            perror(path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (strcmp(mode, "deadlock") == 0) {
        if (rank == 1 || rank == 2) {
            size_t n = 1 << 20;
            char *buf = calloc(n, 1);
            MPI_Ssend(buf, (int)n, MPI_BYTE, 3 - rank, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)n, MPI_BYTE, 3 - rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else if (strcmp(mode, "mismatch") == 0) {
        int v[4] = {0};
        if (rank < 2) MPI_Bcast(v, 4, MPI_INT, 3, MPI_COMM_WORLD);
        else MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "absent") == 0) {
        if (rank == size - 1) forever();
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "subcomm") == 0) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        double x = rank, y = 0;
        if (rank == 3) forever();
        if (rank % 2 == 0) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, half);
        else MPI_Bcast(&x, 1, MPI_DOUBLE, 1, half);
    } else if (strcmp(mode, "loop") == 0) {
        for (long n = 1;; n++) {
            int a = 1, b = 0;
            MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            printf("rank %d allreduce %ld\n", rank, n);
            fflush(stdout);
            usleep(20000);
        }
    } else if (strcmp(mode, "abort") == 0) {
        char b[8] = {0};
        if (rank == 1) {
            MPI_Send(b, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (rank == 0) MPI_Recv(b, 8, MPI_BYTE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "handler") == 0) {
        for (;;) {
            int mine = got, any = 0;
            MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (any) break;
            usleep(20000);
        }
        if (rank == 0) printf("handler ran\n");
        if (got && argc > 2) {
            char path[4200];
            snprintf(path, sizeof path, "%s/job.prof.partial/rank-%d", argv[2], rank);
            printf("rank %d partial %s\n", rank, access(path, R_OK) == 0 ? "yes" : "no");
        }
        fflush(stdout);
    } else if (strcmp(mode, "isend") == 0) {
        char s[2][64] = {{0}}, r[2][64], x[8];
        MPI_Request rq[5];
        if (rank < 2) {
            int o = 1 - rank;
            MPI_Isend(s[0], 64, MPI_BYTE, o, 5, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(s[1], 64, MPI_BYTE, o, 6, MPI_COMM_WORLD, &rq[1]);
            MPI_Recv(r[0], 64, MPI_BYTE, o, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(r[1], 64, MPI_BYTE, o, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (rank == 0) {
            MPI_Irecv(x, 8, MPI_BYTE, 2, 9, MPI_COMM_WORLD, &rq[2]);
            MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
        } else {
            if (rank == 1) MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else if (strcmp(mode, "crash") == 0) {
        char b[8] = {0};
        if (rank == 2) {
            MPI_Send(b, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD);
            volatile int *volatile nowhere = NULL;
            *nowhere = 1;
        }
        if (rank == 0) MPI_Recv(b, 8, MPI_BYTE, 2, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        if (rank == 0) fprintf(stderr, "usage: flight deadlock|mismatch|absent|subcomm|loop|abort|handler|isend|crash [DIR]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
