/* The seven Alltoall algorithms of the Nanri et al. study (REFERENCE §2), each
 * with the signature of MPI_Alltoall, built on PMPI point-to-point only (plus
 * "mpi", the MPI's own PMPI_Alltoall, as an eighth candidate).
 *
 * All of them are correct for any number of ranks, any datatype (derived and
 * non-contiguous included, send and receive types may differ as long as the
 * type signatures match), MPI_IN_PLACE and zero counts.  The caller
 * (select.c) runs them on a private duplicate of the user's communicator, so
 * their point-to-point traffic can never match the application's receives.
 *
 *   spread       all Irecv + all Isend at once, one Waitall
 *   bruck        Bruck's log-step algorithm (any P: step k sends the blocks
 *                whose rotated index has bit k set; works unchanged for
 *                non-powers of two)
 *   recdbl       recursive doubling on a hypercube.  For P not a power of two
 *                the hypercube is padded to Q = next power of two; phantom
 *                rank v >= P is emulated by real rank v - Q/2, phantom blocks
 *                carry no data and are never sent, so the extra cost is only
 *                the extra steps of the hosting ranks
 *   pair         pairwise exchange, P-1 steps of PMPI_Sendrecv (XOR partner
 *                for powers of two, shift partners otherwise)
 *   pair_lb      pair, each step from the second on preceded by a "light
 *                barrier": a zero-byte ready token from the step's receiver
 *   pair_barrier pair, each step from the second on preceded by PMPI_Barrier
 *   ring         bidirectional ring: step i exchanges with rank±i at once,
 *                ceil((P-1)/2) steps
 *
 * Blocks of non-contiguous types are packed with PMPI_Pack into scratch
 * buffers that are kept per thread and reused (they grow to the largest call,
 * never per call).
 */
#include "coll.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TAG_DATA 7001
#define TAG_TOKEN 7002
#define TAG_RD 7100 /* + min(virtual rank pair) */

const char *const ml_a2a_names[ML_A2A_NALG] = {
    "spread", "bruck", "recdbl", "pair", "pair_lb", "pair_barrier", "ring", "mpi"};

const ml_a2a_fn ml_a2a_algos[ML_A2A_NALG] = {
    ml_a2a_spread, ml_a2a_bruck, ml_a2a_recdbl, ml_a2a_pair,
    ml_a2a_pair_lb, ml_a2a_pair_barrier, ml_a2a_ring, ml_a2a_mpi};

/* The eighth candidate: whatever the MPI library itself does for this call
 * (its own tuned choice per size), on the engine's private communicator. */
