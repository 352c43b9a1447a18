/* mpilens runtime: the semantic helpers (sem.c, nodes.c): a call's bytes, peers,
 * same-node or not, collectives' descriptors */
#ifndef MLENS_ML_SEM_H
#define MLENS_ML_SEM_H

#include "ml_fastpath.h"

#pragma GCC visibility push(hidden) /* direct accesses, no GOT (mltypes.h) */

/* ---- semantic helpers (sem.c); fid = function the bytes belong to ---- */
#define ML_SEND 0
#define ML_RECV 1
#define ML_NOPEER (-1)

void ml_served_count(ml_slot_t *s, int fid); /* an engine served the call (ml_mark_served) */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran count arrays are passed to C engines as int arrays");
int ml_peer_world_slow(MPI_Comm comm, int rank);
int ml_win_peer_world(MPI_Win win, int rank);

/* The helpers of every point-to-point call are inline: no call, few cache lines. */

/* Datatype sizes: a one-entry cache per thread, invalidated by MPI_Type_free. */
extern volatile unsigned ml_type_epoch;
int64_t ml_type_size_slow(MPI_Datatype dt);
ML_INLINE int64_t ml_type_size(MPI_Datatype dt)
{
    if (ml_thr.tcache.dt == dt && ml_thr.tcache.epoch == ml_type_epoch) return ml_thr.tcache.size;
    return ml_type_size_slow(dt);
}

/* comm rank -> MPI_COMM_WORLD rank, ML_NOPEER if none (MPI_PROC_NULL, MPI_ANY_SOURCE, ...) */
ML_INLINE int ml_peer_world(MPI_Comm comm, int rank)
{
    if (rank < 0) return ML_NOPEER;
    if (comm == MPI_COMM_WORLD) return rank;
    return ml_peer_world_slow(comm, rank);
}

/* ml_thr.cb: the bytes the semantic helpers gave this thread's current call (sent, received):
 * zeroed by ml_call_start, read by ml_call_done/ml_call_end (callend.h) for the record kinds (call sites,
 * regions, time line, communicators).  Per thread, so exact when threads share
 * a slot (a difference of the slot's counters would take in the other threads'). */

/* Bytes of function fid (data record di = ml_func_didx[fid], a constant in the
 * generated wrappers), added to the call's bytes cb (&ml_thr.cb, or a point-to-point
 * wrapper's local copy: see ml_call_done). */
ML_INLINE void ml_bytes_d(ml_slot_t *s, ml_callbytes_t *cb, int fid, int di, int side, uint64_t total,
                          uint64_t block, int hist)
{
    if (di < 0 || !ml_fon[fid]) return;
    ml_drec_t *d = &s->d[di];
    if (side == ML_SEND) {
        cb->s += total;
        d->bytes_s += total;
        if (hist) {
            d->hist_s[ml_bin(block)]++;
            d->hist_bytes_s += block;
        }
    } else {
        cb->r += total;
        d->bytes_r += total;
        if (hist) d->hist_r[ml_bin(block)]++;
    }
}
ML_INLINE void ml_bytes(ml_slot_t *s, int fid, int side, uint64_t total, uint64_t block, int hist)
{
    ml_bytes_d(s, &ml_thr.cb, fid, ml_func_didx[fid], side, total, block, hist);
}

ML_INLINE void ml_peer_add(ml_slot_t *s, int side, int wpeer, uint64_t bytes)
{
    if (wpeer < 0 || wpeer >= ml_world_size) return;
    ml_peer_t *p = &s->peers[wpeer];
    if (side == ML_SEND) {
        p->msgs_s++;
        p->bytes_s += bytes;
    } else {
        p->msgs_r++;
        p->bytes_r += bytes;
    }
}

/* ---- nodes (nodes.c, module "hosts"): the node of every world rank, from the host names, once at MPI_Init ---- */
/* distinct nodes of n world ranks (ML_NOPEER skipped) and the most of them on one node */
void ml_node_span(const int *world, int n, int *nodes, int *rpn);

/* A message with a known peer, split by whether the peer is on this rank's node. */
ML_INLINE void ml_node_add_d(ml_slot_t *s, int fid, int di, int side, int wpeer, uint64_t bytes)
{
    if (di < 0 || !ml_fon[fid] || wpeer < 0 || wpeer >= ml_world_size || !ml_hot.node_of) return;
    uint64_t *x = s->d[di].xnode[ml_hot.node_of[wpeer] != ml_hot.my_node] + 2 * side;
    x[0]++;
    x[1] += bytes;
}
ML_INLINE void ml_node_add(ml_slot_t *s, int fid, int side, int wpeer, uint64_t bytes)
{
    ml_node_add_d(s, fid, ml_func_didx[fid], side, wpeer, bytes);
}

/* A send whose size (count x type size) and world peer the wrapper computed
 * once before the call (for the in-flight state too): wpeer < 0 is no peer.
 * tm: the wrapper's timing decision (ml_call_start), ML_TM_OFF when the
 * function is not recorded (its ml_fon test, made once per call). */
