/* Reproducible reductions (runtime/engines/repro): the engine behind the
 * mlo_MPI_* overrides declared in overrides.h (ml_engine_repro).
 *
 *   exactsum.c  exact accumulation (ml_win, ml_acc) and the single rounding
 *   repro.c     configuration, MPI datatypes/ops, the distributed reductions
 *               and the overrides (PMPI calls only)
 */
#ifndef MLENS_REPRO_H
#define MLENS_REPRO_H
#include <mpi.h>

/* Turn the engine on or off regardless of MPILENS_REPRO (benchmarks, tests);
 * MPI must be initialised.  Returns 0 or an MPI error code. */
int ml_repro_enable(int on);
/* The reproducible MPI_Allreduce (MPILENS_REPRO=1, MPI_SUM on floating-point
 * types): an MPI return code, or -1 when it does not serve the call (the
 * caller then passes it on: runtime/engines/coll/dispatch.c).  The dispatch
 * calls it only while ml_repro_allreduce_on (the engine enabled and ready):
 * the default path then costs a load and a branch, not a call. */
extern int ml_repro_allreduce_on;
int ml_repro_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm);
/* The same for MPI_Reduce_scatter_block (also while ml_repro_allreduce_on). */
int ml_repro_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
/* Frees the engine's MPI objects and scratch (benchmarks without the core). */
void ml_repro_finalize(void);

#endif
