/* Late arrival per collective (issue 30, docs/runtime.md "Late arrival"): which rank
 * arrives last at the synchronising collectives on MPI_COMM_WORLD, counted call by call.
 *
 * Every rank keeps, for a sample of those calls, the time it spent inside the call: the
 * rank that arrives last waits least.  The sample is chosen by the call's place in
 * MPI_COMM_WORLD's order of collectives (its coll_seq, flight.h), which every rank
 * knows without communication: at first every call, and when ML_LA_CAP are held, every
 * other one is dropped and only every 2nd (4th, ...) call is sampled from then on, so
 * all ranks sample the same calls in constant memory.  At MPI_Finalize one reduction
 * finds per sampled call the rank that waited least and how much less than the next
 * (late.c); each rank's count goes into its rank line ("late_arrival").
 *
 * Per call: a collective on MPI_COMM_WORLD tests its sequence number against the mask
 * (ml_la_in, in ml_fl_set's collective branch); the collectives' wrappers test one
 * thread-local word after the call (ml_la_out, runtime/gen/genwrap.py).  A sampled call reads the clock twice, no lock, no
 * allocation. */
#ifndef MLENS_LATE_H
#define MLENS_LATE_H
#include "ml.h"
#pragma GCC visibility push(hidden) /* this file's declarations: direct accesses, no GOT (mltypes.h) */

#define ML_LA_CAP 1024 /* sampled calls held at most */

extern uint64_t ml_la_mask;     /* sample the calls whose coll_seq & ml_la_mask == 0 */
extern ML_TLS uint64_t ml_la_t0; /* inside a sampled call: its entry time (ticks), else 0 */
void ml_la_enter(uint64_t cseq, int fid);
void ml_la_exit(void);

/* ml_fl_set's collective branch: id is the communicator's record (0: MPI_COMM_WORLD),
 * cseq its coll_seq (0: not counted) */
ML_INLINE void ml_la_in(int fid, int id, uint64_t cseq)
{
    if (__builtin_expect(id == 0 && cseq && !(cseq & ml_la_mask), 0)) ml_la_enter(cseq, fid);
}

/* After a collective's MPI call (its wrapper, slot not shared): the end of a sampled call */
ML_INLINE void ml_la_out(void)
{
    if (__builtin_expect(ml_la_t0 != 0, 0)) ml_la_exit();
}

#pragma GCC visibility pop
#endif
