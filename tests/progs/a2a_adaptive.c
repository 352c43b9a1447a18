/* a2a_adaptive CALLS BYTES...: CALLS rounds; each round calls MPI_Alltoall once
 * per block size in BYTES (interleaved, so per-size state is exercised) and
 * verifies every received byte.  Then every rank prints, per size,
 *   rank=<r> bytes=<b> alg=<algorithm or none> learning_calls=<n>
 * from mpilens_alltoall_choice() (found with dlsym in libmpilens.so).
 * Exit 1 on a wrong result. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "a2a_pattern.h"

typedef const char *(*choice_fn)(MPI_Comm, long long, long long *);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (argc < 3) {
        if (r == 0)
            fprintf(stderr, "usage: a2a_adaptive CALLS BYTES...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int calls = atoi(argv[1]), ns = argc - 2, bad = 0;
    for (int it = 0; it < calls; it++) {
        for (int k = 0; k < ns; k++)
            bad |= a2a_exchange(MPI_Alltoall, MPI_COMM_WORLD, atoi(argv[2 + k]), it);
    }
    choice_fn choice = (choice_fn)dlsym(RTLD_DEFAULT, "mpilens_alltoall_choice");
    for (int k = 0; k < ns; k++) {
        long long lc = -1;
        const char *a = choice ? choice(MPI_COMM_WORLD, atoll(argv[2 + k]), &lc) : NULL;
        printf("rank=%d bytes=%s alg=%s learning_calls=%lld\n", r, argv[2 + k], a ? a : "none", lc);
    }
    fflush(stdout);
    int tot = 0;
    MPI_Allreduce(&bad, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return tot ? 1 : 0;
}
