/* The profiler's end-of-run collectives and steps (profile.h), below every
 * finalize step that uses them (the profile's reduction and write, the
 * modules' reductions): waiting for a request while sleeping, a sum of
 * uint64 to rank 0, the finalize steps' marks, the private communicator and
 * its exclusive scan. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.h"

/* This file's state, in one owned struct: the finalize steps' marks and the
 * profiler's private communicator. */
enum { ML_FIN_MARKS = 32 };
static struct {
    int nmark, trace;      /* marks kept; MPILENS_FIN_TRACE set (rank 0 prints them) */
    struct { const char *step; double t; long rss_kb; } mark[ML_FIN_MARKS];
    MPI_Comm comm;         /* MPI_COMM_WORLD's duplicate for the profiler's point-to-point steps */
} FN = {.comm = MPI_COMM_NULL};

static void ml_sum_u64_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] += a[i];
}

void ml_reduce_sum_u64(const uint64_t *in, uint64_t *out, int n)
{
    MPI_Op op;
    PMPI_Op_create(ml_sum_u64_op, 0, &op); /* non-commutative: see ml_pack_op */
    MPI_Request r;
    PMPI_Ireduce(in, out, n, MPI_UINT64_T, op, 0, MPI_COMM_WORLD, &r);
    ml_fin_wait(&r);
    PMPI_Op_free(&op);
}

/* The end-of-run collectives are non-blocking and waited for here: MPI_Test, and
 * after the first 64 tests a 20 us sleep between tests.  A rank that waits for the
 * others then gives its core away instead of polling for it: with more ranks than
 * cores (an oversubscribed node) a blocking collective's busy-polling ranks took
 * the time slices the ranks that could progress needed, and each of the
 * profiler's collectives cost seconds at 64 ranks on 2 cores (docs/scale.md).  On
 * one rank per core the sleeps add at most about 0.1 ms per step of a collective. */
void ml_fin_wait(MPI_Request *r)
{
    int done = 0;
    for (int k = 0;; k++) {
        PMPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (k >= 64) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- the finalize steps: rank 0's clock (and resident memory when traced) at the end of each ---- */

static long ml_rss_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) {
            kb = strtol(line + n, NULL, 10);
            break;
        }
    if (f) fclose(f);
    return kb;
}

/* Starts the marks (every rank; only rank 0 keeps them).  MPILENS_FIN_TRACE=1 has rank 0
 * also read its resident memory at each mark and print the steps (ml_fin_trace). */
void ml_fin_start(void)
{
    const char *v = getenv("MPILENS_FIN_TRACE");
    FN.trace = v && *v && strcmp(v, "0") != 0;
    FN.nmark = 0;
    ml_fin_mark("start");
}

void ml_fin_mark(const char *step)
{
    if (ml_world_rank != 0 || FN.nmark >= ML_FIN_MARKS) return;
    FN.mark[FN.nmark].step = step;
    FN.mark[FN.nmark].t = ml_now_s();
    FN.mark[FN.nmark].rss_kb = FN.trace ? ml_rss_kb("VmRSS:") : -1;
    FN.nmark++;
}

/* rank 0: seconds from the mark `from` (the latest of that name) to now; 0 if there is none */
double ml_fin_since(const char *from)
{
    for (int i = FN.nmark - 1; i >= 0; i--)
        if (strcmp(FN.mark[i].step, from) == 0) return ml_now_s() - FN.mark[i].t;
    return 0.0;
}

/* rank 0, MPILENS_FIN_TRACE set: one line on stderr, each step's seconds (from the mark
 * before it) and rank 0's resident memory at its end, then the peak (VmHWM). */
void ml_fin_trace(void)
{
    if (ml_world_rank != 0 || !FN.trace) return;
    char out[64 * ML_FIN_MARKS + 64];
    size_t k = (size_t)snprintf(out, sizeof out, "mpilens-fin-trace {\"ranks\":%d,\"steps\":[", ml_world_size);
    for (int i = 1; i < FN.nmark && k < sizeof out - 64; i++)
        k += (size_t)snprintf(out + k, sizeof out - k, "%s[\"%s\",%.6f,%ld]", i > 1 ? "," : "", FN.mark[i].step,
                              FN.mark[i].t - FN.mark[i - 1].t, FN.mark[i].rss_kb);
    snprintf(out + k, sizeof out - k, "],\"hwm_kb\":%ld}\n", ml_rss_kb("VmHWM:"));
    fputs(out, stderr);
}

/* ---- the profiler's private communicator and its point-to-point steps ---- */

/* Collective (the first call): MPI_COMM_WORLD's duplicate, made by MPI_Comm_idup and
 * waited for by ml_fin_wait, so that the profiler's messages never match the
 * application's.  Freed by ml_fin_comm_free. */
MPI_Comm ml_fin_comm(void)
{
    if (FN.comm == MPI_COMM_NULL) {
        MPI_Request r;
        PMPI_Comm_idup(MPI_COMM_WORLD, &FN.comm, &r);
        ml_fin_wait(&r);
    }
    return FN.comm;
}

void ml_fin_comm_free(void)
{
    if (FN.comm != MPI_COMM_NULL) PMPI_Comm_free(&FN.comm);
}

/* Collective: the sum of v over the ranks below this one (0 on rank 0) in *excl, and on
 * rank 0 the sum over all ranks in *total, by recursive doubling over the private
 * communicator: ceil(log2 P) steps, in each one message each way with the rank whose
 * number differs in that bit (MPICH's exclusive scan; Open MPI's MPI_Iexscan is a
 * chain of P - 1 steps, rank r waiting for r - 1).  A rank's partial sum covers its
 * aligned block of 2^k ranks; the block below it adds to the prefix.  Rank 0's blocks
 * start at multiples of 2^k, whose partial sums are never cut short by a missing
 * partner (P not a power of two), so its last partial sum is the total. */
void ml_fin_exscan(long long v, long long *excl, long long *total)
{
    MPI_Comm c = ml_fin_comm();
    long long partial = v, below = 0;
    for (int mask = 1; mask > 0 && mask < ml_world_size; mask <<= 1) {
        int peer = ml_world_rank ^ mask;
        if (peer >= ml_world_size) continue;
        long long got = 0, send = partial;
        MPI_Request r[2];
        PMPI_Irecv(&got, 1, MPI_LONG_LONG, peer, 0, c, &r[0]);
        PMPI_Isend(&send, 1, MPI_LONG_LONG, peer, 0, c, &r[1]);
        ml_fin_wait(&r[0]);
        ml_fin_wait(&r[1]);
        if (peer < ml_world_rank) below += got;
        partial += got;
    }
    *excl = below;
    if (total) *total = ml_world_rank == 0 ? partial : 0;
}

double ml_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
