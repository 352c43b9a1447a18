/* What every Alltoall algorithm shares (blocks.h). */
#include "blocks.h"

#include <limits.h>
#include <string.h>

#include "scratch.h"

/* ---- scratch buffers: per thread, reused, grown geometrically ---- */
static _Thread_local ml_scratch_t scr[SCR_N];

char *ml_a2a_scratch(int slot, size_t n)
{
    return ml_scratch_get(&scr[slot], n ? n : 1);
}

void ml_a2a_free_scratch(void)
{
    ml_scratch_release(scr, SCR_N);
}

/* ---- normalised arguments ---- */
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

/* Distance between consecutive blocks of count elements of t, and whether t
 * is contiguous. */
static void layout(MPI_Datatype t, int count, MPI_Aint *stride, int *contig)
{
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(t, &lb, &ext);
    *stride = ext * count;
    *contig = is_contig(t);
}

int ml_a2a_prep(args_t *a, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int rsize;
    PMPI_Comm_rank(comm, &a->rank);
    PMPI_Comm_size(comm, &a->P);
    PMPI_Type_size(recvtype, &rsize);
    a->bytes = (size_t)recvcount * (size_t)rsize;
    a->comm = comm;
    a->rb = recvbuf;
    a->rc = recvcount;
    a->rt = recvtype;
    layout(recvtype, recvcount, &a->rstride, &a->rcontig);
    if (sendbuf == MPI_IN_PLACE) {
        size_t total = a->bytes * (size_t)a->P;
        char *tmp = ml_a2a_scratch(SCR_INPLACE, total);
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
        layout(sendtype, sendcount, &a->sstride, &a->scontig);
    }
    return MPI_SUCCESS;
}

const char *ml_a2a_send_block_bytes(const args_t *a, int i, char *dst)
{
    const char *src = a->sb + (MPI_Aint)i * a->sstride;
    if (a->scontig)
        return src;
    int pos = 0;
    PMPI_Pack(src, a->sc, a->st, dst, (int)a->bytes, &pos, a->comm);
    return dst;
}

void ml_a2a_store_recv_block(const args_t *a, int i, const char *src)
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

int ml_a2a_self_copy(const args_t *a)
{
    char *tmp = ml_a2a_scratch(SCR_PACK1, a->bytes);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    ml_a2a_store_recv_block(a, a->rank, ml_a2a_send_block_bytes(a, a->rank, tmp));
    return MPI_SUCCESS;
}

/* GCC flags MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) as an overflow */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
int ml_a2a_waitall(int n, MPI_Request *req)
{
    return PMPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}
#pragma GCC diagnostic pop
