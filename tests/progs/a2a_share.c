/* a2a_share K [multiple]: the engine's private communicators, shared by user
 * communicators over the same processes in the same order (adaptive mode;
 * 4 ranks).  Each step makes K calls of 64 B per communicator, the
 * communicators of a step interleaved call by call (so two of them learn at
 * the same time over one shared duplicate), checks every received byte, then
 * prints per rank
 *   step=<s> rank=<world rank> private=<n>
 * with n from mpilens_alltoall_private_comms() (dlsym).  Steps:
 *   A  A = duplicate of MPI_COMM_WORLD;
 *   B  B = another duplicate, interleaved with A;
 *   H  H = halves {0,1}, {2,3} and Y = duplicate of H, interleaved;
 *   R  R = MPI_COMM_WORLD reversed (same processes, other order), with A;
 *   a  A freed (R called again);  b  B freed;  h  H and Y freed;  r  R freed.
 * With "multiple" the program asks for MPI_THREAD_MULTIPLE (no sharing then).
 * Exit 1 on a wrong result. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_pattern.h"

typedef int (*count_fn)(void);
static int K, wrank, bad;
static count_fn count;

static void step(const char *name, MPI_Comm *c, int nc)
{
    for (int k = 0; k < K; k++)
        for (int j = 0; j < nc; j++)
            bad |= a2a_exchange(MPI_Alltoall, c[j], 64, k + j);
    printf("step=%s rank=%d private=%d\n", name, wrank, count ? count() : -1);
}

int main(int argc, char **argv)
{
    int provided, P;
    int multiple = argc == 3 && strcmp(argv[2], "multiple") == 0;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (argc < 2 || argc > 3 || (K = atoi(argv[1])) < 1 || P != 4 || (argc == 3 && !multiple) ||
        (multiple && provided < MPI_THREAD_MULTIPLE)) {
        if (wrank == 0)
            fprintf(stderr, "usage: a2a_share K [multiple] (on 4 ranks; multiple needs "
                            "MPI_THREAD_MULTIPLE)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    count = (count_fn)dlsym(RTLD_DEFAULT, "mpilens_alltoall_private_comms");
    MPI_Comm a, b, h, y, r;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    step("A", &a, 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    step("B", (MPI_Comm[]){a, b}, 2);
    MPI_Comm_split(MPI_COMM_WORLD, wrank / 2, wrank, &h);
    MPI_Comm_dup(h, &y);
    step("H", (MPI_Comm[]){h, y}, 2);
    MPI_Comm_split(MPI_COMM_WORLD, 0, P - wrank, &r);
    step("R", (MPI_Comm[]){r, a}, 2);
    MPI_Comm_free(&a);
    step("a", &r, 1);
    MPI_Comm_free(&b);
    step("b", &r, 1);
    MPI_Comm_free(&h);
    MPI_Comm_free(&y);
    step("h", &r, 1);
    MPI_Comm_free(&r);
    printf("step=r rank=%d private=%d\n", wrank, count ? count() : -1);
    fflush(stdout);
    int any;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
