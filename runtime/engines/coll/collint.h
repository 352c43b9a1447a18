/* Inside the coll engine (coll.h): what its collectives share.  coll.c
 * holds the collectives' common part (settings, the node layout, the
 * per-communicator node communicators and selection keys, the calls' path
 * from the eligibility checks to the algorithm, the profile section); each
 * collective is a file with its algorithms and one ml_coll_def, listed once
 * in coll.c's colls[] (allreduce.c, bcast.c, allgather.c).  Only PMPI_* calls. */
#ifndef MLENS_COLL_INT_H
#define MLENS_COLL_INT_H
#include <mpi.h>

#include "../select/select.h"

#define ML_COLL_ROOTS 16 /* per communicator: the roots of MPI_Bcast last seen */

/* A user communicator's node communicators, built at its first eligible call. */
typedef struct ml_coll_comm {
    MPI_Comm node;   /* the ranks of this communicator on my node */
    MPI_Comm cross;  /* the ranks with my node-local index, one per node (index 0: leaders) */
    int lsize, lrank;
    int leader;      /* my node's leader's rank among the leaders (in cross of index 0) */
    int uniform;     /* every node has lsize ranks */
    int one_node;    /* all ranks on one node */
    int one_per_node;/* one rank on every node */
    int size, rank;  /* in the communicator */
    int *counts;     /* [lsize] slice lengths (multileader), then [lsize] displacements */
    int *lcounts;    /* leaders, once needed: [nodes] slice lengths, then displacements */
    int root[ML_COLL_ROOTS][3]; /* a root (rank + 1, 0: none), its leader, its lrank */
    int order_ready; /* the node-major order below is known (ml_coll_node_order) */
    int *nodes_at;   /* leaders, once needed: [nodes] ranks per node, [nodes] their
                      * starts in node-major order, then [2 x nodes] a call's scratch */
    int *order;      /* leaders, once needed, placement not by block: [size] the rank at
                      * each place in node-major order; NULL by block */
    int *iorder;     /* once needed, equal nodes only: [size] the rank at each place in
                      * (node-local index, node) order (ml_coll_index_order) */
    ml_sel_key *keys;/* [collectives][ML_SEL_CLASSES]: the selection's keys */
    struct ml_coll_comm *prev, *next; /* the live ones (MPI_Finalize records their keys) */
} ml_coll_comm;

/* One call's arguments, whichever collective (unused ones 0). */
typedef struct ml_coll_args {
    const void *sendbuf;
    void *buf;       /* the receive buffer (MPI_Bcast: the buffer) */
    int count, root;
    MPI_Datatype dt;
    MPI_Op op;
    MPI_Comm comm;
} ml_coll_args;

/* A collective the engine serves: its candidates (0: the MPI's own call)
 * and what decides them.  Listed in coll.c's colls[]. */
typedef struct ml_coll_def {
    ml_sel_client client;  /* name, candidates; names[ncand] is "adaptive", then NULL */
    const char *setting;   /* its setting's environment variable, MPILENS_COLL_<NAME> */
    int has_op;            /* the call has an operation (predefined ones only) */
    int has_root;          /* the call has a root (0 <= root < size) */
    /* Runs candidate alg (1 .. ncand - 1) on an eligible call. */
    int (*run)(int alg, const ml_coll_args *a, ml_coll_comm *ci);
    /* The MPI's own call. */
    int (*mpi)(const ml_coll_args *a);
    /* The candidate that serves a forced algorithm on ci (it may take
     * another where the forced one needs what ci lacks). */
    int (*forced)(int alg, const ml_coll_comm *ci);
    /* Adaptive on ci, a communicator across nodes with more than one rank
     * on some node, calls of size class cls: the race's candidates into cand
     * (cand[0] = 0), their number. */
    int (*candidates)(const ml_coll_comm *ci, int cls, int *cand);
    /* Optional: whether a call is eligible on ci beyond the common checks
     * (0: the MPI's own call serves it). */
    int (*eligible)(const ml_coll_args *a, const ml_coll_comm *ci);
} ml_coll_def;

extern const ml_coll_def ml_coll_allreduce_def, ml_coll_bcast_def, ml_coll_allgather_def;
extern const ml_coll_def ml_coll_reduce_scatter_block_def;

/* MPI_Bcast's root on ci: its leader's rank among the leaders and its
 * node-local index (collective over ci's communicator on a root not among
 * the last ML_COLL_ROOTS: one PMPI_Bcast of two ints from the root). */
int ml_coll_root(ml_coll_comm *ci, int root, MPI_Comm comm, int *leader, int *lrank);

/* ci's node-major order, once per communicator (collective over it, at the
 * first call of an algorithm that needs it): on the leaders nodes_at, and
 * order unless every node's ranks are consecutive (placement by block);
 * nothing kept elsewhere.  O(size) integers on the leaders only. */
int ml_coll_node_order(ml_coll_comm *ci);

/* ci's (node-local index, node) order, equal nodes only, once per
 * communicator (collective over it): iorder on every rank, the ranks of
 * cross communicator i, in its order, at places i x nodes .. */
int ml_coll_index_order(ml_coll_comm *ci);

#endif
