/* The entry point (mlo_MPI_Alltoall, called by the generated MPI_Alltoall
 * wrappers in place of PMPI_Alltoall) and the engine's exported queries. */
#include "alltoall.h"

/* The previous call's communicator, arguments and decision: a repeated call
 * (the common case) skips the attribute lookup and the datatype queries.
 * Invalidated when any communicator state is released or any datatype freed
 * (the core's epoch; absent in stand-alone builds such as the benchmark). */
extern volatile unsigned ml_type_epoch __attribute__((weak));
typedef struct {
    MPI_Comm comm;
    MPI_Datatype st, rt;
    int sc, rc, inplace;
    unsigned cgen, tepoch;
    size_t bytes;
    comm_state *cs;
} fast_t;
static __thread fast_t fast;
static unsigned type_epoch(void) { return &ml_type_epoch ? ml_type_epoch : 0; }

int ml_a2a_last_call_learning(void) { return ml_a2a_learning; }

int mlo_MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    size_t bytes;
    int mode = ml_a2a.cfg.mode;
    if (mode == ML_A2A_MODE_NATIVE)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    ml_a2a_learning = 0;
    int inplace = sendbuf == MPI_IN_PLACE;
    comm_state *cs;
    unsigned gen = __atomic_load_n(&ml_a2a.cs_gen, __ATOMIC_RELAXED);
    if (fast.cs && fast.comm == comm && fast.cgen == gen && fast.tepoch == type_epoch() &&
        fast.rc == recvcount && fast.rt == recvtype && fast.inplace == inplace &&
        (inplace || (fast.sc == sendcount && fast.st == sendtype))) {
        cs = fast.cs;
        bytes = fast.bytes;
    } else {
        if (!ml_a2a_supported(sendbuf, sendcount, sendtype, recvcount, recvtype, comm, &bytes))
            return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        if (!(cs = ml_a2a_get_state(comm)))
            return PMPI_Abort(comm, 1);
        fast = (fast_t){comm, sendtype, recvtype, sendcount, recvcount, inplace, gen,
                        type_epoch(), bytes, cs};
    }
    size_state *e = ml_a2a_lookup(cs, (long long)bytes);
    if (!e)
        return ml_a2a_out_of_memory(comm);
    int rc;
    ml_a2a_user_err = 0;
    if (mode >= 0) { /* forced: "mpi" on comm itself, no set-up; others on the duplicate */
        e->calls++;
        e->phase = PH_RUN;
        e->alg = mode;
        e->source = SRC_FORCED;
        rc = mode == ML_A2A_MPI ? MPI_SUCCESS : ml_a2a_setup(cs);
        if (rc == MPI_SUCCESS)
            rc = ml_a2a_run(cs, mode, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    } else
        rc = ml_a2a_adaptive(cs, e, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    /* as the MPI would for its own MPI_Alltoall on comm (which it did, if the
     * error came from PMPI_Alltoall on comm: its handler ran once already) */
    if (rc != MPI_SUCCESS && !ml_a2a_user_err)
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* Public query (exported): the algorithm in use for comm and block size, or
 * NULL if none yet (native mode, unknown size, or still learning). */
__attribute__((visibility("default")))
const char *mpilens_alltoall_choice(MPI_Comm comm, long long block_bytes, long long *learning_calls)
{
    const size_state *e = ml_a2a_find_size(comm, block_bytes);
    if (!e)
        return NULL;
    if (learning_calls)
        *learning_calls = e->learn_calls;
    return e->phase == PH_RUN ? ml_a2a_names[e->alg] : NULL;
}

/* Public query (exported): how many private communicators the engine holds
 * in this process (one per group of processes while sharing, else one per
 * communicator set up: one that learned or ran an algorithm of the engine's
 * own; "mpi" alone needs none). */
__attribute__((visibility("default")))
int mpilens_alltoall_private_comms(void)
{
    pthread_mutex_lock(&ml_a2a.lock);
    int n = ml_a2a.priv_live;
    pthread_mutex_unlock(&ml_a2a.lock);
    return n;
}

int ml_a2a_state_info(MPI_Comm comm, long long block_bytes, ml_a2a_info *out)
{
    const size_state *e = ml_a2a_find_size(comm, block_bytes);
    if (!e)
        return -1;
    out->grouping_s = e->group_s;
    out->learning_s = e->learn_s;
    out->cand_mask = e->first_mask;
    out->learning_calls = e->learn_calls;
    for (int a = 0; a < ML_A2A_NALG; a++)
        out->mean[a] = e->mean[a];
    return 0;
}
