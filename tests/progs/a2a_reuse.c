/* a2a_reuse K: choices learned on one communicator, reused by later ones
 * (adaptive mode; 4 ranks).  Each step makes K calls per block size on a new
 * communicator, checks every received byte and prints, per rank and size,
 *   step=<s> rank=<world rank> bytes=<b> alg=<algorithm or none> learning_calls=<n>
 * from mpilens_alltoall_choice() (dlsym).  Steps:
 *   A  duplicate of MPI_COMM_WORLD, 64 B;
 *   B  another duplicate, 64 B and 100 B (the same power-of-two range);
 *   H  halves {0,1} and {2,3}: the first 64 B, the second 1024 B;
 *   Y  duplicates of the halves, each its half's size;
 *   X  crossed pairs {0,2} and {1,3}, 64 B and 1024 B: in each pair one rank
 *      holds a choice for the size and the other not.
 * Exit 1 on a wrong result. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "a2a_pattern.h"

typedef const char *(*choice_fn)(MPI_Comm, long long, long long *);
static int K, wrank, bad;
static choice_fn choice;

static void step(const char *name, MPI_Comm c, const int *sizes, int ns)
{
    for (int k = 0; k < K; k++)
        for (int j = 0; j < ns; j++)
            bad |= a2a_exchange(MPI_Alltoall, c, sizes[j], k);
    for (int j = 0; j < ns; j++) {
        long long lc = -1;
        const char *a = choice ? choice(c, sizes[j], &lc) : NULL;
        printf("step=%s rank=%d bytes=%d alg=%s learning_calls=%lld\n", name, wrank, sizes[j],
               a ? a : "none", lc);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (argc != 2 || (K = atoi(argv[1])) < 1 || P != 4) {
        if (wrank == 0)
            fprintf(stderr, "usage: a2a_reuse K (on 4 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    choice = (choice_fn)dlsym(RTLD_DEFAULT, "mpilens_alltoall_choice");
    MPI_Comm a, b, h, x, y;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    step("A", a, (int[]){64}, 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    step("B", b, (int[]){64, 100}, 2);
    int half = wrank / 2, mine[1] = {half ? 1024 : 64};
    MPI_Comm_split(MPI_COMM_WORLD, half, wrank, &h);
    step("H", h, mine, 1);
    MPI_Comm_dup(h, &y);
    step("Y", y, mine, 1);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &x);
    step("X", x, (int[]){64, 1024}, 2);
    MPI_Comm_free(&y);
    MPI_Comm_free(&x);
    MPI_Comm_free(&h);
    MPI_Comm_free(&b);
    MPI_Comm_free(&a);
    fflush(stdout);
    int any;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
