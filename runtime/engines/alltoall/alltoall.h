/* Adaptive Alltoall engine (runtime/engines/alltoall): shared declarations.
 *
 * Following Nanri et al., dynamic Alltoall selection with performance models
 * (Kyushu Univ. 2008; docs/references.md) and going beyond it (docs/alltoall.md).
 * Where things live:
 *
 *   algorithms   one file per algorithm (spread.c, bruck.c, recdbl.c, pairwise.c,
 *                ring.c, native.c), each with the signature of MPI_Alltoall and its
 *                P-LogP cost formula in its header comment and its cost function;
 *                blocks.c their common argument handling; algorithms.c the table
 *   plogp.c      P-LogP measurement in the library, exact sums
 *   netmodel.c   the network model file (MPILENS_NETWORK_MODEL)
 *   learn.c      the policy: Grouping, Learning (race), Running (drift check)
 *   state.c      per-communicator state, its private duplicate (shared), size entries
 *   memo.c       what a run remembers across communicators: zero-byte P-LogP parts
 *                per group of processes, learned choices per (size, ranks per node)
 *   records.c    finished decisions: kept, gathered at MPI_Finalize, profile section
 *   tuning.c     the tuning file (MPILENS_TUNING_FILE) and the machine signature
 *   cache.c      the learning cache (MPILENS_ALLTOALL_CACHE): learning that spans runs
 *   json.c       the JSON reader of the network model file and the cache
 *   engine.c     settings, check / init / finalize (ml_engine_alltoall)
 *   entry.c      mlo_MPI_Alltoall and the exported queries
 *
 * Everything here is built on PMPI_* calls only (MPI_* would be profiled again).
 */
#ifndef MLENS_ALLTOALL_H
#define MLENS_ALLTOALL_H
#include <mpi.h>
#include <pthread.h>
#include <stddef.h>

#include "engine.h"

