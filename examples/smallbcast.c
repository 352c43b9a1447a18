/* smallbcast: a latency-bound mini-app, as NICAM's many small broadcasts
 * (seed 004: 8-15 bytes): every step broadcasts 8 to 15 bytes from a rotating
 * root, then one MPI_Allreduce of a 8-byte checksum.
 *
 *   smallbcast [steps (2000)] [1: corrupt one byte, to see the check fail]
 *
 * Every byte received is checked against what the root must have sent; the
 * last line ends with OK, or FAILED (exit 1).  Bad arguments: exit 2. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char value(int root, long step, int i) { return (unsigned char)(root * 31 + step * 7 + i); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long steps = argc > 1 ? atol(argv[1]) : 2000;
    int corrupt = argc > 2 && atoi(argv[2]) == 1;
    if (steps < 1) {
        if (r == 0) fprintf(stderr, "smallbcast: usage: smallbcast [steps >= 1]\n");
        MPI_Finalize();
        return 2;
    }
    unsigned char buf[16];
    long bad = 0, all = 0;
    double t0 = MPI_Wtime();
    for (long s = 0; s < steps; s++) {
        int root = (int)(s % p), len = 8 + (int)(s % 8); /* 8 .. 15 bytes */
        for (int i = 0; i < len; i++) buf[i] = r == root ? value(root, s, i) : 0;
        MPI_Bcast(buf, len, MPI_BYTE, root, MPI_COMM_WORLD);
        if (corrupt && s == 1 && r == p - 1) buf[0] ^= 1;
        for (int i = 0; i < len; i++) bad += buf[i] != value(root, s, i);
        if (s % 100 == 99 || s == steps - 1) {
            MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (all) break;
        }
    }
    double t = MPI_Wtime() - t0;
    if (r == 0)
        printf("smallbcast: ranks=%d steps=%ld time=%.3f s wrong=%ld %s\n", p, steps, t, all,
               all ? "FAILED" : "OK");
    MPI_Finalize();
    return all ? 1 : 0;
}
