/* a2a_count CALLS BYTES: CALLS calls of MPI_Alltoall on MPI_COMM_WORLD with
 * BYTES per block (every received byte checked), counting what the preloaded
 * library (and through it the adaptive engine) calls underneath: this program
 * defines the PMPI functions below, which the preloaded libmpilens.so finds
 * before the MPI's own (the executable comes first in the lookup order; it
 * exports them: ENABLE_EXPORTS), counts and forwards them (dlsym RTLD_NEXT).
 * Counted only between the first and the last of the program's Alltoall calls
 * (not what MPI_Init and MPI_Finalize do).  Every rank prints
 *   rank=<r> alltoall_user=<PMPI_Alltoall on MPI_COMM_WORLD> alltoall_other=<...
 *   on any other communicator> allreduce=<n> comm_dup=<n> split=<n> bcast=<n>
 *   barrier=<n> p2p=<Send, Isend, Sendrecv> alg=<choice or none>
 * Exit 1 on a wrong result. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "a2a_pattern.h"

static int on; /* counting */
static long n_user, n_other, n_allreduce, n_dup, n_split, n_bcast, n_barrier, n_p2p;

/* the next definition of name: the MPI's own */
#define REAL(name) \
    static __typeof__(name) *real_##name; \
    if (!real_##name) \
        *(void **)&real_##name = dlsym(RTLD_NEXT, #name)

int PMPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                  MPI_Comm comm)
{
    REAL(PMPI_Alltoall);
    if (on) {
        if (comm == MPI_COMM_WORLD)
            n_user++;
        else
            n_other++;
    }
    return real_PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
}

int PMPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    REAL(PMPI_Allreduce);
    n_allreduce += on;
    return real_PMPI_Allreduce(sb, rb, n, t, op, comm);
}

int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *out)
{
    REAL(PMPI_Comm_dup);
    n_dup += on;
    return real_PMPI_Comm_dup(comm, out);
}

int PMPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out)
{
    REAL(PMPI_Comm_split_type);
    n_split += on;
    return real_PMPI_Comm_split_type(comm, type, key, info, out);
}

int PMPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    REAL(PMPI_Bcast);
    n_bcast += on;
    return real_PMPI_Bcast(b, n, t, root, comm);
}

int PMPI_Barrier(MPI_Comm comm)
{
    REAL(PMPI_Barrier);
    n_barrier += on;
    return real_PMPI_Barrier(comm);
}

int PMPI_Send(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    REAL(PMPI_Send);
    n_p2p += on;
    return real_PMPI_Send(b, n, t, dest, tag, comm);
}

int PMPI_Isend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               MPI_Request *req)
{
    REAL(PMPI_Isend);
    n_p2p += on;
    return real_PMPI_Isend(b, n, t, dest, tag, comm, req);
}

int PMPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc,
                  MPI_Datatype rt, int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
    REAL(PMPI_Sendrecv);
    n_p2p += on;
    return real_PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, status);
}

typedef const char *(*choice_fn)(MPI_Comm, long long, long long *);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, bad = 0, tot = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (argc != 3) {
        if (r == 0)
            fprintf(stderr, "usage: a2a_count CALLS BYTES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int calls = atoi(argv[1]), B = atoi(argv[2]);
    on = 1;
    for (int it = 0; it < calls; it++)
        bad |= a2a_exchange(MPI_Alltoall, MPI_COMM_WORLD, B, it);
    on = 0;
    choice_fn choice = (choice_fn)dlsym(RTLD_DEFAULT, "mpilens_alltoall_choice");
    const char *a = choice ? choice(MPI_COMM_WORLD, B, NULL) : NULL;
    printf("rank=%d alltoall_user=%ld alltoall_other=%ld allreduce=%ld comm_dup=%ld split=%ld "
           "bcast=%ld barrier=%ld p2p=%ld alg=%s\n", r, n_user, n_other, n_allreduce, n_dup,
           n_split, n_bcast, n_barrier, n_p2p, a ? a : "none");
    fflush(stdout);
    MPI_Allreduce(&bad, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return tot ? 1 : 0;
}
