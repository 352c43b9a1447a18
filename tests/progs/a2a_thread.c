/* a2a_thread T R K BYTES...: MPI_THREAD_MULTIPLE, T threads per rank call the
 * library's MPI_Alltoall at the same time, each on communicators of its own.
 * Thread t owns a duplicate of MPI_COMM_WORLD (made by the main thread); each
 * of its R rounds duplicates that, makes K calls per block size in BYTES
 * (interleaved), checks every received int and frees the communicator.  So
 * the engine's per-process tables (live states, finished records, the kept
 * zero-byte P-LogP parts) are created, used and released concurrently.
 * Prints "a2a_thread: rank=<r> calls=<n> mismatches=<m>"; exit 1 on a wrong
 * result. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int T, R, K, ns, rank, P;
static int bytes[16];
static MPI_Comm own[64];
static long calls[64], bad[64];

static int value(int src, int dst, int i, int t, int round, int k)
{
    return src * 1000003 + dst * 1009 + i * 13 + t * 101 + round * 7 + k;
}

static void *work(void *arg)
{
    int t = (int)(long)arg;
    for (int round = 0; round < R; round++) {
        MPI_Comm c;
        MPI_Comm_dup(own[t], &c);
        for (int k = 0; k < K; k++)
            for (int j = 0; j < ns; j++) {
                int n = bytes[j] / (int)sizeof(int);
                int *s = malloc(sizeof(int) * ((size_t)n * P + 1));
                int *d = malloc(sizeof(int) * ((size_t)n * P + 1));
                for (int p = 0; p < P; p++)
                    for (int i = 0; i < n; i++)
                        s[(size_t)p * n + i] = value(rank, p, i, t, round, k);
                MPI_Alltoall(s, n, MPI_INT, d, n, MPI_INT, c);
                calls[t]++;
                for (int p = 0; p < P; p++)
                    for (int i = 0; i < n; i++)
                        if (d[(size_t)p * n + i] != value(p, rank, i, t, round, k))
                            bad[t]++;
                free(s);
                free(d);
            }
        MPI_Comm_free(&c);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "a2a_thread: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    if (argc < 5 || (T = atoi(argv[1])) < 1 || T > 64 || (R = atoi(argv[2])) < 1 ||
        (K = atoi(argv[3])) < 1 || argc - 4 > 16) {
        if (rank == 0)
            fprintf(stderr, "usage: a2a_thread T(1-64) R K BYTES... (at most 16 sizes)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ns = argc - 4;
    for (int j = 0; j < ns; j++)
        bytes[j] = atoi(argv[4 + j]);
    for (int t = 0; t < T; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &own[t]);
    pthread_t th[64];
    for (int t = 0; t < T; t++)
        pthread_create(&th[t], NULL, work, (void *)(long)t);
    long n = 0, m = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        n += calls[t];
        m += bad[t];
    }
    for (int t = 0; t < T; t++)
        MPI_Comm_free(&own[t]);
    printf("a2a_thread: rank=%d calls=%ld mismatches=%ld\n", rank, n, m);
    fflush(stdout);
    long tot = 0;
    MPI_Allreduce(&m, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return tot ? 1 : 0;
}
