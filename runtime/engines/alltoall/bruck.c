/* Bruck's log-step algorithm: rotate, ceil(log2 P) steps (step k sends the
 * blocks whose rotated index has bit k set; unchanged for non-powers of two),
 * rotate back.
 *
 * Cost (P-LogP; Nanri et al. 2008, Table 1):
 *     (L + 2 g(m) (log2 P + 1)) x log2 P */
#include <math.h>
#include <string.h>

#include "blocks.h"

int ml_a2a_bruck(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP_STAGED();
    int P = A.P, r = A.rank, rc;
    char *tmp = ml_a2a_scratch(SCR_WORK0, B * (size_t)P);
    char *spk = ml_a2a_scratch(SCR_PACK0, B * (size_t)(P / 2 + 1));
    char *rpk = ml_a2a_scratch(SCR_RECV0, B * (size_t)(P / 2 + 1));
    if (!tmp || !spk || !rpk)
        return MPI_ERR_NO_MEM;
    /* phase 1: rotate, tmp[i] = block for (r+i) mod P */
    for (int i = 0; i < P; i++) {
        char *dst = tmp + (size_t)i * B;
        const char *src = ml_a2a_send_block_bytes(&A, (r + i) % P, dst);
        if (src != dst)
            memcpy(dst, src, B);
    }
    /* phase 2: log steps */
    for (int k = 1; k < P; k <<= 1) {
        int n = 0;
        for (int i = 1; i < P; i++)
            if (i & k)
                memcpy(spk + (size_t)(n++) * B, tmp + (size_t)i * B, B);
        rc = PMPI_Sendrecv(spk, (int)(n * B), MPI_BYTE, (r + k) % P, TAG_DATA, rpk,
                           (int)(n * B), MPI_BYTE, (r - k + P) % P, TAG_DATA, comm,
                           MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        n = 0;
        for (int i = 1; i < P; i++)
            if (i & k)
                memcpy(tmp + (size_t)i * B, rpk + (size_t)(n++) * B, B);
    }
    /* phase 3: inverse rotation, tmp[i] came from rank (r-i) mod P */
    for (int i = 0; i < P; i++)
        ml_a2a_store_recv_block(&A, (r - i + P) % P, tmp + (size_t)i * B);
    return MPI_SUCCESS;
}

double ml_a2a_cost_bruck(int P, const ml_plogp *p)
{
    double lg = P > 1 ? log2((double)P) : 0;
    return (p->L + 2 * p->gm * (lg + 1)) * lg;
}
