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

typedef const char *(*choice_fn)(MPI_Comm, long long, long long *);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P, r;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (argc < 3) {
        if (r == 0)
            fprintf(stderr, "usage: a2a_adaptive CALLS BYTES...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int calls = atoi(argv[1]), ns = argc - 2, bad = 0;
    for (int it = 0; it < calls; it++) {
        for (int k = 0; k < ns; k++) {
            int B = atoi(argv[2 + k]);
            unsigned char *s = malloc((size_t)B * P + 1), *d = malloc((size_t)B * P + 1);
            for (int p = 0; p < P; p++)
                for (int i = 0; i < B; i++)
                    s[(size_t)p * B + i] = (unsigned char)(r * 31 + p * 7 + i + it);
            MPI_Alltoall(s, B, MPI_BYTE, d, B, MPI_BYTE, MPI_COMM_WORLD);
            for (int p = 0; p < P; p++)
                for (int i = 0; i < B; i++)
                    if (d[(size_t)p * B + i] != (unsigned char)(p * 31 + r * 7 + i + it))
                        bad = 1;
            free(s);
            free(d);
        }
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
