/* Late arrival per collective (late.h, docs/runtime.md "Late arrival"). */
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "late.h"
#include "profile.h" /* ml_fin_wait */

uint64_t ml_la_mask = 0;
ML_TLS uint64_t ml_la_t0 = 0;

/* This file's state (one owner: the sampling thread writes the sample, ml_la_reduce the
 * result). */
static struct {
    /* the sample: coll_seq, function and ticks inside the call of each sampled call */
    uint64_t seq[ML_LA_CAP], ticks[ML_LA_CAP];
    int fid[ML_LA_CAP];
    int n;                    /* complete samples held */
    ml_slot_t *owner;         /* the thread whose collectives are sampled */
    int multi;                /* another thread called a collective on MPI_COMM_WORLD */
    signed char sync[ML_NFUNC]; /* 0 unknown, 1 synchronising, -1 not */
    /* result (ml_la_reduce) */
    int done;                 /* 0: not reduced (a dump); 1: counts; -1: unavailable */
    const char *why;
    int sampled, last, clear, last_clear;
    double gap_s, thr_s;
} LA = {.why = ""};

/* A call's last arrival stands out when the next least-waiting rank waited more than
 * ML_LA_CLEAR x the median least time longer: less than that is within the algorithm's
 * own skew (ranks leave a collective at different steps: in Open MPI's Allreduce on 3
 * balanced ranks, rank 1 waited least in 13-18 of 20 calls, by 2-13 us, calls of 15-100 us) */
#define ML_LA_CLEAR 10.0

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The collectives where every rank waits for the last one to arrive (each rank's
 * result needs every rank's data): the one that waits least arrived last.  Rooted
 * collectives and scans are left out (their ranks leave at different steps), as are
 * non-blocking ones (the time inside the starting call is not a wait). */
static int la_is_sync(int fid)
{
    if (LA.sync[fid]) return LA.sync[fid] > 0;
    static const char *const names[] = {"MPI_Barrier", "MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv",
                                        "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Reduce_scatter",
                                        "MPI_Reduce_scatter_block", NULL};
    int yes = 0;
    for (int i = 0; names[i] && !yes; i++) yes = strcmp(ml_func_name[fid], names[i]) == 0;
    LA.sync[fid] = yes ? 1 : -1; /* the same value from any thread */
    return yes;
}

void ml_la_enter(uint64_t cseq, int fid)
{
    if (fid <= 0 || fid >= ML_NFUNC || !la_is_sync(fid) || LA.multi) return;
    ml_slot_t *me = ml_thr.slot;
    if (LA.owner != me) {
        ml_slot_t *none = NULL;
        if (!__atomic_compare_exchange_n(&LA.owner, &none, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            /* several threads: their own counts of collectives are not the communicator's order */
            LA.multi = 1;
            return;
        }
    }
    if (LA.n == ML_LA_CAP) { /* full: keep every other sampled call, sample half as often */
        uint64_t keep = ml_la_mask + 1; /* the bit that must be 0 from now on */
        int k = 0;
        for (int i = 0; i < LA.n; i++)
            if (!(LA.seq[i] & keep)) {
                LA.seq[k] = LA.seq[i];
                LA.fid[k] = LA.fid[i];
                LA.ticks[k++] = LA.ticks[i];
            }
        LA.n = k;
        ml_la_mask = ml_la_mask << 1 | 1;
        if (cseq & ml_la_mask) return;
    }
    LA.seq[LA.n] = cseq;
    LA.fid[LA.n] = fid;
    uint64_t t = ml_now();
    ml_la_t0 = t ? t : 1;
}

void ml_la_exit(void)
{
    uint64_t t = ml_now();
    LA.ticks[LA.n] = t > ml_la_t0 ? t - ml_la_t0 : 0;
    LA.n++;
    ml_la_t0 = 0;
}

/* per sampled call: the least time inside it, the rank that had it (the lowest on a
 * tie) and the next least time */
typedef struct {
    double t1, t2;
    int r1, pad;
} la_elem_t;

static void la_combine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const la_elem_t *a = in;
    la_elem_t *b = inout;
    for (int i = 0; i < *len; i++) {
        la_elem_t x = a[i], y = b[i];
        if (x.t1 < y.t1 || (x.t1 == y.t1 && x.r1 < y.r1)) {
            b[i].t1 = x.t1;
            b[i].r1 = x.r1;
            b[i].t2 = x.t2 < y.t1 ? x.t2 : y.t1;
        } else {
            b[i].t2 = y.t2 < x.t1 ? y.t2 : x.t1;
        }
    }
}

static uint64_t la_hash(void)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the sampled calls' places and functions */
    for (int i = 0; i < LA.n; i++) {
        h = (h ^ LA.seq[i]) * 1099511628211ull;
        h = (h ^ (uint64_t)LA.fid[i]) * 1099511628211ull;
    }
    return h;
}

