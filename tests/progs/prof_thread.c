/* MPI_THREAD_MULTIPLE: T threads per rank call MPI concurrently, each on its own
 * duplicate of MPI_COMM_WORLD: K ring Sendrecv of 8 bytes and K Isend/Irecv/Waitall
 * of 4 ints.  Usage: prof_thread T K */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int K, rank, size;
static MPI_Comm comms[64];

static void *work(void *arg)
{
    int t = (int)(long)arg, right = (rank + 1) % size, left = (rank - 1 + size) % size;
    char s[8] = {0}, r[8];
    int a[4] = {rank, t, rank, t}, b[4];
    for (int k = 0; k < K; k++) {
        MPI_Sendrecv(s, 8, MPI_BYTE, right, t, r, 8, MPI_BYTE, left, t, comms[t], MPI_STATUS_IGNORE);
        MPI_Request rq[2];
        MPI_Irecv(b, 4, MPI_INT, left, 100 + t, comms[t], &rq[0]);
        MPI_Isend(a, 4, MPI_INT, right, 100 + t, comms[t], &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        if (b[0] != left || b[1] != t) {
            fprintf(stderr, "prof_thread: wrong data\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "prof_thread: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    int T = argc > 2 ? atoi(argv[1]) : 4;
    K = argc > 2 ? atoi(argv[2]) : 100;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int t = 0; t < T; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t th[64];
    for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) MPI_Comm_free(&comms[t]);
    MPI_Finalize();
    return 0;
}
