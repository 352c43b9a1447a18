/* Process topologies created by the application (topo.c). */
#ifndef MLENS_TOPO_H
#define MLENS_TOPO_H

#include <mpi.h>

/* After MPI_Cart_create / MPI_Graph_create / MPI_Dist_graph_create(_adjacent)
 * succeeded: record the new communicator's topology (called by the generated
 * wrappers on every member; collective on it for distributed graphs). */
void ml_topo_created(MPI_Comm comm);

/* The module (topo.c, modules_list.h): at MPI_Finalize, collective over
 * MPI_COMM_WORLD, rank 0 gathers the topologies for the header's
 * "topologies":[...],"topologies_dropped":N. */

#endif
