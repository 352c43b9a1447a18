/* Adaptive Alltoall engine (runtime/coll): shared declarations.
 *
 *   alltoall.c  the seven algorithms, one signature (that of MPI_Alltoall), and
 *               "mpi", the MPI's own PMPI_Alltoall, as an eighth candidate
 *   plogp.c     P-LogP parameter measurement and the algorithms' cost models
 *   select.c    Grouping / Learning / Running per (communicator, message size)
 *   tuning.c    the persistent tuning file (MPILENS_TUNING_FILE)
 *
 * Everything here is built on PMPI_* calls only (MPI_* would be profiled again).
 */
#ifndef MLENS_COLL_H
#define MLENS_COLL_H
#include <mpi.h>
#include <stddef.h>

typedef int (*ml_a2a_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

enum { ML_A2A_SPREAD, ML_A2A_BRUCK, ML_A2A_RECDBL, ML_A2A_PAIR, ML_A2A_PAIR_LB,
       ML_A2A_PAIR_BARRIER, ML_A2A_RING, ML_A2A_MPI, ML_A2A_NALG };
/* ML_A2A_MPI has no cost model: Grouping always keeps it. */

/* ---- alltoall.c ---- */
int ml_a2a_spread(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int ml_a2a_bruck(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int ml_a2a_recdbl(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int ml_a2a_pair(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int ml_a2a_pair_lb(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int ml_a2a_pair_barrier(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int ml_a2a_ring(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int ml_a2a_mpi(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);

extern const ml_a2a_fn ml_a2a_algos[ML_A2A_NALG];
extern const char *const ml_a2a_names[ML_A2A_NALG];
int ml_a2a_find(const char *name);              /* index or -1 */
/* Whether our algorithms can serve this call (intra-communicator, sizes fit an
 * int); 1 = yes, 0 = hand it to PMPI_Alltoall.  *block_bytes = bytes per block. */
int ml_a2a_supported(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, size_t *block_bytes);
void ml_a2a_free_scratch(void);

/* ---- select.c ---- */
#define ML_A2A_MODE_NATIVE (-2)
#define ML_A2A_MODE_ADAPTIVE (-1)
/* mode: ML_A2A_MODE_* or an algorithm index (forced) */
/* Learning's race: factors after the first turn (compared on each rank's
 * fastest call), at N/5 and at N/2 calls per candidate (0: no elimination at
 * that point); MPILENS_ALLTOALL_RACE. */
#define ML_A2A_RACE_POINTS 3
#define ML_A2A_RACE_DEFAULT "2.5,2,1.2"
/* Parses off | F (all points) | F1,F2 (N/5, N/2; none after the first turn) |
 * F0,F1,F2, each factor in (1, 1000]; 0 ok, -1 bad. */
int ml_a2a_parse_race(const char *v, double race[ML_A2A_RACE_POINTS]);
void ml_a2a_set_config(int mode, int learn_n, int model, int check_every, double drift,
                       const double race[ML_A2A_RACE_POINTS]);
const char *mpilens_alltoall_choice(MPI_Comm comm, long long block_bytes, long long *learning_calls);
/* Private communicators the engine holds in this process (exported). */
int mpilens_alltoall_private_comms(void);
/* Whether this thread's last MPI_Alltoall through the engine was part of
 * Grouping or Learning (1) or ran a chosen or forced algorithm (0): lets the
 * benchmark tell learning calls from the rest without asking between calls. */
int ml_a2a_last_call_learning(void);
/* What adaptive mode did for (comm, block size), for the benchmark: agreed
 * Grouping and Learning time (s, mean over ranks), candidates of the first
 * Grouping (bit mask) and learned time per call of each algorithm (<0:
 * not learned).  0 ok, -1 unknown. */
typedef struct {
    double grouping_s, learning_s, mean[ML_A2A_NALG];
    int cand_mask;
    long long learning_calls;
} ml_a2a_info;
int ml_a2a_state_info(MPI_Comm comm, long long block_bytes, ml_a2a_info *out);

/* ---- plogp.c ---- */
typedef struct {
    double L;                 /* latency (s) */
    double g0, os0, or0;      /* gap, send and receive overhead for 0 bytes */
    double gm, osm, orm;      /* ... for m bytes */
    double g2m;               /* gap for 2m bytes (recursive doubling) */
} ml_plogp;
/* The size-independent part: zero-byte round trip, L, g(0), os(0), or(0). */
typedef struct {
    double rtt0, L, g0, os0, or0;
} ml_plogp0;
/* Collective over comm: measures the parameters for m bytes (pairs of ranks
 * in parallel, averaged over all pairs with PMPI_Allreduce: every rank gets
 * identical values).  With known (the same on every rank), the zero-byte
 * part is taken from it instead of measured; otherwise it is measured and,
 * if zero is not NULL, returned there (agreed values). */
int ml_plogp_measure(MPI_Comm comm, size_t m, ml_plogp *out, const ml_plogp0 *known,
                     ml_plogp0 *zero);
/* Predicted time (s) of algorithm alg for P ranks with the given parameters. */
double ml_plogp_predict(int alg, int P, const ml_plogp *p);
/* Sums n doubles (times, counts) over comm into out, bitwise identical on
 * every rank: summed as 64-bit integers of picoseconds (exact, associative),
 * whatever order the MPI's Allreduce adds in.  Every engine decision is
 * computed from such sums, so no rounding can make ranks decide differently.
 * n <= ML_SUM_MAX. */
#define ML_SUM_MAX 256
int ml_sum_exact(const double *v, double *out, int n, MPI_Comm comm);

/* ---- netmodel.c ---- */
/* The network model file of `mpilens bench logp --model FILE` (MPILENS_NETWORK_MODEL). */
#define ML_NETMODEL_MAX 64
typedef struct {
    int n;                     /* measured sizes */
    double L;
    double size[ML_NETMODEL_MAX], os[ML_NETMODEL_MAX], orr[ML_NETMODEL_MAX], g[ML_NETMODEL_MAX];
    char mpi_library[256];     /* first line of MPI_Get_library_version where it was measured */
} ml_netmodel;
/* Reads and checks FILE; 0 ok, -1 with err filled ("is not valid JSON: ...",
 * "has no key 'g_s' ...": to follow the file's name). */
int ml_netmodel_load(const char *path, ml_netmodel *nm, char *err, size_t errlen);
/* P-LogP parameters for m bytes (interpolated between the measured sizes). */
void ml_netmodel_params(const ml_netmodel *nm, size_t m, ml_plogp *p);

/* ---- tuning.c ---- */
typedef struct {
    char machine[128];
    int comm_size, ranks_per_node;
    long long lo, hi;          /* block bytes, inclusive */
    int alg;
    double time_s;             /* mean per call when learned */
} ml_tune_entry;
#define ML_TUNE_MAX 512
/* Parses a tuning file; 0 ok, -1 missing file, -2 corrupt (err filled). */
int ml_tune_parse(const char *path, ml_tune_entry *tab, int max, int *n, char *err, size_t errlen);
/* Writes atomically (temp + rename). 0 ok. */
int ml_tune_write(const char *path, const ml_tune_entry *tab, int n);
/* The machine signature (same string on every rank: computed on rank 0 of comm and broadcast). */
void ml_machine_signature(char *buf, size_t len);
/* Power-of-two range [lo, hi] holding m. */
void ml_tune_range(size_t m, long long *lo, long long *hi);

#endif
