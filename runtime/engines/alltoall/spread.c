/* Simple Spread: every Irecv and every Isend at once, one Waitall.
 *
 * Cost (P-LogP; Nanri et al. 2008, Table 1, as corrected in docs/alltoall.md):
 *     (L + g(m)) x (P - 1)
 * (printed (L x g(m)) x (P - 1): a product of two times is not a time). */
#include "blocks.h"

int ml_a2a_spread(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    int P = A.P, r = A.rank, n = 0;
    MPI_Request *req = (MPI_Request *)ml_a2a_scratch(SCR_REQ, sizeof(MPI_Request) * 2 * (size_t)P);
    if (!req)
        return MPI_ERR_NO_MEM;
    for (int i = 1; i < P; i++) {
        int src = (r - i + P) % P;
        PMPI_Irecv(rblk(&A, src), A.rc, A.rt, src, TAG_DATA, comm, &req[n++]);
    }
    for (int i = 1; i < P; i++) {
        int dst = (r + i) % P;
        PMPI_Isend(sblk(&A, dst), A.sc, A.st, dst, TAG_DATA, comm, &req[n++]);
    }
    int rc = ml_a2a_self_copy(&A);
    int rc2 = ml_a2a_waitall(n, req);
    return rc != MPI_SUCCESS ? rc : rc2;
}

double ml_a2a_cost_spread(int P, const ml_plogp *p)
{
    return (p->L + p->gm) * (P - 1);
}
