/* Recursive doubling on a hypercube.  For P not a power of two the hypercube
 * is padded to Q = the next power of two; phantom rank v >= P is emulated by
 * real rank v - Q/2, phantom blocks carry no data and are never sent, so the
 * extra cost is only the extra steps of the hosting ranks.
 *
 * Cost (P-LogP; Nanri et al. 2008, Table 1):
 *     (L + 2 g(2m) log2 P) x log2 P
 * with g(2m) from P-LogP's linear regime, 2 g(m) - g(0) (plogp.c). */
#include <math.h>
#include <string.h>

#include "blocks.h"

/* Virtual rank u at stage mask lm holds slot j = block (s, d) with
 * s = (u & ~lm) | (j & lm), d = (j & ~lm) | (u & lm). */
static int rd_nonempty(int u, int lm, int j, int P)
{
    int s = (u & ~lm) | (j & lm), d = (j & ~lm) | (u & lm);
    return s < P && d < P;
}

int ml_a2a_recdbl(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP_STAGED();
    int P = A.P, r = A.rank, rc;
    int Q = 1;
    while (Q < P)
        Q <<= 1;
    int half = Q / 2;
    int v[2] = {r, -1}, nv = 1;
    if (Q != P && r >= P - half && r < half)
        v[nv++] = r + half;
    char *buf[2], *spk[2], *rpk[2];
    buf[0] = ml_a2a_scratch(SCR_WORK0, B * (size_t)Q);
    buf[1] = nv > 1 ? ml_a2a_scratch(SCR_WORK1, B * (size_t)Q) : NULL;
    spk[0] = ml_a2a_scratch(SCR_PACK0, B * (size_t)half);
    rpk[0] = ml_a2a_scratch(SCR_RECV0, B * (size_t)half);
    spk[1] = nv > 1 ? ml_a2a_scratch(SCR_PACK1, B * (size_t)half) : NULL;
    rpk[1] = nv > 1 ? ml_a2a_scratch(SCR_RECV1, B * (size_t)half) : NULL;
    if (!buf[0] || !spk[0] || !rpk[0] || (nv > 1 && (!buf[1] || !spk[1] || !rpk[1])))
        return MPI_ERR_NO_MEM;
    for (int d = 0; d < P; d++) {
        char *dst = buf[0] + (size_t)d * B;
        const char *src = ml_a2a_send_block_bytes(&A, d, dst);
        if (src != dst)
            memcpy(dst, src, B);
    }
    for (int bit = 1; bit < Q; bit <<= 1) {
        int lm = bit - 1, lmn = 2 * bit - 1;
        MPI_Request req[4];
        int nreq = 0, nrecv[2] = {0, 0}, w[2];
        for (int k = 0; k < nv; k++) {
            int u = v[k];
            w[k] = u ^ bit;
            int host = w[k] < P ? w[k] : w[k] - half;
            if (host == r) {
                if (k == 0) { /* both virtual ranks are mine: swap */
                    char *tb = ml_a2a_scratch(SCR_TMP, B);
                    if (!tb)
                        return MPI_ERR_NO_MEM;
                    for (int j = 0; j < Q; j++) {
                        if ((j & bit) != (w[0] & bit))
                            continue;
                        char *x = buf[0] + (size_t)j * B, *y = buf[1] + (size_t)(j ^ bit) * B;
                        memcpy(tb, x, B);
                        memcpy(x, y, B);
                        memcpy(y, tb, B);
                    }
                }
                nrecv[k] = -1;
                continue;
            }
            int tag = TAG_RD + (u < w[k] ? u : w[k]);
            int ns = 0, nr = 0;
            for (int j = 0; j < Q; j++) {
                if ((j & bit) != (w[k] & bit))
                    continue;
                if (rd_nonempty(u, lm, j, P))
                    memcpy(spk[k] + (size_t)(ns++) * B, buf[k] + (size_t)j * B, B);
                if (rd_nonempty(u, lmn, j, P))
                    nr++;
            }
            nrecv[k] = nr;
            if (nr > 0)
                PMPI_Irecv(rpk[k], (int)(nr * B), MPI_BYTE, host, tag, comm, &req[nreq++]);
            if (ns > 0)
                PMPI_Isend(spk[k], (int)(ns * B), MPI_BYTE, host, tag, comm, &req[nreq++]);
        }
        if ((rc = ml_a2a_waitall(nreq, req)) != MPI_SUCCESS)
            return rc;
        for (int k = 0; k < nv; k++) {
            if (nrecv[k] <= 0)
                continue;
            int n = 0;
            for (int j = 0; j < Q; j++)
                if ((j & bit) == (w[k] & bit) && rd_nonempty(v[k], lmn, j, P))
                    memcpy(buf[k] + (size_t)j * B, rpk[k] + (size_t)(n++) * B, B);
        }
    }
    /* final layout of virtual rank r: slot s = block from rank s */
    for (int s = 0; s < P; s++)
        ml_a2a_store_recv_block(&A, s, buf[0] + (size_t)s * B);
    return MPI_SUCCESS;
}

double ml_a2a_cost_recdbl(int P, const ml_plogp *p)
{
    double lg = P > 1 ? log2((double)P) : 0;
    return (p->L + 2 * p->g2m * lg) * lg;
}
