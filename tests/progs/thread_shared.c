/* Shared thread slots (MPILENS_MAX_THREADS below the number of calling threads):
 * T threads per rank, each K rounds of MPI_Irecv from the other rank,
 * MPI_Isend of 8 bytes to it, MPI_Wait on both, all on MPI_COMM_WORLD with
 * tag = thread.  MPI request handles freed by one thread's Wait are reused by
 * another thread's Irecv at once: the profile must still count every message.
 * Usage: thread_shared T K  (2 ranks) */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int K, rank;

static void *work(void *arg)
{
    int t = (int)(long)arg, peer = 1 - rank;
    char s[8] = {0}, r[8];
    for (int k = 0; k < K; k++) {
        MPI_Request rr, sr;
        MPI_Status st;
        s[0] = (char)t;
        MPI_Irecv(r, 8, MPI_BYTE, peer, t, MPI_COMM_WORLD, &rr);
        MPI_Isend(s, 8, MPI_BYTE, peer, t, MPI_COMM_WORLD, &sr);
        MPI_Wait(&rr, &st);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        if (r[0] != (char)t || st.MPI_SOURCE != peer) {
            fprintf(stderr, "thread_shared: wrong message\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "thread_shared: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 3) {
        fprintf(stderr, "thread_shared: usage: 2 ranks, thread_shared T K\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int T = atoi(argv[1]);
    K = atoi(argv[2]);
    pthread_t th[64];
    for (int t = 0; t < T && t < 64; t++) pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < T && t < 64; t++) pthread_join(th[t], NULL);
    MPI_Finalize();
    return 0;
}
