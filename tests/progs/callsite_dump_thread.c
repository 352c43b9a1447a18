/* Partial profiles while call sites are being added (tests/test_callsites.py).
 *
 *   callsite_dump_thread PARTIAL_DIR      (1 rank, MPILENS_CALLSITES=2)
 *
 * The main thread calls MPI_Comm_rank 40000 times, each from a call site of its
 * own at depth 2 (one of the 200 calls of leaf() x one of the 200 calls of
 * outer()).  Meanwhile a second thread, which makes no MPI call, keeps the
 * flight recorder dumping: SIGUSR1 to itself whenever the last dump
 * (PARTIAL_DIR/rank-0, a new file each time) is written, so that every dump
 * merges the call-site table while sites are added to it; the main thread
 * waits for one more dump after every 100 rows of sites (at least 2 dumps).
 * (The signal goes to that thread: where the MPI had a SIGUSR1 handler before MPI_Init, MPICH's,
 * mpilens's handler waits for the dump before it calls that one.)  Prints
 * "dumps N" (the dumps written), then ends through MPI_Finalize.  It makes no
 * other MPI call. */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile int sink;

/* 200 call sites each: cases 100..299 */
#define T10(X, n) X(n##0) X(n##1) X(n##2) X(n##3) X(n##4) X(n##5) X(n##6) X(n##7) X(n##8) X(n##9)
#define T100(X, n) T10(X, n##0) T10(X, n##1) T10(X, n##2) T10(X, n##3) T10(X, n##4) \
    T10(X, n##5) T10(X, n##6) T10(X, n##7) T10(X, n##8) T10(X, n##9)
#define LEAF(n) case n: MPI_Comm_rank(MPI_COMM_WORLD, &r); sink = n; break;
#define OUTER(n) case n: leaf(j); sink = -n; break;

__attribute__((noinline)) static void leaf(int j)
{
    int r;
    switch (100 + j) {
    T100(LEAF, 1) T100(LEAF, 2)
    }
}

__attribute__((noinline)) static void outer(int i, int j)
{
    switch (100 + i) {
    T100(OUTER, 1) T100(OUTER, 2)
    }
}

static ino_t dump_ino(const char *f)
{
    struct stat st;
    return stat(f, &st) == 0 ? st.st_ino : 0;
}

static char dump_file[4200];
static volatile int done;
static int dumps;

static void *storm(void *arg)
{
    (void)arg;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        ino_t asked = dump_ino(dump_file);
        raise(SIGUSR1); /* this thread's */
        for (int k = 0; k < 30000 && dump_ino(dump_file) == asked; k++) { /* written: the next one */
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
        if (dump_ino(dump_file) != asked) __atomic_add_fetch(&dumps, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: callsite_dump_thread PARTIAL_DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(dump_file, sizeof dump_file, "%s/rank-0", argv[1]);
    sigset_t usr1; /* SIGUSR1 for the storm thread only */
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, storm, NULL) != 0) {
        fprintf(stderr, "callsite_dump_thread: no thread\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < 200; i++) {
        for (int j = 0; j < 200; j++) outer(i, j);
        /* Paced: after every 100 rows, until one more dump is written (10 s at most).  The
         * sites are added in a few ms, faster than a dump; the storm thread asks for the
         * next dump as soon as one is written, so the next rows are added during it. */
        for (int k = 0; i % 100 == 99 && k < 10000 && __atomic_load_n(&dumps, __ATOMIC_ACQUIRE) < (i + 1) / 100; k++) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    printf("dumps %d\n", dumps);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
