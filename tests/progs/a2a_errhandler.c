/* a2a_errhandler: errors inside the engine's traffic reach the error handler of
 * the user's communicator (2 ranks; run with a forced algorithm, e.g. pair).
 * A, a world duplicate with the default MPI_ERRORS_ARE_FATAL, makes one good
 * call (with sharing, its private duplicate is the one B then uses).  B, another
 * duplicate, gets a counting error handler; then rank 0 sends 2 ints per block
 * and rank 1 expects 1 (an erroneous call that MPI reports as MPI_ERR_TRUNCATE
 * on rank 1).  Each rank prints
 *   rank=<r> class=<error class of the call's result> calls=<handler calls>
 *   handler_comm=<ident|other|none> handler_class=<class seen by the handler>
 * Exit 1 if the good call's data is wrong. */
#include <mpi.h>
#include <stdio.h>

static MPI_Comm B;
static int calls, seen_class = -1, ident = -1;

static void handler(MPI_Comm *comm, int *code, ...)
{
    int res;
    calls++;
    MPI_Error_class(*code, &seen_class);
    MPI_Comm_compare(*comm, B, &res);
    ident = res == MPI_IDENT;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, P, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (P != 2) {
        if (r == 0)
            fprintf(stderr, "usage: a2a_errhandler (on 2 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm A;
    MPI_Comm_dup(MPI_COMM_WORLD, &A);
    int s[4] = {10 * r, 10 * r + 1, 10 * r + 2, 10 * r + 3}, d[4] = {-1, -1, -1, -1};
    MPI_Alltoall(s, 1, MPI_INT, d, 1, MPI_INT, A);
    bad = d[0] != r || d[1] != 10 + r; /* block r of ranks 0 and 1 */
    MPI_Comm_dup(MPI_COMM_WORLD, &B);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(B, eh);
    int n = r == 0 ? 2 : 1;
    int rc = MPI_Alltoall(s, n, MPI_INT, d, n, MPI_INT, B), cls;
    MPI_Error_class(rc, &cls);
    printf("rank=%d class=%s calls=%d handler_comm=%s handler_class=%s\n", r,
           cls == MPI_SUCCESS ? "success" : cls == MPI_ERR_TRUNCATE ? "truncate" : "other", calls,
           ident < 0 ? "none" : ident ? "ident" : "other",
           seen_class < 0 ? "none" : seen_class == MPI_ERR_TRUNCATE ? "truncate" : "other");
    fflush(stdout);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&B);
    MPI_Comm_free(&A);
    MPI_Finalize();
    return bad;
}
