/* The in-flight state of one thread (docs/flight-recorder.md): the MPI call it
 * is inside right now.  Written by the thread at every outermost call
 * (flight.h: ml_fl_in before the PMPI call, ml_fl_out after), read by the
 * flight recorder's own thread (flight.c) without a lock:
 *
 *   seq  odd while the thread is inside the call described by the other
 *        fields; the fields are written only while seq is even, and a reader
 *        keeps a snapshot only if seq was odd and unchanged around its reads. */
#ifndef MLENS_INFLIGHT_H
#define MLENS_INFLIGHT_H
#include <mpi.h>
#include <stdint.h>

enum { ML_FL_OTHER, ML_FL_SEND, ML_FL_RECV, ML_FL_SENDRECV, ML_FL_COLL, ML_FL_WAIT };
/* peer values below 0 */
#define ML_FL_NONE (-1)     /* no peer (a collective without root, ...) */
#define ML_FL_ANY (-2)      /* MPI_ANY_SOURCE */
#define ML_FL_PROCNULL (-3) /* MPI_PROC_NULL */
#define ML_FL_UNKNOWN (-4)  /* a rank of a communicator not translated yet */

typedef struct {
    uint64_t seq;           /* odd: inside the call below */
    uint64_t t0;            /* entry (ticks): exact when the call was timed, else the recorder's clock */
    MPI_Comm comm;
    const MPI_Request *rq;  /* completion calls: the saved handles (req.c), or NULL */
    int64_t bytes;          /* this call's data (count x type size) */
    int fid, kind;          /* adjacent (ml_fl_set stores both at once) */
    int peer, tag;          /* world rank of the destination, source or root; tag */
    int peer2, tag2;        /* Sendrecv: the source and receive tag */
    int nrq;
    uint64_t cseq;          /* a collective: this thread's count of collectives on comm, this one
                             * included (comms.c's record; 0: not counted, MPILENS_COMMS=0 or
                             * a communicator beyond it) */
    uint64_t hang_seq;      /* the recorder's: seq of the last call it dumped as hanging */
} ml_fl_t;

#endif
