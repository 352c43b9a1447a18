/* Test program for `mpilens advise`: one communication pattern per mode, with
 * message counts and sizes the tests compute themselves.
 *
 *   advise_app p2p       ITERS SIZE      ring: per iteration MPI_Isend SIZE bytes to rank+1,
 *                                        MPI_Irecv from rank-1, MPI_Waitall (2 requests)
 *   advise_app alltoall  ITERS SIZE      ITERS MPI_Alltoall of SIZE-byte blocks (MPI_BYTE)
 *   advise_app imbalance ITERS US        per iteration the last rank sleeps US microseconds
 *                                        (or 20 x its longest MPI_Allreduce so far, the first
 *                                        left out, when that is longer, at most 0.5 s: under
 *                                        load its lateness stays far above the calls' own
 *                                        time), then every rank calls MPI_Allreduce (1 double)
 *   advise_app compute   ITERS US        per iteration every rank sleeps US microseconds,
 *                                        then MPI_Allreduce (1 double)
 *   advise_app pairs     ITERS SIZE      heavy pairs (2k, 2k+1): per iteration each rank sends
 *                                        SIZE bytes to its partner (MPI_Sendrecv); then once
 *                                        8 bytes to rank+2 and from rank-2 (MPI_Sendrecv);
 *                                        an even number of ranks
 *   advise_app subcomm   ITERS US        ranks 0 .. size/2-1 only: per iteration sleep US
 *                                        microseconds, then MPI_Bcast (1 int) on their
 *                                        sub-communicator; the other ranks call no collective
 *
 *   advise_app mixed     ITERS SIZE      per iteration MPI_Allreduce of 1 double and of SIZE / 8
 *                                        doubles (two sizes, two call sites)
 *   advise_app alltoallv ITERS SIZE HEAVY  ITERS MPI_Alltoallv: rank 0 sends HEAVY x SIZE bytes
 *                                        to every rank, the others SIZE bytes (HEAVY 1: even)
 *   advise_app pipeline  ITERS US        per iteration a forward sweep (rank r: MPI_Recv 8 bytes
 *                                        from r-1, sleep US, MPI_Send to r+1) and a backward
 *                                        sweep (from r+1, to r-1): a wavefront
 *   advise_app poll      ITERS US [MIN]  per iteration rank 0 posts MPI_Irecv from every other
 *                                        rank and calls MPI_Testany until all arrived and at
 *                                        least MIN times (default 0: the count does not hang on
 *                                        how often a loaded machine lets it spin); the
 *                                        others sleep US microseconds, then MPI_Send 8 bytes
 *
 * Every received byte is checked; a wrong one stops the job with status 3. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void nap(double us)
{
    struct timespec ts = {(time_t)(us / 1e6), (long)((us - 1e6 * (double)(long)(us / 1e6)) * 1e3)};
    nanosleep(&ts, NULL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check(int ok, const char *what, int rank)
{
    if (!ok) {
        fprintf(stderr, "advise_app: rank %d: wrong data in %s\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: advise_app p2p|alltoall|imbalance|compute ITERS SIZE|US\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    long iters = atol(argv[2]), arg = atol(argv[3]);
    if (strcmp(mode, "p2p") == 0) {
        unsigned char *sb = malloc((size_t)arg + 1), *rb = malloc((size_t)arg + 1);
        int right = (rank + 1) % size, left = (rank - 1 + size) % size;
        for (long it = 0; it < iters; it++) {
            MPI_Request req[2];
            MPI_Status st[2];
            for (long i = 0; i < arg; i++)
                sb[i] = (unsigned char)(rank + it + i);
            MPI_Irecv(rb, (int)arg, MPI_BYTE, left, 7, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(sb, (int)arg, MPI_BYTE, right, 7, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, st);
            for (long i = 0; i < arg; i++)
                check(rb[i] == (unsigned char)(left + it + i), "p2p", rank);
        }
        free(sb);
        free(rb);
    } else if (strcmp(mode, "alltoall") == 0) {
        size_t n = (size_t)arg * (size_t)size;
        unsigned char *sb = malloc(n + 1), *rb = malloc(n + 1);
        for (long it = 0; it < iters; it++) {
            for (size_t i = 0; i < n; i++)  /* block for rank d: byte i of it */
                sb[i] = (unsigned char)(rank * 31 + (long)(i / (size_t)arg) * 7 + it + (long)i);
            MPI_Alltoall(sb, (int)arg, MPI_BYTE, rb, (int)arg, MPI_BYTE, MPI_COMM_WORLD);
            for (size_t i = 0; i < n; i++) {
                long src = (long)(i / (size_t)arg), off = (long)(i % (size_t)arg);
                check(rb[i] == (unsigned char)(src * 31 + rank * 7 + it + rank * arg + off),
                      "alltoall", rank);
            }
        }
        free(sb);
        free(rb);
    } else if (strcmp(mode, "pairs") == 0) {
        /* optional SMALL: that many 8 B exchanges with the partner after each large one */
        long small = argc > 4 ? atol(argv[4]) : 0;
        unsigned char *sb = malloc((size_t)arg + 8), *rb = malloc((size_t)arg + 8);
        int partner = rank ^ 1;
        for (long it = 0; it < iters; it++) {
            for (long i = 0; i < arg; i++)
                sb[i] = (unsigned char)(rank + it + i);
            MPI_Sendrecv(sb, (int)arg, MPI_BYTE, partner, 5, rb, (int)arg, MPI_BYTE, partner, 5,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (long i = 0; i < arg; i++)
                check(rb[i] == (unsigned char)(partner + it + i), "pairs", rank);
            for (long j = 0; j < small; j++) {
                memset(sb, (int)(rank + j), 8);
                MPI_Sendrecv(sb, 8, MPI_BYTE, partner, 4, rb, 8, MPI_BYTE, partner, 4,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                check(rb[7] == (unsigned char)(partner + j), "pairs", rank);
            }
        }
        int up = (rank + 2) % size, down = (rank - 2 + size) % size;
        memset(sb, rank, 8);
        MPI_Sendrecv(sb, 8, MPI_BYTE, up, 6, rb, 8, MPI_BYTE, down, 6, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        check(rb[0] == (unsigned char)down && rb[7] == (unsigned char)down, "pairs", rank);
        free(sb);
        free(rb);
    } else if (strcmp(mode, "imbalance") == 0 || strcmp(mode, "compute") == 0) {
        int late = strcmp(mode, "imbalance") == 0;
        double worst = 0; /* the longest MPI_Allreduce so far but the first, s */
        for (long it = 0; it < iters; it++) {
            double us = (double)arg;
            if (late && 20e6 * worst > us)
                us = 20e6 * worst < 5e5 ? 20e6 * worst : 5e5;
            if (!late || rank == size - 1)
                nap(us);
            double x = rank + 1, y = 0, t0 = now();
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (it > 0 && now() - t0 > worst) /* not the first: the MPI's set-up */
                worst = now() - t0;
            check(y == size * (size + 1) / 2.0, "allreduce", rank);
        }
    } else if (strcmp(mode, "mixed") == 0) {
        long n = arg / 8 > 0 ? arg / 8 : 1;
        double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
        for (long i = 0; i < n; i++)
            x[i] = rank + 1;
        for (long it = 0; it < iters; it++) {
            double a = rank + 1, b = 0;
            MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            check(b == size * (size + 1) / 2.0, "mixed", rank);
            MPI_Allreduce(x, y, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            check(y[n - 1] == size * (size + 1) / 2.0, "mixed", rank);
        }
        free(x);
        free(y);
    } else if (strcmp(mode, "alltoallv") == 0) {
        long heavy = argc > 4 ? atol(argv[4]) : 1;
        int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
        int *rc = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
        int mine = (int)(rank == 0 ? heavy * arg : arg), st = 0, rt = 0;
        for (int p = 0; p < size; p++) {
            sc[p] = mine;
            sd[p] = st;
            st += mine;
            rc[p] = (int)(p == 0 ? heavy * arg : arg);
            rd[p] = rt;
            rt += rc[p];
        }
        unsigned char *sb = malloc((size_t)st + 1), *rb = malloc((size_t)rt + 1);
        for (long it = 0; it < iters; it++) {
            for (int i = 0; i < st; i++)
                sb[i] = (unsigned char)(rank + it + i / (mine ? mine : 1));
            MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
            for (int p = 0; p < size; p++)
                for (int i = 0; i < rc[p]; i++)
                    check(rb[rd[p] + i] == (unsigned char)(p + it + rank), "alltoallv", rank);
        }
        free(sb);
        free(rb);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
    } else if (strcmp(mode, "pipeline") == 0) {
        for (long it = 0; it < iters; it++) {
            for (int dir = 1; dir >= -1; dir -= 2) {
                int up = rank - dir, down = rank + dir;
                long v = it * 2 + (dir < 0);
                if (up >= 0 && up < size) {
                    long got = -1;
                    MPI_Recv(&got, 1, MPI_LONG, up, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    check(got == v, "pipeline", rank);
                }
                nap((double)arg);
                if (down >= 0 && down < size)
                    MPI_Send(&v, 1, MPI_LONG, down, 9, MPI_COMM_WORLD);
            }
        }
    } else if (strcmp(mode, "poll") == 0) {
        long *got = malloc(sizeof(long) * (size_t)size), least = argc > 4 ? atol(argv[4]) : 0;
        MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)size);
        for (long it = 0; it < iters; it++) {
            if (rank == 0) {
                for (int p = 1; p < size; p++)
                    MPI_Irecv(&got[p], 1, MPI_LONG, p, 11, MPI_COMM_WORLD, &req[p - 1]);
                for (long left = size - 1, n = 0; left > 0 || n < least; n++) {
                    int idx, flag;
                    MPI_Testany(size - 1, req, &idx, &flag, MPI_STATUS_IGNORE);
                    if (flag && idx != MPI_UNDEFINED)
                        left--;
                }
                for (int p = 1; p < size; p++)
                    check(got[p] == it * 100 + p, "poll", rank);
            } else {
                nap((double)arg);
                long v = it * 100 + rank;
                MPI_Send(&v, 1, MPI_LONG, 0, 11, MPI_COMM_WORLD);
            }
        }
        free(got);
        free(req);
    } else if (strcmp(mode, "subcomm") == 0) {
        MPI_Comm half;
        int low = rank < size / 2;
        MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half);
        for (long it = 0; low && it < iters; it++) {
            nap((double)arg);
            int v = rank == 0 ? (int)it + 7 : -1;
            MPI_Bcast(&v, 1, MPI_INT, 0, half);
            check(v == (int)it + 7, "bcast", rank);
        }
        MPI_Comm_free(&half);
    } else {
        if (rank == 0)
            fprintf(stderr, "advise_app: unknown mode '%s'\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
