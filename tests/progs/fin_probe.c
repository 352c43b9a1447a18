/* The cost of MPI_Finalize (bench/finalize/finalize.py, docs/scale.md): a few steps of
 * a halo exchange with the ring neighbours at distance 1 and 2 (Isend/Irecv/Waitall)
 * and a few collectives, so that a profile has the shape of a small stencil code;
 * then every rank meets at a barrier and times its own MPI_Finalize (CLOCK_MONOTONIC),
 * and prints one line after it:
 *   fin_probe rank=R finalize_s=T hwm_kb=K
 * (K: the process's peak resident memory, VmHWM, read after MPI_Finalize).
 * Arguments: steps (default 20), halo bytes per neighbour (default 8192). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long hwm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20, n = argc > 2 ? atoi(argv[2]) : 8192;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *out = calloc(4, (size_t)n), *in = calloc(4, (size_t)n);
    const int dist[4] = {-2, -1, 1, 2};
    double local = rank, sum = 0.0;
    for (int s = 0; s < steps; s++) {
        MPI_Request req[8];
        int k = 0;
        for (int i = 0; i < 4; i++) {
            int peer = ((rank + dist[i]) % size + size) % size;
            MPI_Irecv(in + (size_t)i * n, n, MPI_CHAR, peer, i, MPI_COMM_WORLD, &req[k++]);
        }
        for (int i = 0; i < 4; i++) {
            int peer = ((rank - dist[i]) % size + size) % size; /* the one that receives with tag i */
            MPI_Isend(out + (size_t)i * n, n, MPI_CHAR, peer, i, MPI_COMM_WORLD, &req[k++]);
        }
        MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (s % 5 == 0) {
            MPI_Bcast(&sum, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    MPI_Finalize();
    double t = now_s() - t0;
    printf("fin_probe rank=%d finalize_s=%.6f hwm_kb=%ld\n", rank, t, hwm_kb());
    free(out);
    free(in);
    return 0;
}
