/* bigexchange: a bandwidth-bound mini-app, as LS-DYNA's large-message exchanges
 * (seed 004): every step each rank exchanges a large block with both neighbours
 * of a ring (MPI_Sendrecv), then one MPI_Allreduce of a checksum.
 *
 *   bigexchange [MiB per message (4)] [steps (20)] [1: corrupt one element, to see the check fail]
 *
 * Every element received is checked against what its sender must have sent;
 * the last line ends with OK, or FAILED (exit 1).  Bad arguments: exit 2. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t value(int rank, int step, size_t i) { return ((uint64_t)rank << 40) ^ ((uint64_t)step << 24) ^ i; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long mib = argc > 1 ? atol(argv[1]) : 4, steps = argc > 2 ? atol(argv[2]) : 20;
    int corrupt = argc > 3 && atoi(argv[3]) == 1;
    if (mib < 1 || mib > 1024 || steps < 1) {
        if (r == 0) fprintf(stderr, "bigexchange: usage: bigexchange [MiB per message 1..1024] [steps >= 1]\n");
        MPI_Finalize();
        return 2;
    }
    size_t n = (size_t)mib * 1024 * 1024 / sizeof(uint64_t);
    uint64_t *out = malloc(n * sizeof *out), *in = malloc(n * sizeof *in);
    if (!out || !in) MPI_Abort(MPI_COMM_WORLD, 3);
    int right = (r + 1) % p, left = (r + p - 1) % p;
    long bad = 0, all = 0;
    double t0 = MPI_Wtime();
    for (int s = 0; s < steps; s++) {
        for (size_t i = 0; i < n; i++) out[i] = value(r, s, i);
        for (int dir = 0; dir < 2; dir++) { /* to the right, then to the left */
            int to = dir ? left : right, from = dir ? right : left;
            MPI_Sendrecv(out, (int)n, MPI_UINT64_T, to, s, in, (int)n, MPI_UINT64_T, from, s,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (corrupt && r == 0 && s == 0) in[n / 2] ^= 1;
            for (size_t i = 0; i < n; i++) bad += in[i] != value(from, s, i);
        }
        MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (all) break;
    }
    double t = MPI_Wtime() - t0;
    if (r == 0)
        printf("bigexchange: ranks=%d MiB=%ld steps=%ld time=%.3f s wrong=%ld %s\n", p, mib, steps, t, all,
               all ? "FAILED" : "OK");
    free(out);
    free(in);
    MPI_Finalize();
    return all ? 1 : 0;
}
