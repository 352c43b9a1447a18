/* depth_ns: nanoseconds mpilens adds per MPI_Comm_rank at call-site depths
 * 0, 1, 2 and 4, by this thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time the
 * process spends descheduled on a loaded machine is not counted).  Blocks of
 * PMPI_Comm_rank and MPI_Comm_rank alternate, the depth switched between
 * blocks (mpilens_set_callsites); the call is made four non-inlined frames
 * deep.  Prints one JSON line: per depth the median and quartiles over the
 * blocks of (MPI - PMPI) ns per call.  Built by hand, with and without frame
 * pointers (docs/bench.md, "instr"):
 *
 *   mpicc -O2 -fno-omit-frame-pointer bench/instr/depth_ns.c -o /tmp/depth_ns_fp
 *   mpicc -O2 -fomit-frame-pointer bench/instr/depth_ns.c -o /tmp/depth_ns_nofp
 *   mpirun -np 1 build/openmpi/bin/mpilens-exec /tmp/depth_ns_nofp [BLOCKS [CALLS]]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*setcs_fn)(int);
static volatile int sink;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

__attribute__((noinline)) static void one(int prof)
{
    int r;
    if (prof) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    else PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    sink = r;
}
__attribute__((noinline)) static void f1(int p) { one(p); sink++; }
__attribute__((noinline)) static void f2(int p) { f1(p); sink++; }
__attribute__((noinline)) static void f3(int p) { f2(p); sink++; }

__attribute__((noinline)) static double block(int p, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++) f3(p);
    return (now() - t0) / (double)n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int blocks = argc > 1 ? atoi(argv[1]) : 11;
    long n = argc > 2 ? atol(argv[2]) : 50000;
    void *s = dlsym(RTLD_DEFAULT, "mpilens_set_callsites");
    setcs_fn setcs;
    if (!s || blocks < 1 || n < 1) {
        fprintf(stderr, "depth_ns: run under mpilens with call sites on (MPILENS_CALLSITES >= 1)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memcpy(&setcs, &s, sizeof setcs);
    if (setcs(4) < 0) {
        fprintf(stderr, "depth_ns: call sites are off (MPILENS_CALLSITES=0)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    enum { ND = 4 };
    const int depths[ND] = {0, 1, 2, 4};
    double *d[ND];
    for (int j = 0; j < ND; j++) d[j] = malloc((size_t)blocks * sizeof(double));
    block(0, n / 10); /* warm-up: every site in the tables, every rule cached */
    block(1, n / 10);
    for (int k = 0; k < blocks; k++)
        for (int j = 0; j < ND; j++) {
            double a = block(0, n);
            setcs(depths[j]);
            d[j][k] = (block(1, n) - a) * 1e9;
        }
    printf("{");
    for (int j = 0; j < ND; j++) {
        qsort(d[j], (size_t)blocks, sizeof(double), cmp);
        printf("%s\"depth%d\": {\"median_ns\": %.1f, \"q1_ns\": %.1f, \"q3_ns\": %.1f}", j ? ", " : "", depths[j],
               d[j][blocks / 2], d[j][blocks / 4], d[j][3 * blocks / 4]);
    }
    printf("}\n");
    MPI_Finalize();
    return 0;
}
