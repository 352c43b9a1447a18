/* The pairwise-exchange family: P-1 steps of PMPI_Sendrecv (XOR partners for
 * powers of two, shift partners otherwise).
 *
 *   pair          plain steps
 *   pair_lb       each step from the second on preceded by a "light barrier":
 *                 a zero-byte ready token from the step's receiver
 *   pair_barrier  each step from the second on preceded by PMPI_Barrier
 *
 * Cost (P-LogP; Nanri et al. 2008, Table 1, corrections in docs/alltoall.md):
 *     pair          (L + g(m) + min(os(m), or(m))) x (P - 1)
 *     pair_lb       pair + max(os(0), or(0)) x (P - 2)
 *     pair_barrier  pair + (L + 2 g(0)) log2 P x (P - 2)
 * (our barrier variant paces every step after the first: P - 2 barriers, not
 * the one printed). */
#include <math.h>

#include "blocks.h"

enum { PAIR_PLAIN, PAIR_LIGHT, PAIR_MPI_BARRIER };

static int pairwise(const args_t *a, int sync)
{
    int P = a->P, r = a->rank, rc;
    int pow2 = (P & (P - 1)) == 0;
    if ((rc = ml_a2a_self_copy(a)) != MPI_SUCCESS)
        return rc;
    for (int s = 1; s < P; s++) {
        int dst = pow2 ? (r ^ s) : (r + s) % P;
        int src = pow2 ? (r ^ s) : (r - s + P) % P;
        if (s > 1 && sync == PAIR_LIGHT) {
            /* ready token flows against the data: I wait until dst is here */
            rc = PMPI_Sendrecv(NULL, 0, MPI_BYTE, src, TAG_TOKEN, NULL, 0, MPI_BYTE, dst,
                               TAG_TOKEN, a->comm, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                return rc;
        } else if (s > 1 && sync == PAIR_MPI_BARRIER) {
            if ((rc = PMPI_Barrier(a->comm)) != MPI_SUCCESS)
                return rc;
        }
        rc = PMPI_Sendrecv(sblk(a, dst), a->sc, a->st, dst, TAG_DATA, rblk(a, src), a->rc,
                           a->rt, src, TAG_DATA, a->comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int ml_a2a_pair(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    return pairwise(&A, PAIR_PLAIN);
}

int ml_a2a_pair_lb(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    return pairwise(&A, PAIR_LIGHT);
}

int ml_a2a_pair_barrier(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    return pairwise(&A, PAIR_MPI_BARRIER);
}

double ml_a2a_cost_pair(int P, const ml_plogp *p)
{
    return (p->L + p->gm + fmin(p->osm, p->orm)) * (P - 1);
}

double ml_a2a_cost_pair_lb(int P, const ml_plogp *p)
{
    return ml_a2a_cost_pair(P, p) + fmax(p->os0, p->or0) * (P > 2 ? P - 2 : 0);
}

double ml_a2a_cost_pair_barrier(int P, const ml_plogp *p)
{
    double lg = P > 1 ? log2((double)P) : 0;
    return ml_a2a_cost_pair(P, p) + (p->L + 2 * p->g0) * lg * (P > 2 ? P - 2 : 0);
}