int ml_a2a_mpi(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int ml_a2a_find(const char *name)
{
    for (int i = 0; i < ML_A2A_NALG; i++)
        if (strcmp(name, ml_a2a_names[i]) == 0)
            return i;
    return -1;
}

/* ---- scratch buffers: per thread, reused, grown geometrically ---- */
enum { SCR_INPLACE, SCR_SEND, SCR_WORK0, SCR_WORK1, SCR_PACK0, SCR_PACK1,
       SCR_RECV0, SCR_RECV1, SCR_REQ, SCR_TMP, SCR_N };
static _Thread_local struct { char *p; size_t n; } scr[SCR_N];

static char *scratch(int slot, size_t n)
{
    if (n == 0)
        n = 1;
    if (scr[slot].n < n) {
        size_t want = scr[slot].n ? scr[slot].n : 4096;
        while (want < n)
            want *= 2;
        char *p = realloc(scr[slot].p, want);
        if (!p)
            return NULL;
        scr[slot].p = p;
        scr[slot].n = want;
    }
    return scr[slot].p;
}

void ml_a2a_free_scratch(void)
{
    for (int i = 0; i < SCR_N; i++) {
        free(scr[i].p);
        scr[i].p = NULL;
        scr[i].n = 0;
    }
}

/* ---- normalised arguments ---- */
typedef struct {
    const char *sb; int sc; MPI_Datatype st; MPI_Aint sstride; int scontig;
    char *rb;       int rc; MPI_Datatype rt; MPI_Aint rstride; int rcontig;
    size_t bytes;   /* bytes per block */
    int rank, P;
    MPI_Comm comm;
} args_t;

static int is_contig(MPI_Datatype t)
{
    int size;
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_size(t, &size);
    PMPI_Type_get_extent(t, &lb, &ext);
    PMPI_Type_get_true_extent(t, &tlb, &text);
    return lb == 0 && tlb == 0 && ext == (MPI_Aint)size && text == (MPI_Aint)size;
}

int ml_a2a_supported(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, size_t *block_bytes)
{
    int inter = 0, P, rsize, psize;
    if (comm == MPI_COMM_NULL)
        return 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return 0;
    PMPI_Comm_size(comm, &P);
    PMPI_Type_size(recvtype, &rsize);
    size_t bytes = (size_t)recvcount * (size_t)rsize;
    if (sendbuf != MPI_IN_PLACE) {
        int ssize;
        PMPI_Type_size(sendtype, &ssize);
        if ((size_t)sendcount * (size_t)ssize != bytes)
            return 0; /* erroneous call: let the MPI report it */
        PMPI_Pack_size(sendcount, sendtype, comm, &psize);
        if ((size_t)psize != bytes)
            return 0; /* heterogeneous packing: not ours */
    }
    PMPI_Pack_size(recvcount, recvtype, comm, &psize);
    if ((size_t)psize != bytes)
        return 0;
    /* every message, pack position and buffer size we form must fit an int */
    if (bytes * (size_t)P * 2 > (size_t)INT_MAX)
        return 0;
    *block_bytes = bytes;
    return 1;
}

/* Fills a; handles MPI_IN_PLACE by packing recvbuf into scratch. */
static int prep(args_t *a, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    MPI_Aint lb, ext;
    int rsize;
    PMPI_Comm_rank(comm, &a->rank);
    PMPI_Comm_size(comm, &a->P);
    PMPI_Type_size(recvtype, &rsize);
    a->bytes = (size_t)recvcount * (size_t)rsize;
    a->comm = comm;
    a->rb = recvbuf;
    a->rc = recvcount;
    a->rt = recvtype;
    PMPI_Type_get_extent(recvtype, &lb, &ext);
    a->rstride = ext * recvcount;
    a->rcontig = is_contig(recvtype);
    if (sendbuf == MPI_IN_PLACE) {
        size_t total = a->bytes * (size_t)a->P;
        char *tmp = scratch(SCR_INPLACE, total);
        if (!tmp)
            return MPI_ERR_NO_MEM;
        if (a->rcontig) {
            memcpy(tmp, recvbuf, total);
        } else {
            int pos = 0;
            PMPI_Pack(recvbuf, recvcount * a->P, recvtype, tmp, (int)total, &pos, comm);
        }
        a->sb = tmp;
        a->sc = (int)a->bytes;
        a->st = MPI_BYTE;
        a->sstride = (MPI_Aint)a->bytes;
        a->scontig = 1;
    } else {
        a->sb = sendbuf;
        a->sc = sendcount;
        a->st = sendtype;
        PMPI_Type_get_extent(sendtype, &lb, &ext);
        a->sstride = ext * sendcount;
        a->scontig = is_contig(sendtype);
    }
    return MPI_SUCCESS;
}

/* Packed bytes of send block i: a pointer into sendbuf when contiguous, else
 * packed into dst (which must hold a->bytes). */
static const char *send_block_bytes(const args_t *a, int i, char *dst)
{
    const char *src = a->sb + (MPI_Aint)i * a->sstride;
    if (a->scontig)
        return src;
    int pos = 0;
    PMPI_Pack(src, a->sc, a->st, dst, (int)a->bytes, &pos, a->comm);
    return dst;
}

/* Stores bytes as receive block i. */
static void store_recv_block(const args_t *a, int i, const char *src)
{
    char *dst = a->rb + (MPI_Aint)i * a->rstride;
    if (a->rcontig) {
        if (dst != src)
            memcpy(dst, src, a->bytes);
    } else {
        int pos = 0;
        PMPI_Unpack(src, (int)a->bytes, &pos, dst, a->rc, a->rt, a->comm);
    }
}

static int self_copy(const args_t *a)
{
    char *tmp = scratch(SCR_PACK1, a->bytes);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    store_recv_block(a, a->rank, send_block_bytes(a, a->rank, tmp));
    return MPI_SUCCESS;
}

#define PREP()                                                                       \
    args_t A;                                                                        \
    int rc_ = prep(&A, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); \
    if (rc_ != MPI_SUCCESS)                                                          \
        return rc_;                                                                  \
    if (A.bytes == 0)                                                                \
        return MPI_SUCCESS;

/* GCC flags MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) as an overflow */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
static int waitall(int n, MPI_Request *req)
{
    return PMPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}
#pragma GCC diagnostic pop

static const char *sblk(const args_t *a, int i) { return a->sb + (MPI_Aint)i * a->sstride; }
static char *rblk(const args_t *a, int i) { return a->rb + (MPI_Aint)i * a->rstride; }

/* ---------------- Simple Spread ---------------- */
int ml_a2a_spread(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    int P = A.P, r = A.rank, n = 0;
    MPI_Request *req = (MPI_Request *)scratch(SCR_REQ, sizeof(MPI_Request) * 2 * (size_t)P);
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
    int rc = self_copy(&A);
    int rc2 = waitall(n, req);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* ---------------- Pairwise family ---------------- */
enum { PAIR_PLAIN, PAIR_LIGHT, PAIR_MPI_BARRIER };

static int pairwise(const args_t *a, int sync)
{
    int P = a->P, r = a->rank, rc;
    int pow2 = (P & (P - 1)) == 0;
    if ((rc = self_copy(a)) != MPI_SUCCESS)
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

/* ---------------- Ring (bidirectional) ---------------- */
int ml_a2a_ring(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    int P = A.P, r = A.rank, rc;
    if ((rc = self_copy(&A)) != MPI_SUCCESS)
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
        if ((rc = waitall(n, req)) != MPI_SUCCESS)
            return rc;
    }
    /* odd P: the loop covered i = 1 .. (P-1)/2 in both directions = all peers */
    return MPI_SUCCESS;
}

/* ---------------- Bruck ---------------- */
int ml_a2a_bruck(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PREP();
    int P = A.P, r = A.rank, rc;
    size_t B = A.bytes;
    if (P == 1)
        return self_copy(&A);
    char *tmp = scratch(SCR_WORK0, B * (size_t)P);
    char *spk = scratch(SCR_PACK0, B * (size_t)(P / 2 + 1));
    char *rpk = scratch(SCR_RECV0, B * (size_t)(P / 2 + 1));
    if (!tmp || !spk || !rpk)
        return MPI_ERR_NO_MEM;
    /* phase 1: rotate, tmp[i] = block for (r+i) mod P */
    for (int i = 0; i < P; i++) {
        char *dst = tmp + (size_t)i * B;
        const char *src = send_block_bytes(&A, (r + i) % P, dst);
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
        store_recv_block(&A, (r - i + P) % P, tmp + (size_t)i * B);
    return MPI_SUCCESS;
}

/* ---------------- Recursive doubling ---------------- */
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
    PREP();
    int P = A.P, r = A.rank, rc;
    size_t B = A.bytes;
    if (P == 1)
        return self_copy(&A);
    int Q = 1;
    while (Q < P)
        Q <<= 1;
    int half = Q / 2;
    int v[2] = {r, -1}, nv = 1;
    if (Q != P && r >= P - half && r < half)
        v[nv++] = r + half;
    char *buf[2], *spk[2], *rpk[2];
    buf[0] = scratch(SCR_WORK0, B * (size_t)Q);
    buf[1] = nv > 1 ? scratch(SCR_WORK1, B * (size_t)Q) : NULL;
    spk[0] = scratch(SCR_PACK0, B * (size_t)half);
    rpk[0] = scratch(SCR_RECV0, B * (size_t)half);
    spk[1] = nv > 1 ? scratch(SCR_PACK1, B * (size_t)half) : NULL;
    rpk[1] = nv > 1 ? scratch(SCR_RECV1, B * (size_t)half) : NULL;
    if (!buf[0] || !spk[0] || !rpk[0] || (nv > 1 && (!buf[1] || !spk[1] || !rpk[1])))
        return MPI_ERR_NO_MEM;
    for (int d = 0; d < P; d++) {
        char *dst = buf[0] + (size_t)d * B;
        const char *src = send_block_bytes(&A, d, dst);
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
                    char *tb = scratch(SCR_TMP, B);
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
        if ((rc = waitall(nreq, req)) != MPI_SUCCESS)
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
        store_recv_block(&A, s, buf[0] + (size_t)s * B);
    return MPI_SUCCESS;
}
