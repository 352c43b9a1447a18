/* Process topologies created by the application (topo.c). */
#ifndef MLENS_TOPO_H
#define MLENS_TOPO_H

#include <mpi.h>

/* After MPI_Cart_create / MPI_Graph_create / MPI_Dist_graph_create(_adjacent)
 * succeeded: record the new communicator's topology (called by the generated
 * wrappers on every member; collective on it for distributed graphs). */
void ml_topo_created(MPI_Comm comm);

/* Collective over MPI_COMM_WORLD at MPI_Finalize: on rank 0 the header text
 * "topologies":[...],"topologies_dropped":N (malloc'ed), NULL elsewhere. */
char *ml_topo_json(void);

#endif
