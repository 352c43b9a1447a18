/* What every Alltoall algorithm shares (blocks.c): the call's arguments
 * normalised (block strides, contiguity, MPI_IN_PLACE packed into scratch),
 * block access and per-thread scratch buffers.
 *
 * All algorithms are correct for any number of ranks, any datatype (derived
 * and non-contiguous included, send and receive types may differ as long as
 * the type signatures match), MPI_IN_PLACE and zero counts.  The engine runs
 * them on a private duplicate of the user's communicator, so their
 * point-to-point traffic can never match the application's receives.  Blocks
 * of non-contiguous types are packed with PMPI_Pack into scratch buffers that
 * are kept per thread and reused (they grow to the largest call, never per
 * call). */
#ifndef MLENS_A2A_BLOCKS_H
#define MLENS_A2A_BLOCKS_H
#include "alltoall.h"

#define TAG_DATA 7001
#define TAG_TOKEN 7002
#define TAG_RD 7100 /* + min(virtual rank pair) */

enum { SCR_INPLACE, SCR_SEND, SCR_WORK0, SCR_WORK1, SCR_PACK0, SCR_PACK1,
       SCR_RECV0, SCR_RECV1, SCR_REQ, SCR_TMP, SCR_N };
/* This thread's scratch buffer slot, at least n bytes; NULL: no memory. */
char *ml_a2a_scratch(int slot, size_t n);

typedef struct {
    const char *sb; int sc; MPI_Datatype st; MPI_Aint sstride; int scontig;
    char *rb;       int rc; MPI_Datatype rt; MPI_Aint rstride; int rcontig;
    size_t bytes;   /* bytes per block */
    int rank, P;
    MPI_Comm comm;
} args_t;

/* Fills a; handles MPI_IN_PLACE by packing recvbuf into scratch. */
int ml_a2a_prep(args_t *a, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
/* Packed bytes of send block i: a pointer into sendbuf when contiguous, else
 * packed into dst (which must hold a->bytes). */
const char *ml_a2a_send_block_bytes(const args_t *a, int i, char *dst);
/* Stores bytes as receive block i. */
void ml_a2a_store_recv_block(const args_t *a, int i, const char *src);
/* This rank's own block, from send to receive buffer. */
int ml_a2a_self_copy(const args_t *a);
int ml_a2a_waitall(int n, MPI_Request *req);

static inline const char *sblk(const args_t *a, int i) { return a->sb + (MPI_Aint)i * a->sstride; }
static inline char *rblk(const args_t *a, int i) { return a->rb + (MPI_Aint)i * a->rstride; }

/* The start of every algorithm: normalised arguments in A; nothing to move, done. */
#define PREP()                                                                       \
    args_t A;                                                                        \
    int rc_ = ml_a2a_prep(&A, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); \
    if (rc_ != MPI_SUCCESS)                                                          \
        return rc_;                                                                  \
    if (A.bytes == 0)                                                                \
        return MPI_SUCCESS;

/* PREP() for the algorithms that stage blocks in scratch (B bytes each); a
 * single rank only copies its own block. */
#define PREP_STAGED()                                                                \
    PREP();                                                                          \
    const size_t B = A.bytes;                                                        \
    if (A.P == 1)                                                                    \
        return ml_a2a_self_copy(&A);

#endif