static void ml_la_reduce(void)
{
    LA.done = -1;
    if (ml_world_size < 2) {
        LA.why = "one rank";
        return;
    }
    /* every rank must have sampled the same calls: the same count, places and functions */
    long long v[8] = {LA.multi, ml_ever_paused, LA.n, (long long)(la_hash() >> 1), 0, 0, -(long long)LA.n,
                      -(long long)(la_hash() >> 1)};
    long long m[8];
    /* non-blocking and waited for by ml_fin_wait, as the profiler's other end-of-run
     * collectives: a blocking one polls, and with more ranks than cores the polling ranks
     * took the time slices the others needed (docs/scale.md, 256 ranks) */
    MPI_Request req;
    if (PMPI_Iallreduce(v, m, 8, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD, &req) == MPI_SUCCESS)
        ml_fin_wait(&req);
    else {
        LA.why = "the reduction failed";
        return;
    }
    if (m[0]) {
        LA.why = "several threads called collectives on MPI_COMM_WORLD";
        return;
    }
    if (m[1]) {
        LA.why = "recording was paused (MPI_Pcontrol(0)): the calls' places are not known";
        return;
    }
    if (m[2] != -m[6] || m[3] != -m[7]) {
        LA.why = "the ranks sampled different calls (MPILENS_COMMS=0 on some ranks?)";
        return;
    }
    if (!ml_hot.cm_max) { /* the same on every rank here (their counts agreed) */
        LA.why = "MPILENS_COMMS=0: the collectives' places are not counted";
        return;
    }
    LA.done = 1;
    if (!LA.n) return;
    la_elem_t *e = malloc((size_t)LA.n * sizeof *e);
    MPI_Datatype type;
    MPI_Op op;
    if (!e) {
        LA.done = -1;
        LA.why = "out of memory";
        return;
    }
    for (int i = 0; i < LA.n; i++)
        e[i] = (la_elem_t){.t1 = ml_ticks_to_s(LA.ticks[i]), .t2 = 1e300, .r1 = ml_world_rank, .pad = 0};
    int ok = PMPI_Type_contiguous((int)sizeof *e, MPI_BYTE, &type) == MPI_SUCCESS;
    ok = ok && PMPI_Type_commit(&type) == MPI_SUCCESS;
    ok = ok && PMPI_Op_create(la_combine, 1, &op) == MPI_SUCCESS;
    ok = ok && PMPI_Iallreduce(MPI_IN_PLACE, e, LA.n, type, op, MPI_COMM_WORLD, &req) == MPI_SUCCESS;
    if (ok) ml_fin_wait(&req);
    double *t1 = ok ? malloc((size_t)LA.n * sizeof *t1) : NULL;
    if (ok && t1) {
        LA.sampled = LA.n;
        for (int i = 0; i < LA.n; i++)
            t1[i] = e[i].t1;
        qsort(t1, (size_t)LA.n, sizeof *t1, cmp_double);
        double med = LA.n % 2 ? t1[LA.n / 2] : (t1[LA.n / 2 - 1] + t1[LA.n / 2]) / 2;
        LA.thr_s = ML_LA_CLEAR * med;
        for (int i = 0; i < LA.n; i++) {
            double gap = e[i].t2 - e[i].t1;
            int clear = gap > LA.thr_s;
            LA.clear += clear;
            if (e[i].r1 == ml_world_rank) {
                LA.last++;
                LA.last_clear += clear;
                if (clear) LA.gap_s += gap;
            }
        }
        PMPI_Op_free(&op);
        PMPI_Type_free(&type);
    } else {
        LA.done = -1;
        LA.why = ok ? "out of memory" : "the reduction failed";
    }
    free(t1);
    free(e);
}

/* ,"late_arrival":{"sampled":N,"every":K,"clear":M,"threshold_s":T,"last":C,"last_clear":D,"gap_s":G}
 * or {"sampled":0,"why":"..."} */
static void ml_la_rank_json(ml_buf_t *b)
{
    if (!LA.done) return;
    if (LA.done < 0) {
        ml_buf_printf(b, ",\"late_arrival\":{\"sampled\":0,\"why\":");
        ml_buf_json_str(b, LA.why);
        ml_buf_printf(b, "}");
        return;
    }
    ml_buf_printf(b, ",\"late_arrival\":{\"sampled\":%d,\"every\":%llu,\"clear\":%d,\"threshold_s\":%.5g,"
                  "\"last\":%d,\"last_clear\":%d,\"gap_s\":%.8g}",
                  LA.sampled, (unsigned long long)(ml_la_mask + 1), LA.clear, LA.thr_s, LA.last, LA.last_clear,
                  LA.gap_s);
}

/* At MPI_Finalize the reduction (collective, when recording was on); the rank
 * line's "late_arrival" after it. */
const ml_module_t ml_module_late = {
    .name = "late",
    .finalize = ml_la_reduce,
    .rank_where_json = ml_la_rank_json,
};