ML_INLINE void ml_p2p_sent(ml_slot_t *s, ml_callbytes_t *cb, int tm, int di, uint64_t n, int wpeer)
{
    /* ml_bytes_d, ml_peer_add and ml_node_add_d, with the function's test made once
     * and the peer's range once (the peer matrix counts every function, as ml_peer_add) */
    int on = di >= 0 && tm != ML_TM_OFF;
    ml_drec_t *d = &s->d[di >= 0 ? di : 0];
    if (on) {
        cb->s += n;
        d->bytes_s += n;
        d->hist_s[ml_bin(n)]++;
        d->hist_bytes_s += n;
    }
    if ((unsigned)wpeer < (unsigned)ml_world_size) {
        ml_peer_t *p = &s->peers[wpeer];
        p->msgs_s++;
        p->bytes_s += n;
        if (on && ml_hot.node_of) {
            uint64_t *x = d->xnode[ml_hot.node_of[wpeer] != ml_hot.my_node];
            x[0]++;
            x[1] += n;
        }
    }
}

ML_INLINE void ml_p2p_send(ml_slot_t *s, int fid, int64_t count, MPI_Datatype dt, int dest, MPI_Comm comm)
{
    if (dest == MPI_PROC_NULL) return;
    uint64_t n = count > 0 ? (uint64_t)count * (uint64_t)ml_type_size(dt) : 0;
    ml_bytes(s, fid, ML_SEND, n, n, 1);
    int wpeer = ml_peer_world(comm, dest);
    ml_peer_add(s, ML_SEND, wpeer, n);
    ml_node_add(s, fid, ML_SEND, wpeer, n);
}

/* Bytes a completed receive got, from its status: the byte count Open MPI and
 * MPICH keep in the status (what MPI_Get_elements_x(MPI_BYTE) returns, without
 * the call); other MPIs ask MPI_Get_elements_x. */
ML_INLINE uint64_t ml_status_bytes(const MPI_Status *st)
{
#if defined(OPEN_MPI) && OPEN_MPI
    return (uint64_t)st->_ucount;
#elif defined(MPICH_VERSION) && !defined(I_MPI_VERSION)
    return (uint64_t)(unsigned)st->count_lo | ((uint64_t)((unsigned)st->count_hi_and_cancelled >> 1) << 32);
#else
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0) n = 0;
    return (uint64_t)n;
#endif
}

/* A completed receive: the size actually received and the source, from the status.
 * on: the function is recorded (the wrappers pass their timing decision's test, tm !=
 * ML_TM_OFF; ml_p2p_recv its ml_fon): ml_bytes_d, ml_peer_add and ml_node_add_d with
 * that test made once and the peer's range once, as ml_p2p_sent. */
ML_INLINE void ml_p2p_recv_d(ml_slot_t *s, ml_callbytes_t *cb, int on, int di, MPI_Comm comm, const MPI_Status *st)
{
    if (st->MPI_SOURCE == MPI_PROC_NULL) return;
    uint64_t n = ml_status_bytes(st);
    on = on && di >= 0;
    ml_drec_t *d = &s->d[di >= 0 ? di : 0];
    if (on) {
        int b = ml_bin(n);
        cb->r += n;
        cb->bin = b;
        d->bytes_r += n;
        d->hist_r[b]++;
    }
    if (comm != MPI_COMM_NULL) {
        int wpeer = ml_peer_world(comm, st->MPI_SOURCE);
        if ((unsigned)wpeer < (unsigned)ml_world_size) {
            ml_peer_t *p = &s->peers[wpeer];
            p->msgs_r++;
            p->bytes_r += n;
            if (on && ml_hot.node_of) {
                uint64_t *x = d->xnode[ml_hot.node_of[wpeer] != ml_hot.my_node] + 2 * ML_RECV;
                x[0]++;
                x[1] += n;
            }
        }
    }
}
ML_INLINE void ml_p2p_recv(ml_slot_t *s, int fid, MPI_Comm comm, const MPI_Status *st)
{
    ml_p2p_recv_d(s, &ml_thr.cb, ml_fon[fid], ml_func_didx[fid], comm, st);
}

void ml_rma(ml_slot_t *s, int fid, int side, int64_t count, MPI_Datatype dt, int target, MPI_Win win);
void ml_io(ml_slot_t *s, int fid, int side, int64_t count, MPI_Datatype dt);
void ml_comm_forget(MPI_Comm comm);
void ml_win_forget(MPI_Win win);

/* Collectives: one descriptor for all shapes. */
enum {
    ML_BCAST, ML_REDUCE, ML_ALLREDUCE, ML_SCAN, ML_RSB, ML_RS,
    ML_GATHER, ML_SCATTER, ML_ALLGATHER, ML_ALLTOALL, ML_NALLGATHER, ML_NALLTOALL
};
typedef struct {
    int shape;
    const void *sendbuf, *recvbuf;
    int64_t scount, rcount;           /* scalar counts */
    const void *scounts, *rcounts;    /* count arrays (v/w variants) or NULL */
    int counts64;                     /* arrays hold MPI_Count (1) or int (0) */
    MPI_Datatype stype, rtype;
    const void *stypes, *rtypes;      /* per-peer type arrays (w variants) or NULL */
    int ftypes;                       /* type arrays hold Fortran handles */
    int root;                         /* only for rooted shapes */
    MPI_Comm comm;
} ml_coll_t;
void ml_coll(ml_slot_t *s, int fid, const ml_coll_t *c);

#pragma GCC visibility pop
#endif
