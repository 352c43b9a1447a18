/* Collective engines that replace an MPI function inside libmpilens.so.
 *
 * The wrapper generator (runtime/gen/genwrap.py) scans this header: for every
 * declaration `int mlo_MPI_Xxx(<same parameters as MPI_Xxx in mpi.h>);` the
 * generated MPI_Xxx wrapper (C and Fortran) calls mlo_MPI_Xxx instead of
 * PMPI_Xxx, inside the timed region.  An override decides per call whether to
 * run its own algorithm or to call PMPI_Xxx itself (pass-through).
 *
 * Parameter lists must match mpi.h exactly (const void *sendbuf etc.).
 * An override that served a call through its own engine may call
 * ml_mark_repro() so that the profile counts it under "repro_calls".
 *
 * Engines initialise and check their configuration in the hooks below, called
 * by the MPI_Init wrapper after PMPI_Init (return non-zero after printing one
 * line "mpilens: VAR='value' is invalid: <accepted>" to stop the job), and
 * are finalised by the MPI_Finalize wrapper before the profile is written.
 */
#ifndef MLENS_OVERRIDES_H
#define MLENS_OVERRIDES_H
#include <mpi.h>

void ml_mark_repro(void);

/* Engine hooks (weak: an engine that is not built simply is not called). */
int  ml_coll_init(void) __attribute__((weak));      /* adaptive Alltoall: runtime/coll */
void ml_coll_finalize(void) __attribute__((weak));
char *ml_coll_profile_json(void) __attribute__((weak)); /* malloc'd JSON value for header key "alltoall" */
int  ml_repro_init(void) __attribute__((weak));     /* reproducible reductions: runtime/repro */
void ml_repro_finalize(void) __attribute__((weak));

/* --- overrides (one line each; the generator greps `mlo_MPI_\w+`) --- */
/* reproducible reductions (runtime/repro/repro.c): MPI_SUM on floating-point types, MPILENS_REPRO=1 */
int mlo_MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int mlo_MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
int mlo_MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int mlo_MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int mlo_MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int mlo_MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* adaptive Alltoall (runtime/coll/select.c): MPILENS_ALLTOALL=adaptive|<algorithm>, default native */
int mlo_MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

#endif
