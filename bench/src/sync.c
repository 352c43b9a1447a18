/* Synchronised start for collective timing (ReproMPI/SKaMPI style).
 * Each rank estimates the offset of its MPI_Wtime to rank 0's by the ping-pong
 * with the smallest round-trip time; rank 0 announces a start time `delta`
 * seconds ahead, every rank spins until its corrected clock reaches it, and the
 * sample's time is the slowest rank's finish minus that common start.  A rank
 * that receives the announcement after the start makes the sample invalid: the
 * lead time doubles (up to 20 ms; it shrinks again after valid samples) and the
 * caller repeats the sample, at most 3 times (counted as "late"). */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <sched.h>

void ml_sync_init(ml_sync *s, MPI_Comm comm)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    s->comm = comm;
    s->offset = 0;
    s->late = 0;
    for (int r = 1; r < np; r++) {
        if (me != 0 && me != r) continue;
        double best = 1e30;
        for (int k = 0; k < 16; k++) {
            if (me == 0) {
                char c;
                MPI_Recv(&c, 1, MPI_CHAR, r, 77, comm, MPI_STATUS_IGNORE);
                double t0 = MPI_Wtime();
                MPI_Send(&t0, 1, MPI_DOUBLE, r, 78, comm);
            } else {
                char c = 0;
                double t0, t1 = MPI_Wtime();
                MPI_Send(&c, 1, MPI_CHAR, 0, 77, comm);
                MPI_Recv(&t0, 1, MPI_DOUBLE, 0, 78, comm, MPI_STATUS_IGNORE);
                double t2 = MPI_Wtime();
                if (t2 - t1 < best) { best = t2 - t1; s->offset = t0 - 0.5 * (t1 + t2); }
            }
        }
    }
    double tb = 0, dummy = 0;
    for (int k = 0; k < 5; k++) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        MPI_Bcast(&dummy, 1, MPI_DOUBLE, 0, comm);
        double t = MPI_Wtime() - t0;
        if (t > tb) tb = t;
    }
    MPI_Allreduce(MPI_IN_PLACE, &tb, 1, MPI_DOUBLE, MPI_MAX, comm);
    s->delta = s->delta0 = 4 * tb > 50e-6 ? 4 * tb : 50e-6;
}

static int late_local;

void ml_sync_wait(ml_sync *s)
{
    int me;
    MPI_Comm_rank(s->comm, &me);
    double T = 0;
    if (me == 0) T = MPI_Wtime() + s->delta;
    MPI_Bcast(&T, 1, MPI_DOUBLE, 0, s->comm);
    double target = T - s->offset, now = MPI_Wtime();
    late_local = now > target;
    while ((now = MPI_Wtime()) < target)
        if (target - now > 200e-6) sched_yield();
    s->start_global = T;
    s->start_local = now;
}

int ml_sync_done(ml_sync *s, double local_end, double *tmax)
{
    double v[2] = {late_local, local_end + s->offset - s->start_global};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, s->comm);
    *tmax = v[1];
    if (v[0] > 0) {
        s->late++;
        if (s->delta < 0.02) s->delta *= 2;
        return 0;
    }
    s->delta = 0.8 * s->delta > s->delta0 ? 0.8 * s->delta : s->delta0;
    return 1;
}
