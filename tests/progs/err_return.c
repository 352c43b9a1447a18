/* A call that fails moves no bytes (runtime/gen/genwrap.py, timed_body): with
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD every rank makes
 *   3 MPI_Send   to rank P + 5 (no such rank: fails)
 *   1 MPI_Isend  to rank P + 5 (fails)
 *   2 MPI_Bcast  from root P + 1 (fails)
 *   1 MPI_Sendrecv of 10 ints to the right, from the left neighbour (succeeds)
 * and prints "errors=<failed calls> of 6".  The Fortran twin: err_return_f.F90. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int r, P, buf[10] = {0}, in[10], bad = 0;
    double d[8] = {0};
    MPI_Request rq;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < 3; i++)
        bad += MPI_Send(buf, 10, MPI_INT, P + 5, 1, MPI_COMM_WORLD) != MPI_SUCCESS;
    bad += MPI_Isend(buf, 10, MPI_INT, P + 5, 1, MPI_COMM_WORLD, &rq) != MPI_SUCCESS;
    for (int i = 0; i < 2; i++)
        bad += MPI_Bcast(d, 8, MPI_DOUBLE, P + 1, MPI_COMM_WORLD) != MPI_SUCCESS;
    int rc = MPI_Sendrecv(buf, 10, MPI_INT, (r + 1) % P, 2, in, 10, MPI_INT, (r + P - 1) % P, 2,
                          MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (r == 0)
        printf("errors=%d of 6 sendrecv=%s\n", bad, rc == MPI_SUCCESS ? "ok" : "failed");
    MPI_Finalize();
    return 0;
}