typedef int (*ml_a2a_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* ---- P-LogP parameters (plogp.c) ---- */
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
/* Sums n doubles (times, counts) over comm into out, bitwise identical on
 * every rank: summed as 64-bit integers of picoseconds (exact, associative),
 * whatever order the MPI's Allreduce adds in.  Every engine decision is
 * computed from such sums, so no rounding can make ranks decide differently.
 * n <= ML_SUM_MAX. */
#define ML_SUM_MAX 256
int ml_sum_exact(const double *v, double *out, int n, MPI_Comm comm);

/* ---- the algorithms (one file each; the table in algorithms.c) ---- */
enum { ML_A2A_SPREAD, ML_A2A_BRUCK, ML_A2A_RECDBL, ML_A2A_PAIR, ML_A2A_PAIR_LB,
       ML_A2A_PAIR_BARRIER, ML_A2A_RING, ML_A2A_MPI, ML_A2A_NALG };
#define ML_A2A_ALGORITHM(name)                                                              \
    int ml_a2a_##name(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm); \
    double ml_a2a_cost_##name(int P, const ml_plogp *p)
ML_A2A_ALGORITHM(spread);
ML_A2A_ALGORITHM(bruck);
ML_A2A_ALGORITHM(recdbl);
ML_A2A_ALGORITHM(pair);
ML_A2A_ALGORITHM(pair_lb);
ML_A2A_ALGORITHM(pair_barrier);
ML_A2A_ALGORITHM(ring);
ML_A2A_ALGORITHM(mpi); /* the MPI's own PMPI_Alltoall: no model (infinite cost), never pruned */
/* The list, in the order of the enum above (algorithms.c builds the tables from it). */
#define ML_A2A_LIST(X) X(spread) X(bruck) X(recdbl) X(pair) X(pair_lb) X(pair_barrier) X(ring) X(mpi)

typedef struct {
    const char *name;
    ml_a2a_fn run;
    double (*cost)(int P, const ml_plogp *p); /* predicted time (s) for P ranks */
} ml_a2a_alg;
extern const ml_a2a_alg ml_a2a_algs[ML_A2A_NALG];
/* MPILENS_ALLTOALL's values: "native", "adaptive", then the algorithms' names */
extern const char *const ml_a2a_modes[ML_A2A_NALG + 3];
extern const char *const *const ml_a2a_names; /* ml_a2a_modes + 2 */
int ml_a2a_find(const char *name);              /* index or -1 */
/* Whether our algorithms can serve this call (intra-communicator, sizes fit an
 * int); 1 = yes, 0 = hand it to PMPI_Alltoall.  *block_bytes = bytes per block. */
int ml_a2a_supported(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, size_t *block_bytes);
void ml_a2a_free_scratch(void);

/* ---- settings and modes (engine.c) ---- */
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
extern const ml_engine_t ml_engine_alltoall;

typedef struct {
    int mode, learn_n, model, check_every, reuse, share;
    double drift, race[ML_A2A_RACE_POINTS];
    int provisional;           /* MPILENS_ALLTOALL_PROVISIONAL: choices from few calls */
} ml_a2a_cfg;

/* ---- the exported queries (entry.c) ---- */
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
/* Writes n bytes of text to path atomically: a temporary file in the same
 * directory, fsync, rename.  0 ok. */
int ml_a2a_write_atomic(const char *path, const char *text, size_t n);
/* The machine signature: given (MPILENS_MACHINE) if not NULL, else computed
 * from this node (host name stem, CPU model, cores, MPI library). */
void ml_machine_signature(char *buf, size_t len, const char *given);
/* Power-of-two range [lo, hi] holding m. */
void ml_tune_range(size_t m, long long *lo, long long *hi);
/* The tuning file's choice for (P, ranks per node, block bytes) on this machine, or -1. */
int ml_tune_lookup(int P, int rpn, long long bytes);
/* Rank 0 at MPI_Finalize: merges the learned decisions (records.c) into the
 * tuning table and writes the file if anything was learned. */
void ml_tune_save(void);

/* ================= engine state (the engine's files only) ================= */

#define ML_SIZES 32        /* block sizes per communicator (least recently used recycled) */
#define ML_RANGES 32       /* power-of-two ranges of block sizes: 0 bytes, then [2^k, 2^(k+1)) */
#define ML_RECS 256        /* finished decisions kept per process */
#define P0_CACHE 8         /* groups whose zero-byte P-LogP part is kept */
#define KEPT_KEYS 32       /* (communicator size, ranks per node) keys whose choices are kept */
/* Learning keeps each candidate's time per block of calls in NSLOT slots
 * (block j of a candidate adds to slot j % NSLOT); a candidate's learned time
 * per call is the median over the slots of the rank-averaged slot means, so
 * one preempted block (an oversubscribed or shared node) cannot decide. */
#define NSLOT 16
/* Running: one call in RUN_SAMPLE is timed for the drift check (two clock
 * reads cost ~0.1 us here, a measurable share of a small Alltoall). */
#define RUN_SAMPLE 8
/* After a drift, re-learning keeps the candidates within this factor of the best. */
#define PRUNE_RELEARN 1.2
/* The MPI's own algorithm ("mpi", what native MPI_Alltoall runs) is the
 * default: another candidate replaces it only when its slot means are lower
 * beyond the noise, by a one-sided exact Wilcoxon signed-rank test on the
 * slots paired by index (same turn) at this level, divided by the number of
 * candidates tested against it (Bonferroni); docs/alltoall.md, Selection. */
#define ML_A2A_ALPHA 0.05

enum { PH_NEW, PH_LEARN, PH_RUN };
/* SRC_LEARNING: still learning (no algorithm); SRC_PROVISIONAL: a choice from
 * the samples so far, learning to be finished by a later run (cache.c);
 * SRC_REUSED: learned earlier in this run or in an earlier run (the cache) */
enum { SRC_LEARNED, SRC_TUNED, SRC_FORCED, SRC_SINGLE, SRC_REUSED, SRC_LEARNING, SRC_PROVISIONAL };
extern const char *const ml_a2a_sources[]; /* profile names of SRC_* */

/* Learning's samples of one candidate (a row per candidate left, moved with
 * it when others leave the race).  Turn t of a candidate (b calls) adds to
 * slot t % NSLOT.  Carried samples come from earlier runs (cache.c): agreed
 * sums over the ranks, the same on every rank, added after the reduction. */
typedef struct {
    double ts[NSLOT];              /* local time of this run's calls per slot */
    double cts[NSLOT];             /* carried: time summed over the ranks per slot */
    int tn[NSLOT];                 /* calls per slot, carried + this run (same on all ranks) */
    int ctn[NSLOT];                /* carried calls per slot */
    int done, done0;               /* calls so far (carried + this run), carried */
    double tmin;                   /* local fastest call of the first turn, this run */
    double ctmin;                  /* carried sum over the ranks of it, <0: none */
    double am[NSLOT];              /* agreed mean per call per slot (over the ranks, carried
                                      included) at the last agreement, <= 0: empty slot */
} cand_learn;

/* One block size on one communicator. */
typedef struct {
    long long bytes;
    unsigned long long used;       /* LRU tick; 0 = free slot */
    int phase, source;
    int ncand, cand[ML_A2A_NALG];
    int first_mask;                /* candidates of the first Grouping */
    int cur;                       /* position of the candidate whose turn runs, -1 none */
    int rp;                        /* this round's next race point (0..ML_A2A_RACE_POINTS) */
    cand_learn *lr;                /* per candidate left (ML_A2A_NALG rows), allocated while
                                      learning and while a provisional choice runs */
    long long budget;              /* this run's learning calls before a provisional choice
                                      (<0: no limit; cache.c) */
    long long expect;              /* calls per run at this key in the last run (cache), <0 unknown */
    int few;                       /* few calls per run (expect <= ML_A2A_FEW_CALLS): turns of
                                      one call, the field halved between runs (learn.c) */
    int final_run;                 /* few, and the third run or later: decide at MPI_Finalize */
    long long carried;             /* learning calls carried over from earlier runs */
    long long round0;              /* learn_calls when this run's learning round began */
    double mean[ML_A2A_NALG];      /* agreed mean per call per algorithm (last learning), <0 unknown */
    double group_local, learn_local;
    int alg;
    double ref;                    /* agreed mean per call of alg; <0: set at next check */
    double run_sum;                /* time of the sampled calls of this window */
    int run_cnt, run_n;            /* calls of this window, sampled calls */
    long long calls, learn_calls;
    double learn_s, group_s;       /* agreed (mean over ranks) */
    int relearns;
    int no_tune;                   /* drifted away from a tuning-file or reused choice */
} size_state;

/* A private communicator for the algorithms' traffic, shared by every user
 * communicator over the same processes in the same order (below
 * MPI_THREAD_MULTIPLE); see state.c. */
typedef struct shared_dup {
    MPI_Comm comm;
    int P, *wr, uid, refs;         /* uid: of the communicator that made it */
    struct shared_dup *next;
} shared_dup;

/* One user communicator (attached as an MPI attribute).  Made without
 * communication on the first call; its collective set-up (the agreement and
 * the private duplicate, ml_a2a_setup) happens only when something other than
 * the MPI's own algorithm must run or learning starts (state.c). */
typedef struct comm_state {
    MPI_Comm comm;                 /* the user's communicator ("mpi" runs on it) */
    MPI_Comm dup;                  /* MPI_COMM_NULL until set up */
    shared_dup *sd;                /* dup's sharing entry, NULL if dup is its own */
    int setup;                     /* set up (the same on every rank: agreed points) */
    int P, rank, rpn;              /* rpn: from the world table until set up (-1: unknown) */
    int uid;                       /* agreed, unique per process (see state.c); -1 until set up */
    signed char reuse[ML_RANGES];  /* per size range: algorithm to reuse (agreed), -1 none */
    int *wr;                       /* world ranks in comm order, NULL if unknown */
    int have_p0;                   /* p0 holds the group's zero-byte P-LogP part */
    ml_plogp0 p0;
    unsigned long long tick;
    size_state *last;              /* entry of the previous call */
    size_state *s[ML_SIZES];       /* allocated on first use of a size */
    struct comm_state *next, *prev;
} comm_state;

/* a finished decision (fixed-size, gathered at MPI_Finalize as doubles) */
enum { R_P, R_RPN, R_BYTES, R_ALG, R_SRC, R_CALLS, R_LCALLS, R_LS, R_GS, R_RELEARN, R_MASK,
       R_REF, R_COMMS, R_CARRIED, R_MEAN0, R_NFIELD = R_MEAN0 + ML_A2A_NALG };

/* The engine's whole per-process state.  Threads (MPI_THREAD_MULTIPLE): a
 * communicator's state is only touched by calls on it (MPI orders those);
 * the tables here are guarded by lock, which is never held across an MPI
 * call (a collective under it would deadlock against a peer holding it for
 * another communicator, and the MPI's own locks must not nest inside it). */
typedef struct {
    ml_a2a_cfg cfg;                /* agreed at MPI_Init (rank 0's settings) */
    pthread_mutex_t lock;
    /* communicators (state.c) */
    int keyval;
    comm_state *live;              /* states still attached */
    shared_dup *shared;            /* private duplicates open to sharing */
    int next_uid;                  /* this process's next communicator uid */
    int priv_live;                 /* private communicators held (shared or not) */
    unsigned cs_gen;               /* bumped when a state goes (atomic): the fast path's check */
    int *world_node;               /* node (first world rank on it) of every world rank */
    /* what the run remembers (memo.c) */
    struct a2a_p0 { int P, *wr, uid; ml_plogp0 z; unsigned long long used; } p0[P0_CACHE];
    unsigned long long p0_tick;
    struct { int P, rpn; signed char alg[ML_RANGES]; } kept[KEPT_KEYS];
    int nkept;
    /* finished decisions (records.c) */
    double recs[ML_RECS][R_NFIELD];
    int nrecs, recs_dropped;
    double *all_recs;              /* rank 0 after finalize: merged over the job */
    int n_all_recs;
    /* inputs read at MPI_Init (engine.c, tuning.c, netmodel.c) */
    char machine[128];
    ml_tune_entry *tune_tab;
    int tune_n, tune_loaded;
    const char *tune_path;
    ml_netmodel nm_store, *netmodel; /* NULL: Grouping measures */
    struct ml_a2a_cache *cache;    /* the learning cache (cache.c), NULL: off */
} ml_a2a_engine_t;
extern ml_a2a_engine_t ml_a2a;

/* state.c */
int ml_a2a_range_of(long long bytes);
void ml_a2a_nodes_init(void);
comm_state *ml_a2a_get_state(MPI_Comm comm);       /* local: no communication */
int ml_a2a_setup(comm_state *cs);                  /* collective over cs->comm, once */
/* The communicator algorithm alg runs on: the MPI's own on the user's (as
 * native runs it), the others on the private duplicate (set up). */
static inline MPI_Comm ml_a2a_comm_for(const comm_state *cs, int alg)
{
    return alg == ML_A2A_MPI ? cs->comm : cs->dup;
}
const size_state *ml_a2a_find_size(MPI_Comm comm, long long block_bytes);
size_state *ml_a2a_lookup(comm_state *cs, long long bytes); /* NULL: no memory */
void ml_a2a_drain_states(void);                    /* MPI_Finalize: record and forget all */
int ml_a2a_out_of_memory(MPI_Comm comm);
/* memo.c (under no lock; they take ml_a2a.lock) */
int ml_a2a_p0_get(const int *wr, int P, ml_plogp0 *z);
void ml_a2a_p0_put(const int *wr, int P, int uid, const ml_plogp0 *z);
void ml_a2a_keep_choice(int P, int rpn, long long bytes, int alg);
void ml_a2a_kept_row(int P, int rpn, int alg[ML_RANGES]);
int ml_a2a_same_group(const int *a, int P, const int *b, int Q);
int *ml_a2a_copy_group(const int *wr, int P);
/* records.c */
void ml_a2a_record(const comm_state *cs, const size_state *e);
void ml_a2a_gather_records(void);                  /* collective, MPI_Finalize */
int ml_a2a_section(ml_buf_t *b);
/* learn.c */
int ml_a2a_adaptive(comm_state *cs, size_state *e, const void *sendbuf, int sendcount,
                    MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype);
extern __thread int ml_a2a_learning;               /* this thread's last call learned */
/* Runs algorithm alg on its communicator (ml_a2a_comm_for); sets
 * ml_a2a_user_err when it failed on the user's communicator, whose error
 * handler the MPI has then called already. */
int ml_a2a_run(const comm_state *cs, int alg, const void *sendbuf, int sendcount,
               MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype);
extern __thread int ml_a2a_user_err;
int ml_a2a_learn_block(void);                      /* calls per turn */
int ml_a2a_block_of(const size_state *e);          /* ... of this size (1 with few calls) */
#define ML_A2A_FEW_CALLS 10 /* calls per run at or below which learning converges in 3 runs */
int ml_a2a_learn_alloc(comm_state *cs, size_state *e); /* samples, phase Learning */
/* whether slot means a are below d beyond the noise (learn.c) */
int ml_a2a_beats(const double *a, const double *d, double alpha);
/* MPI_Finalize, entries with samples (learning, provisional): collective over
 * cs; agrees the times so far; S (NULL or ML_A2A_NALG * (NSLOT + 1)) gets
 * this run's slot sums and each candidate's first-turn fastest call (summed
 * over the ranks, carried ones included). */
int ml_a2a_agree_partial(comm_state *cs, size_state *e, double *S);
/* cache.c: learning that spans runs (MPILENS_ALLTOALL_CACHE) */
int ml_a2a_cache_init(const char *setting);        /* collective, MPI_Init: 0 ok */
int ml_a2a_cache_choice(int P, int rpn, long long bytes); /* a finished choice, or -1 */
/* Grouping: resumes an earlier run's partial learning (*resumed = 1) */
int ml_a2a_cache_resume(comm_state *cs, size_state *e, int *resumed);
/* Learning starts: the expected calls of this run and its learning budget */
void ml_a2a_cache_plan(const comm_state *cs, size_state *e);
/* MPI_Finalize, the communicator's rank 0: keeps e's samples for the cache */
void ml_a2a_cache_capture(const comm_state *cs, const size_state *e, const double *S);
void ml_a2a_cache_finalize(void);                  /* collective: gather, merge, write */
const char *ml_a2a_cache_path(void);               /* rank 0: the cache's file, NULL: off */

#endif
