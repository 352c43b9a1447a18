/* Bidirectional ring: step i exchanges with rank+i and rank-i at once,
 * ceil((P-1)/2) steps.
 *
 * Cost (P-LogP; Nanri et al. 2008, Table 1, corrected in docs/alltoall.md):
 *     (L + 2 g(m)) x floor(P/2)
 * (printed (P/2 - 1), which predicts zero cost for P = 2). */
#include "blocks.h"

int ml_a2a_ring(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    int P = A.P, r = A.rank, rc;
    if ((rc = ml_a2a_self_copy(&A)) != MPI_SUCCESS)
        return rc;
    for (int i = 1; 2 * i <= P; i++) {
        MPI_Request req[4];
        int n = 0;
        int right = (r + i) % P, left = (r - i + P) % P;
        PMPI_Irecv(rblk(&A, left), A.rc, A.rt, left, TAG_DATA, comm, &req[n++]);
        if (right != left)
            PMPI_Irecv(rblk(&A, right), A.rc, A.rt, right, TAG_DATA, comm, &req[n++]);
        PMPI_Isend(sblk(&A, right), A.sc, A.st, right, TAG_DATA, comm, &req[n++]);
        if (right != left)
            PMPI_Isend(sblk(&A, left), A.sc, A.st, left, TAG_DATA, comm, &req[n++]);
        if ((rc = ml_a2a_waitall(n, req)) != MPI_SUCCESS)
            return rc;
    }
    /* odd P: the loop covered i = 1 .. (P-1)/2 in both directions = all peers */
    return MPI_SUCCESS;
}

double ml_a2a_cost_ring(int P, const ml_plogp *p)
{
    return (p->L + 2 * p->gm) * (P / 2);
}
